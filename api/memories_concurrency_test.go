package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/engram-memory/engram/domain/memory"
)

// requestIfMatch is request with an If-Match header (empty: none).
func (s *stack) requestIfMatch(t testing.TB, method, path, bearer, ifMatch string, body any) response {
	t.Helper()
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	return s.sendAs(t, req)
}

func TestMemETagAndIfMatch(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, key := s.user(t, "etag@example.com")
	_, other := s.user(t, "etag-other@example.com")
	c := s.create(t, key, "a", "belief", map[string]any{"statement": "the sky is blue"})
	path := "/v1/memories/" + c.ID

	got := s.request(t, "GET", path, key, nil).must(t, http.StatusOK, nil)
	if etag := got.header.Get("ETag"); etag != `"1"` || num(got.data()["version"]) != 1 {
		t.Fatalf("new memory: ETag %q, version %v; want \"1\" and 1", etag, got.data()["version"])
	}

	// A conditional GET of the current version is 304 without a body.
	for _, tc := range []struct {
		ifNoneMatch string
		status      int
	}{{`"1"`, 304}, {`W/"1"`, 304}, {`"0", "1"`, 304}, {`*`, 304}, {`"2"`, 200}} {
		req, _ := http.NewRequest("GET", s.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("If-None-Match", tc.ifNoneMatch)
		res, err := s.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || res.Header.Get("ETag") != `"1"` || (tc.status == 304 && len(body) != 0) {
			t.Errorf("If-None-Match %s: %d, ETag %q, %d body bytes; want %d", tc.ifNoneMatch, res.StatusCode, res.Header.Get("ETag"), len(body), tc.status)
		}
	}

	patch := map[string]any{"content": map[string]any{"statement": "the sky is grey"}}
	r := s.requestIfMatch(t, "PATCH", path, key, `"1"`, patch).must(t, http.StatusOK, nil)
	if r.header.Get("ETag") != `"2"` || num(r.data()["version"]) != 2 {
		t.Fatalf("patch at the current version: ETag %q, data %v", r.header.Get("ETag"), r.data())
	}

	for _, tc := range []struct {
		name, method, path, ifMatch string
		body                        any
		status                      int
		code                        string
	}{
		{"stale PATCH", "PATCH", path, `"1"`, map[string]any{"content": map[string]any{"statement": "lost update"}}, 412, "precondition_failed"},
		{"stale forget", "DELETE", path, `"1"`, nil, 412, "precondition_failed"},
		{"stale purge", "DELETE", path + "?purge=true", `"1"`, nil, 412, "precondition_failed"},
		{"weak tag never matches", "PATCH", path, `W/"2"`, map[string]any{"tags": []string{"x"}}, 412, "precondition_failed"},
		{"a tag of another form", "PATCH", path, `"abc"`, map[string]any{"tags": []string{"x"}}, 412, "precondition_failed"},
		{"unquoted tag", "PATCH", path, `2`, map[string]any{"tags": []string{"x"}}, 400, "invalid_request"},
		{"other user's memory", "PATCH", path, `"2"`, map[string]any{"tags": []string{"x"}}, 404, "not_found"},
		{"other user's forget", "DELETE", path, `"2"`, nil, 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bearer := key
			if strings.HasPrefix(tc.name, "other user") {
				bearer = other
			}
			wantError(t, s.requestIfMatch(t, tc.method, tc.path, bearer, tc.ifMatch, tc.body), tc.status, tc.code)
		})
	}
	// Nothing above changed the memory.
	v := s.get(t, key, c.ID)
	if v.Version != 2 || v.Forgotten || len(v.Tags) != 0 || !strings.Contains(string(v.Content), "grey") {
		t.Fatalf("a refused request changed the memory: %+v %s", v, v.Content)
	}
	stale := s.requestIfMatch(t, "PATCH", path, key, `"1"`, patch)
	if d := stale.details(); d["etag"] != `"2"` {
		t.Errorf("412 details = %v, want the current etag", d)
	}

	// A list matches if any tag does; "*" matches any version.
	s.requestIfMatch(t, "PATCH", path, key, `"7", "2"`, map[string]any{"tags": []string{"x"}}).must(t, http.StatusOK, nil)
	r = s.requestIfMatch(t, "DELETE", path, key, `"3"`, nil).must(t, http.StatusOK, nil)
	if r.header.Get("ETag") != `"4"` || r.data()["forgotten"] != true {
		t.Errorf("forget at the current version: ETag %q, data %v", r.header.Get("ETag"), r.data())
	}
	s.requestIfMatch(t, "DELETE", path+"?purge=true", key, `*`, nil).must(t, http.StatusOK, nil)
	s.request(t, "GET", path, key, nil).must(t, http.StatusNotFound, nil)
}

// TestMemConcurrentPatchesOfDistinctFields sends 50 PATCHes at once, each
// changing one field of one of five episodes of an agent: every change
// must survive, in the read model and in the keyword index.
func TestMemConcurrentPatchesOfDistinctFields(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "fields@example.com")
	var ids []string
	for i := range 5 {
		ids = append(ids, s.create(t, key, "a", "episode", map[string]any{"objective": fmt.Sprint("objective ", i), "outcome": "outcome"}).ID)
	}
	fields := map[string]func(i int) any{
		"objective":         func(i int) any { return fmt.Sprintf("zebra%d objective", i) },
		"outcome":           func(i int) any { return fmt.Sprintf("giraffe%d outcome", i) },
		"outcome_type":      func(int) any { return "partial" },
		"lessons":           func(i int) any { return []string{fmt.Sprintf("okapi%d lesson", i)} },
		"emotional_valence": func(int) any { return -0.5 },
		"emotional_arousal": func(int) any { return 0.25 },
		"confidence":        func(int) any { return 0.3 },
		"strength":          func(int) any { return 0.4 },
		"is_protected":      func(int) any { return true },
		"source_type":       func(int) any { return "inference" },
	}
	var wg sync.WaitGroup
	errs := make(chan string, 50)
	for i, id := range ids {
		for field, value := range fields {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := s.request(t, "PATCH", "/v1/memories/"+id, key, map[string]any{"content": map[string]any{field: value(i)}})
				if r.status != http.StatusOK {
					errs <- fmt.Sprintf("%s of %s: %d %s", field, id, r.status, r.raw)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for i, id := range ids {
		v := s.get(t, key, id)
		var got map[string]any
		if err := json.Unmarshal(v.Content, &got); err != nil {
			t.Fatal(err)
		}
		for field, value := range fields {
			want, _ := json.Marshal(value(i))
			have, _ := json.Marshal(got[field])
			if string(want) != string(have) {
				t.Errorf("episode %d: %s = %s, want %s (a concurrent patch lost it)", i, field, have, want)
			}
		}
		if v.Version != 1+int64(len(fields)) {
			t.Errorf("episode %d at version %d, want %d", i, v.Version, 1+len(fields))
		}
		// The keyword index applied the same field changes.
		for _, word := range []string{fmt.Sprint("zebra", i), fmt.Sprint("giraffe", i), fmt.Sprint("okapi", i)} {
			var res struct {
				Results []struct{ ID string } `json:"results"`
			}
			// strength 0.4 makes the episode weak, which search hides by default.
			s.request(t, "POST", "/v1/search", key, map[string]any{"agent_id": "a", "query": word, "mode": "keyword", "include_weak": true}).must(t, http.StatusOK, &res)
			if len(res.Results) != 1 || res.Results[0].ID != id {
				t.Errorf("keyword search for %s found %+v, want episode %d", word, res.Results, i)
			}
		}
	}
}

// TestMemConcurrentPatchesOfOneField: the last patch in log order wins,
// and the ETag counts every patch.
func TestMemConcurrentPatchesOfOneField(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, key := s.user(t, "samefield@example.com")
	c := s.create(t, key, "a", "belief", map[string]any{"statement": "start"})
	const writers = 20
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.request(t, "PATCH", "/v1/memories/"+c.ID, key, map[string]any{"content": map[string]any{"statement": fmt.Sprint("statement ", i)}}).
				must(t, http.StatusOK, nil)
		}()
	}
	wg.Wait()
	var last string
	var patches int
	all, err := s.store.ReadAll(context.Background(), 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.Type != (memory.MemoryPatched{}).EventType() {
			continue
		}
		var p memory.MemoryPatched
		if err := e.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.MemoryID == c.ID {
			patches++
			if err := json.Unmarshal(p.Content["statement"], &last); err != nil {
				t.Fatalf("patch event without the statement: %s", e.Payload)
			}
			if len(p.Content) != 1 || p.Tags != nil {
				t.Errorf("patch event records more than the changed field: %s", e.Payload)
			}
		}
	}
	v := s.get(t, key, c.ID)
	var got struct{ Statement string }
	json.Unmarshal(v.Content, &got)
	if patches != writers || got.Statement != last {
		t.Errorf("%d patch events; statement %q, want the last in log order %q", patches, got.Statement, last)
	}
	if v.Version != writers+1 {
		t.Errorf("version %d after %d patches, want %d", v.Version, writers, writers+1)
	}
}
