package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/internal/app/searchtest"
)

// searchAuth accepts "Bearer user:<id>" as user <id>.
type searchAuth struct{}

func (searchAuth) Authenticate(_ context.Context, credential string) (domain.Actor, error) {
	user, ok := strings.CutPrefix(credential, "user:")
	if !ok || user == "" {
		return domain.Actor{}, domain.Errorf(domain.KindUnauthorized, "unknown credential")
	}
	return domain.Actor{Kind: domain.ActorKey, ID: "key-" + user, UserID: user}, nil
}

// searchRig is the real search stack behind the HTTP API on loopback.
type searchRig struct {
	t     *testing.T
	stack *searchtest.Env
	srv   *httptest.Server
}

func newSearchRig(t *testing.T) *searchRig {
	st := searchtest.New(t, searchtest.Options{})
	srv := httptest.NewServer(api.New(api.Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: searchAuth{},
		Memories: st.Memories, Search: st.Search,
	}).Handler())
	t.Cleanup(srv.Close)
	return &searchRig{t: t, stack: st, srv: srv}
}

// call posts body as user (no Authorization header when user is "") and
// decodes the envelope.
func (r *searchRig) call(user, path string, body any) (int, map[string]any) {
	r.t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			r.t.Fatal(err)
		}
		raw = string(b)
	}
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/v1"+path, bytes.NewReader([]byte(raw)))
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("Authorization", "Bearer user:"+user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var env map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		r.t.Fatalf("%s: bad JSON: %v", path, err)
	}
	return resp.StatusCode, env
}

func (r *searchRig) note(user, agent, text string, tags ...string) string {
	r.t.Helper()
	code, env := r.call(user, "/memories", map[string]any{"agent_id": agent, "type": "notes", "content": map[string]any{"content": text}, "tags": tags})
	if code != http.StatusCreated {
		r.t.Fatalf("create note: %d %v", code, env)
	}
	return env["data"].(map[string]any)["id"].(string)
}

func (r *searchRig) search(user string, body map[string]any) (int, map[string]any) {
	r.t.Helper()
	return r.call(user, "/search", body)
}

func resultsOf(t *testing.T, env map[string]any) []map[string]any {
	t.Helper()
	data := env["data"].(map[string]any)
	var out []map[string]any
	for _, r := range data["results"].([]any) {
		out = append(out, r.(map[string]any))
	}
	if total := int(data["total"].(float64)); total != len(out) {
		t.Fatalf("total %d but %d results", total, len(out))
	}
	return out
}

func TestSearchHTTPDefaultsAndShape(t *testing.T) {
	t.Parallel()
	r := newSearchRig(t)
	var first string
	for i := range 12 {
		id := r.note("u1", "claire", fmt.Sprintf("retro meeting notes %d", i), "team")
		if i == 0 {
			first = id
		}
	}
	for _, mode := range []string{"", "hybrid", "vector", "keyword"} {
		body := map[string]any{"agent_id": "claire", "query": "retro meeting"}
		if mode != "" {
			body["mode"] = mode
		}
		code, env := r.search("u1", body)
		if code != http.StatusOK || env["success"] != true {
			t.Fatalf("%q: %d %v", mode, code, env)
		}
		data := env["data"].(map[string]any)
		if qt, ok := data["query_time_ms"].(float64); !ok || qt != float64(int64(qt)) || qt < 0 {
			t.Fatalf("query_time_ms %v is not a non-negative integer", data["query_time_ms"])
		}
		// query_time_us is the same time in microseconds: ms is it rounded down.
		if us, ok := data["query_time_us"].(float64); !ok || us != float64(int64(us)) || us < 0 ||
			int64(us)/1000 != int64(data["query_time_ms"].(float64)) {
			t.Fatalf("query_time_us %v does not match query_time_ms %v", data["query_time_us"], data["query_time_ms"])
		}
		if _, ok := data["degraded"]; ok {
			t.Fatalf("degraded present without a failure: %v", data)
		}
		res := resultsOf(t, env)
		if len(res) != 10 {
			t.Fatalf("%q: default limit gave %d results", mode, len(res))
		}
		for _, x := range res {
			if len(x) != 7 || x["type"] != "note" || x["strength"].(float64) < 0.99 || x["forgotten"] != false || x["id"] == "" {
				t.Fatalf("result shape: %v", x)
			}
			if _, ok := x["content"].(map[string]any)["content"].(string); !ok {
				t.Fatalf("content is not the note object: %v", x["content"])
			}
			if _, err := time.Parse(time.RFC3339, x["created_at"].(string)); err != nil {
				t.Fatalf("created_at: %v", err)
			}
			if s := x["score"].(float64); s < 0 || s > 1 {
				t.Fatalf("score %v", s)
			}
		}
	}
	code, env := r.search("u1", map[string]any{"agent_id": "claire", "query": "retro meeting notes 0", "limit": 100, "explain": true, "mode": "hybrid"})
	if code != http.StatusOK {
		t.Fatalf("%d %v", code, env)
	}
	res := resultsOf(t, env)
	if len(res) != 12 || res[0]["id"] != first {
		t.Fatalf("limit 100 gave %d results, first %v (want %s)", len(res), res[0]["id"], first)
	}
	ex, ok := res[0]["explain"].(map[string]any)
	if !ok {
		t.Fatalf("no explain: %v", res[0])
	}
	for _, k := range []string{"vector_score", "keyword_score", "fused_score", "vector_rank", "keyword_rank"} {
		if _, ok := ex[k]; !ok {
			t.Fatalf("explain lacks %s: %v", k, ex)
		}
	}
	if ex["fused_score"] != res[0]["score"] {
		t.Fatalf("fused_score %v != score %v", ex["fused_score"], res[0]["score"])
	}
}

func TestSearchHTTPValidationAndAccess(t *testing.T) {
	t.Parallel()
	r := newSearchRig(t)
	r.note("u1", "claire", "alpha")
	r.note("u2", "bob", "alpha")
	cases := []struct {
		name  string
		user  string
		body  any
		code  int
		field string
	}{
		{"limit 0", "u1", map[string]any{"agent_id": "claire", "query": "a", "limit": 0}, 400, "limit"},
		{"limit 101", "u1", map[string]any{"agent_id": "claire", "query": "a", "limit": 101}, 400, "limit"},
		{"limit string", "u1", `{"agent_id":"claire","query":"a","limit":"5"}`, 400, "limit"},
		{"limit fraction", "u1", `{"agent_id":"claire","query":"a","limit":2.5}`, 400, "limit"},
		{"no query", "u1", map[string]any{"agent_id": "claire"}, 400, "query"},
		{"empty query", "u1", map[string]any{"agent_id": "claire", "query": ""}, 400, "query"},
		{"long query", "u1", map[string]any{"agent_id": "claire", "query": strings.Repeat("x", 32001)}, 400, "query"},
		{"no agent", "u1", map[string]any{"query": "a"}, 400, "agent_id"},
		{"bad agent id", "u1", map[string]any{"agent_id": "a/b", "query": "a"}, 400, "agent_id"},
		{"mode", "u1", map[string]any{"agent_id": "claire", "query": "a", "mode": "fuzzy"}, 400, "mode"},
		{"min_score", "u1", map[string]any{"agent_id": "claire", "query": "a", "min_score": 1.01}, 400, "min_score"},
		{"drives", "u1", map[string]any{"agent_id": "claire", "query": "a", "types": []string{"drives"}}, 400, "types"},
		{"unknown type", "u1", map[string]any{"agent_id": "claire", "query": "a", "types": []string{"notez"}}, 400, "types"},
		{"bad time", "u1", map[string]any{"agent_id": "claire", "query": "a", "created_after": "yesterday"}, 400, "created_after"},
		{"empty window", "u1", map[string]any{"agent_id": "claire", "query": "a", "created_after": "2025-01-02T00:00:00Z", "created_before": "2025-01-01T00:00:00Z"}, 400, "created_before"},
		{"bad tag", "u1", map[string]any{"agent_id": "claire", "query": "a", "tags": []string{""}}, 400, "tags"},
		{"unknown field", "u1", map[string]any{"agent_id": "claire", "query": "a", "limt": 5}, 400, "limt"},
		{"no credential", "", map[string]any{"agent_id": "claire", "query": "a"}, 401, ""},
		{"unknown agent", "u1", map[string]any{"agent_id": "nobody", "query": "a"}, 404, ""},
		{"other user's agent", "u1", map[string]any{"agent_id": "bob", "query": "a"}, 404, ""},
	}
	for _, c := range cases {
		code, env := r.call(c.user, "/search", c.body)
		if code != c.code || env["success"] != false {
			t.Fatalf("%s: status %d (want %d): %v", c.name, code, c.code, env)
		}
		e := env["error"].(map[string]any)
		if c.field != "" {
			d, _ := e["details"].(map[string]any)
			if d["field"] != c.field {
				t.Fatalf("%s: error names field %v, want %s: %v", c.name, d["field"], c.field, e)
			}
		}
	}
	for _, limit := range []int{1, 100} {
		if code, env := r.search("u1", map[string]any{"agent_id": "claire", "query": "alpha", "limit": limit}); code != 200 {
			t.Fatalf("limit %d: %d %v", limit, code, env)
		}
	}
}

func TestSearchHTTPTypesSingularAndPlural(t *testing.T) {
	t.Parallel()
	r := newSearchRig(t)
	note := r.note("u1", "a", "the roadmap review")
	code, env := r.call("u1", "/memories", map[string]any{"agent_id": "a", "type": "belief", "content": map[string]any{"statement": "the roadmap is too long"}})
	if code != http.StatusCreated {
		t.Fatalf("%d %v", code, env)
	}
	belief := env["data"].(map[string]any)["id"].(string)
	for types, want := range map[string][]string{
		`["notes"]`:           {note},
		`["note"]`:            {note},
		`["beliefs"]`:         {belief},
		`["belief", "notes"]`: {note, belief},
		`[]`:                  {note, belief},
	} {
		body := fmt.Sprintf(`{"agent_id":"a","query":"roadmap","mode":"keyword","types":%s}`, types)
		code, env := r.call("u1", "/search", body)
		if code != 200 {
			t.Fatalf("%s: %d %v", types, code, env)
		}
		var got []string
		for _, x := range resultsOf(t, env) {
			got = append(got, x["id"].(string))
			if x["type"] != "note" && x["type"] != "belief" {
				t.Fatalf("type %v is not singular", x["type"])
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s: got %v, want %v", types, got, want)
		}
	}
}

func TestSearchHTTPReadYourWritesAndProviderDown(t *testing.T) {
	t.Parallel()
	r := newSearchRig(t)
	for i := range 5 {
		id := r.note("u1", "a", fmt.Sprintf("capybara sighting %d", i))
		for _, mode := range []string{"hybrid", "vector", "keyword"} {
			_, env := r.search("u1", map[string]any{"agent_id": "a", "query": fmt.Sprintf("capybara sighting %d", i), "mode": mode, "limit": 1})
			if res := resultsOf(t, env); len(res) != 1 || res[0]["id"] != id {
				t.Fatalf("%s: a memory written just before is not found: %v", mode, res)
			}
		}
	}
	r.stack.Provider.SetDown(true)
	code, env := r.search("u1", map[string]any{"agent_id": "a", "query": "capybara", "mode": "vector"})
	if code != http.StatusServiceUnavailable || env["error"].(map[string]any)["code"] != "provider_unavailable" {
		t.Fatalf("vector mode with the provider down: %d %v", code, env)
	}
	code, env = r.search("u1", map[string]any{"agent_id": "a", "query": "capybara"})
	if code != 200 || env["data"].(map[string]any)["degraded"] != "vector_unavailable" || len(resultsOf(t, env)) != 5 {
		t.Fatalf("hybrid with the provider down: %d %v", code, env)
	}
}
