package cli

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/meilisearch"
	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
	"github.com/engram-memory/engram/internal/testserver"
)

// `engram serve --keyword-index meilisearch` keeps its keyword index in
// Meilisearch (here the protocol-level test server): memories written
// over the API are found by keyword and hybrid search, only the caller's;
// `projections rebuild keyword` refills an index deleted behind Engram's
// back from the data dir; and while Meilisearch is down, keyword search is
// 503 keyword_index_unavailable, hybrid search degrades to vector and
// /readyz is 503 backend_unavailable.
func TestServeWithMeilisearch(t *testing.T) {
	t.Parallel()
	const apiKey = "e2e-meili-key"
	msrv := meilitest.New(t, meilitest.Options{APIKey: apiKey})
	env := []string{"ENGRAM_MEILISEARCH_API_KEY=" + apiKey}
	args := []string{"--embed-model", "engram-hash-384", "--keyword-index", "meilisearch", "--meilisearch-url", msrv.URL}
	dataDir := t.TempDir()
	p := startServer(t, dataDir, env, args...)
	key := testserver.Register(t, p.BaseURL, dataDir, "meili@example.com")
	otherKey := testserver.Register(t, p.BaseURL, dataDir, "meili-other@example.com")

	create := func(bearer, text string) string {
		t.Helper()
		var created struct {
			ID string `json:"id"`
		}
		if status, err := call(t, "POST", p.BaseURL+"/v1/memories", bearer, map[string]any{"agent_id": "claire", "type": "note",
			"content": map[string]string{"content": text}}, &created); err != nil || status != 201 {
			t.Fatalf("create: %d %v", status, err)
		}
		waitEmbedded(t, p.BaseURL, bearer, created.ID)
		return created.ID
	}
	ids := []string{create(key, "the quarterly budget review moved to thursday"), create(key, "budget for the team offsite")}
	slices.Sort(ids)
	other := create(otherKey, "my budget is secret")
	hasDocuments := func(want bool, ids ...string) bool {
		for _, id := range ids {
			if _, ok := msrv.Document(meilisearch.DefaultIndexName, id); ok != want {
				return false
			}
		}
		return true
	}
	if !hasDocuments(true, append(ids, other)...) {
		t.Fatal("the memories are not documents in Meilisearch")
	}
	search := func(base, mode string) (searchResult, int, error) {
		t.Helper()
		var res searchResult
		status, err := call(t, "POST", base+"/v1/search", key, map[string]any{"agent_id": "claire", "query": "budget", "mode": mode}, &res)
		return res, status, err
	}
	for _, mode := range []string{"keyword", "hybrid"} {
		res, status, err := search(p.BaseURL, mode)
		if err != nil || status != 200 || fmt.Sprint(res.ids()) != fmt.Sprint(ids) || res.Degraded != "" {
			t.Fatalf("%s search: %d %v %+v, want %v (not the other user's %s)", mode, status, err, res, ids, other)
		}
	}
	if status, err := call(t, "GET", p.BaseURL+"/readyz", "", nil, nil); err != nil || status != 200 {
		t.Fatalf("readyz with meilisearch up: %d %v", status, err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	// The index is deleted behind Engram's back; a rebuild refills it.
	req, err := http.NewRequest("DELETE", msrv.URL+"/indexes/"+meilisearch.DefaultIndexName, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delete the index: %v %v", resp, err)
	}
	resp.Body.Close()
	waitUntil(t, func() bool { return hasDocuments(false, append(ids, other)...) })
	rebuild := runCLIWith(t, env, append([]string{"projections", "rebuild", "keyword", "--data-dir", dataDir}, args[2:]...)...)
	if !strings.Contains(rebuild, "rebuilt [keyword]") || !hasDocuments(true, append(ids, other)...) {
		t.Fatalf("rebuild did not refill meilisearch; output:\n%s", rebuild)
	}
	q := startServer(t, dataDir, env, args...)
	if res, status, err := search(q.BaseURL, "keyword"); err != nil || status != 200 || fmt.Sprint(res.ids()) != fmt.Sprint(ids) {
		t.Fatalf("keyword search after rebuild: %d %v %+v, want %v", status, err, res, ids)
	}

	msrv.Close()
	if status, err := call(t, "GET", q.BaseURL+"/readyz", "", nil, nil); status != 503 || !strings.Contains(fmt.Sprint(err), `"code":"backend_unavailable"`) {
		t.Fatalf("readyz with meilisearch down: %d %v, want 503 backend_unavailable", status, err)
	}
	if _, status, err := search(q.BaseURL, "keyword"); status != 503 || !strings.Contains(fmt.Sprint(err), `"code":"keyword_index_unavailable"`) {
		t.Fatalf("keyword search with meilisearch down: %d %v, want 503 keyword_index_unavailable", status, err)
	}
	res, status, err := search(q.BaseURL, "hybrid")
	if err != nil || status != 200 || res.Degraded != "keyword_unavailable" || fmt.Sprint(res.ids()) != fmt.Sprint(ids) {
		t.Fatalf("hybrid search with meilisearch down: %d %v %+v, want the vector hits %v, degraded", status, err, res, ids)
	}
}
