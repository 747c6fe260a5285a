package meilitest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
)

const key = "k-secret"

// call sends a request with the test key and decodes the JSON answer.
func call(t *testing.T, srv *meilitest.Server, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: decode: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// waitTask polls the task until it is finished and returns it.
func waitTask(t *testing.T, srv *meilitest.Server, enqueued map[string]any) map[string]any {
	t.Helper()
	uid := int(enqueued["taskUid"].(float64))
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		_, task := call(t, srv, "GET", "/tasks/"+strconv.Itoa(uid), nil)
		if s := task["status"]; s != "enqueued" && s != "processing" {
			return task
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("task %d never finished", uid)
	return nil
}

// setup creates index "docs" with filterable user, n, tags and adds docs.
func setup(t *testing.T, srv *meilitest.Server, docs ...map[string]any) {
	t.Helper()
	_, task := call(t, srv, "PATCH", "/indexes/docs/settings", map[string]any{
		"filterableAttributes": []string{"user", "n", "tags", "ok"},
		"searchableAttributes": []string{"title", "body"},
		"rankingRules":         []string{"words", "typo", "proximity", "attribute", "sort", "exactness", "n:desc"},
	})
	if got := waitTask(t, srv, task); got["status"] != "succeeded" {
		t.Fatalf("settings task: %v", got)
	}
	_, task = call(t, srv, "POST", "/indexes/docs/documents?primaryKey=id", docs)
	if got := waitTask(t, srv, task); got["status"] != "succeeded" {
		t.Fatalf("add task: %v", got)
	}
}

func TestTasksCompleteLater(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{APIKey: key, TaskDelay: 500 * time.Millisecond})
	status, task := call(t, srv, "POST", "/indexes/docs/documents?primaryKey=id", []map[string]any{{"id": "a", "title": "hello"}})
	if status != http.StatusAccepted || task["status"] != "enqueued" || task["type"] != "documentAdditionOrUpdate" {
		t.Fatalf("enqueue answered %d %v, want 202 enqueued documentAdditionOrUpdate", status, task)
	}
	if _, ok := srv.Document("docs", "a"); ok {
		t.Fatal("document visible before its task ran")
	}
	_, polled := call(t, srv, "GET", "/tasks/"+strconv.Itoa(int(task["taskUid"].(float64))), nil)
	if polled["status"] != "enqueued" {
		t.Fatalf("task right after enqueue: %v, want enqueued", polled["status"])
	}
	seen := map[string]bool{}
	var done map[string]any
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		// The document is looked at first: if it is visible, the task
		// must already say succeeded.
		_, visible := srv.Document("docs", "a")
		_, done = call(t, srv, "GET", "/tasks/"+strconv.Itoa(int(task["taskUid"].(float64))), nil)
		status := done["status"].(string)
		seen[status] = true
		if visible && status != "succeeded" {
			t.Fatalf("document visible while its task is %s", status)
		}
		if status != "enqueued" && status != "processing" {
			break
		}
	}
	if done["status"] != "succeeded" || done["finishedAt"] == nil || done["startedAt"] == nil || !seen["processing"] {
		t.Fatalf("finished task: %v (statuses seen %v), want succeeded after processing", done, seen)
	}
	if _, ok := srv.Document("docs", "a"); !ok {
		t.Fatal("document missing after its task succeeded")
	}
}

func TestHeldTasksStayEnqueued(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{APIKey: key, TaskDelay: time.Millisecond})
	srv.HoldTasks(true)
	_, task := call(t, srv, "DELETE", "/indexes/docs/documents", nil)
	time.Sleep(30 * time.Millisecond)
	_, polled := call(t, srv, "GET", "/tasks/"+strconv.Itoa(int(task["taskUid"].(float64))), nil)
	if polled["status"] != "enqueued" {
		t.Fatalf("held task: %v", polled["status"])
	}
	srv.HoldTasks(false)
	if done := waitTask(t, srv, task); done["status"] != "failed" || done["error"].(map[string]any)["code"] != "index_not_found" {
		t.Fatalf("deleting the documents of an absent index: %v, want failed index_not_found", done)
	}
}

func TestAuthAndErrorShape(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{APIKey: key})
	for _, c := range []struct {
		name, header string
		status       int
		code         string
	}{
		{"no header", "", http.StatusUnauthorized, "missing_authorization_header"},
		{"wrong key", "Bearer nope", http.StatusForbidden, "invalid_api_key"},
		{"not bearer", key, http.StatusForbidden, "invalid_api_key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", srv.URL+"/tasks/0", nil)
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e map[string]string
			_ = json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != c.status || e["code"] != c.code || e["type"] != "auth" || e["message"] == "" || e["link"] != "https://docs.meilisearch.com/errors#"+c.code {
				t.Fatalf("got %d %v, want %d %s in Meilisearch's error shape", resp.StatusCode, e, c.status, c.code)
			}
		})
	}
	resp, err := http.Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health without a key: %d, want 200", resp.StatusCode)
	}
}

func TestFilters(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{APIKey: key})
	setup(t, srv,
		map[string]any{"id": "a", "user": "u1", "n": 1, "tags": []string{"x", "y"}, "ok": true, "title": "apple"},
		map[string]any{"id": "b", "user": "u1", "n": 2, "tags": []string{"x"}, "ok": false, "title": "apple"},
		map[string]any{"id": "c", "user": `u"2\`, "n": 3, "tags": []string{}, "ok": true, "title": "apple"},
	)
	for _, c := range []struct {
		filter string
		want   []string
	}{
		{`user = "u1"`, []string{"a", "b"}},
		{`user = "u\"2\\"`, []string{"c"}},
		{`user != "u1"`, []string{"c"}},
		{`tags = "x" AND tags = "y"`, []string{"a"}},
		{`tags = x`, []string{"a", "b"}},
		{`n >= 2`, []string{"b", "c"}},
		{`n < 2 OR n > 2`, []string{"a", "c"}},
		{`n IN [1, 3]`, []string{"a", "c"}},
		{`ok = false`, []string{"b"}},
		{`NOT (user = "u1" AND ok = true)`, []string{"b", "c"}},
	} {
		t.Run(c.filter, func(t *testing.T) {
			status, res := call(t, srv, "POST", "/indexes/docs/search", map[string]any{"q": "apple", "filter": c.filter})
			if status != http.StatusOK {
				t.Fatalf("status %d: %v", status, res)
			}
			var got []string
			for _, h := range res["hits"].([]any) {
				got = append(got, h.(map[string]any)["id"].(string))
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	for _, c := range []struct{ filter, code string }{
		{`title = "apple"`, "invalid_search_filter"}, // not filterable
		{`user = `, "invalid_search_filter"},
		{`(user = "u1"`, "invalid_search_filter"},
		{`user ~ "u1"`, "invalid_search_filter"},
	} {
		status, res := call(t, srv, "POST", "/indexes/docs/search", map[string]any{"q": "apple", "filter": c.filter})
		if status != http.StatusBadRequest || res["code"] != c.code {
			t.Errorf("filter %q: %d %v, want 400 %s", c.filter, status, res, c.code)
		}
	}
}

func TestSearchSemantics(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{APIKey: key})
	setup(t, srv,
		map[string]any{"id": "both", "n": 1, "title": "red kite", "body": ""},
		map[string]any{"id": "red", "n": 2, "title": "red barn", "body": ""},
		map[string]any{"id": "kite", "n": 3, "title": "kite festival", "body": ""},
		map[string]any{"id": "body", "n": 4, "title": "", "body": "red kite"},
		map[string]any{"id": "other", "n": 5, "title": "nothing", "body": "", "secret": "red"},
	)
	search := func(body map[string]any) []map[string]any {
		t.Helper()
		status, res := call(t, srv, "POST", "/indexes/docs/search", body)
		if status != http.StatusOK {
			t.Fatalf("search %v: %d %v", body, status, res)
		}
		var hits []map[string]any
		for _, h := range res["hits"].([]any) {
			hits = append(hits, h.(map[string]any))
		}
		return hits
	}
	idsOf := func(hits []map[string]any) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h["id"].(string))
		}
		return out
	}
	// "last" drops words from the end: documents with only "kite" are not
	// found; a match in the first searchable attribute ranks higher; an
	// unsearchable attribute is never searched.
	if got := idsOf(search(map[string]any{"q": "red kite"})); !slices.Equal(got, []string{"both", "body", "red"}) {
		t.Fatalf(`"red kite" (last): %v, want [both body red]`, got)
	}
	if got := idsOf(search(map[string]any{"q": "red kite", "matchingStrategy": "all"})); !slices.Equal(got, []string{"both", "body"}) {
		t.Fatalf(`"red kite" (all): %v`, got)
	}
	if got := idsOf(search(map[string]any{"q": "kite -red"})); !slices.Equal(got, []string{"kite"}) {
		t.Fatalf(`"kite -red": %v, want [kite]`, got)
	}
	hits := search(map[string]any{"q": "red kite", "showRankingScore": true, "rankingScoreThreshold": 0.95, "attributesToRetrieve": []string{"id"}})
	if len(hits) != 1 || hits[0]["id"] != "both" || hits[0]["_rankingScore"].(float64) < 0.95 || hits[0]["title"] != nil {
		t.Fatalf("threshold 0.95 with attributesToRetrieve [id]: %v", hits)
	}
	for _, h := range search(map[string]any{"q": "red", "showRankingScore": true}) {
		if s := h["_rankingScore"].(float64); s <= 0 || s > 1 {
			t.Fatalf("score %v outside (0, 1]", s)
		}
	}
	// Ties follow the custom rule n:desc.
	if got := idsOf(search(map[string]any{"q": "red", "matchingStrategy": "all"})); !slices.Equal(got, []string{"red", "both", "body"}) {
		t.Fatalf(`"red": %v, want [red both body] (title first, then n desc)`, got)
	}
	status, res := call(t, srv, "POST", "/multi-search", map[string]any{"queries": []map[string]any{
		{"indexUid": "docs", "q": "festival"}, {"indexUid": "docs", "q": "barn"},
	}})
	results, _ := res["results"].([]any)
	if status != http.StatusOK || len(results) != 2 {
		t.Fatalf("multi-search: %d %v", status, res)
	}
	if status, res := call(t, srv, "POST", "/indexes/absent/search", map[string]any{"q": "x"}); status != http.StatusNotFound || res["code"] != "index_not_found" {
		t.Fatalf("search of an absent index: %d %v", status, res)
	}
}

func TestDocumentsRoutes(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{APIKey: key})
	setup(t, srv, map[string]any{"id": "a", "user": "u1", "title": "one"}, map[string]any{"id": "b", "user": "u2", "title": "two"})
	_, task := call(t, srv, "PUT", "/indexes/docs/documents?primaryKey=id", []map[string]any{{"id": "a", "ok": true}})
	waitTask(t, srv, task)
	status, d := call(t, srv, "GET", "/indexes/docs/documents/a?fields=title,ok", nil)
	if status != http.StatusOK || d["title"] != "one" || d["ok"] != true || d["user"] != nil {
		t.Fatalf("partial update then get with fields: %d %v", status, d)
	}
	if status, res := call(t, srv, "GET", "/indexes/docs/documents/zz", nil); status != http.StatusNotFound || res["code"] != "document_not_found" {
		t.Fatalf("absent document: %d %v", status, res)
	}
	_, task = call(t, srv, "POST", "/indexes/docs/documents/delete", map[string]any{"filter": `user = "u1"`})
	if done := waitTask(t, srv, task); done["status"] != "succeeded" {
		t.Fatalf("delete by filter: %v", done)
	}
	if _, ok := srv.Document("docs", "a"); ok {
		t.Fatal("a survived delete by filter")
	}
	if _, ok := srv.Document("docs", "b"); !ok {
		t.Fatal("b deleted by a filter that does not match it")
	}
	_, task = call(t, srv, "POST", "/indexes/docs/documents?primaryKey=id", []map[string]any{{"id": "ok-1"}, {"id": "bad/id"}})
	done := waitTask(t, srv, task)
	if done["status"] != "failed" || done["error"].(map[string]any)["code"] != "invalid_document_id" {
		t.Fatalf("invalid id: %v", done)
	}
	if _, ok := srv.Document("docs", "ok-1"); ok {
		t.Fatal("a failed task stored part of its batch")
	}
	_, task = call(t, srv, "POST", "/indexes", map[string]any{"uid": "docs", "primaryKey": "id"})
	if done := waitTask(t, srv, task); done["error"].(map[string]any)["code"] != "index_already_exists" {
		t.Fatalf("creating an existing index: %v", done)
	}
}
