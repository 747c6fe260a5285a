package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/qdrant/qdranttest"
	"github.com/engram-memory/engram/internal/testserver"
)

// `engram serve --vector-index qdrant` keeps its vectors in Qdrant (here
// the protocol-level test server): memories written over the API are found
// by vector and hybrid search; `projections rebuild` refills an emptied
// Qdrant from the data dir alone (the command holds no embedding
// provider); and while Qdrant is down, vector search is 503
// vector_index_unavailable, hybrid search degrades to keyword and /readyz
// is 503 backend_unavailable.
func TestServeWithQdrant(t *testing.T) {
	t.Parallel()
	const apiKey = "e2e-qdrant-key"
	qsrv := qdranttest.Start(t, apiKey)
	env := []string{"ENGRAM_QDRANT_API_KEY=" + apiKey}
	indexArgs := []string{"--vector-index", "qdrant", "--qdrant-url", "http://" + qsrv.Addr}
	dataDir := t.TempDir()
	p := startServer(t, dataDir, env, append([]string{"--embed-model", "engram-hash-384"}, indexArgs...)...)
	key := testserver.Register(t, p.BaseURL, dataDir, "qdrant@example.com")

	var ids []string
	for _, text := range []string{"the quarterly budget review moved to thursday", "budget for the team offsite"} {
		var created struct {
			ID string `json:"id"`
		}
		if status, err := call(t, "POST", p.BaseURL+"/v1/memories", key, map[string]any{"agent_id": "claire", "type": "note",
			"content": map[string]string{"content": text}}, &created); err != nil || status != 201 {
			t.Fatalf("create: %d %v", status, err)
		}
		waitEmbedded(t, p.BaseURL, key, created.ID)
		ids = append(ids, created.ID)
	}
	slices.Sort(ids)
	if got := qsrv.Collections(); len(got) != 1 || !strings.HasPrefix(got[0], "engram_engram-hash-384_384") {
		t.Fatalf("qdrant collections = %v, want the agent's space", got)
	}
	search := func(base, mode string) (searchResult, int, error) {
		t.Helper()
		var res searchResult
		status, err := call(t, "POST", base+"/v1/search", key, map[string]any{"agent_id": "claire", "query": "budget", "mode": mode}, &res)
		return res, status, err
	}
	for _, mode := range []string{"vector", "hybrid"} {
		res, status, err := search(p.BaseURL, mode)
		if err != nil || status != 200 || fmt.Sprint(res.ids()) != fmt.Sprint(ids) || res.Degraded != "" {
			t.Fatalf("%s search: %d %v %+v, want %v", mode, status, err, res, ids)
		}
	}
	if status, err := call(t, "GET", p.BaseURL+"/readyz", "", nil, nil); err != nil || status != 200 {
		t.Fatalf("readyz with qdrant up: %d %v", status, err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	// Qdrant loses everything; a rebuild refills it from the data dir.
	qsrv.Stop()
	qsrv = qdranttest.StartOn(t, qsrv.Addr, apiKey)
	rebuild := runCLIWith(t, env, append([]string{"projections", "rebuild", "vectors", "--data-dir", dataDir}, indexArgs...)...)
	if !strings.Contains(rebuild, "rebuilt [vectors]") {
		t.Fatalf("rebuild output:\n%s", rebuild)
	}
	if got := qsrv.Collections(); len(got) != 1 {
		t.Fatalf("qdrant collections after rebuild = %v, want the agent's space", got)
	}
	q := startServer(t, dataDir, env, append([]string{"--embed-model", "engram-hash-384"}, indexArgs...)...)
	if res, status, err := search(q.BaseURL, "vector"); err != nil || status != 200 || fmt.Sprint(res.ids()) != fmt.Sprint(ids) {
		t.Fatalf("vector search after rebuild: %d %v %+v, want %v", status, err, res, ids)
	}

	qsrv.Stop()
	if status, err := call(t, "GET", q.BaseURL+"/readyz", "", nil, nil); status != 503 || !strings.Contains(fmt.Sprint(err), `"code":"backend_unavailable"`) {
		t.Fatalf("readyz with qdrant down: %d %v, want 503 backend_unavailable", status, err)
	}
	if _, status, err := search(q.BaseURL, "vector"); status != 503 || !strings.Contains(fmt.Sprint(err), `"code":"vector_index_unavailable"`) {
		t.Fatalf("vector search with qdrant down: %d %v, want 503 vector_index_unavailable", status, err)
	}
	res, status, err := search(q.BaseURL, "hybrid")
	if err != nil || status != 200 || res.Degraded != "vector_unavailable" || fmt.Sprint(res.ids()) != fmt.Sprint(ids) {
		t.Fatalf("hybrid search with qdrant down: %d %v %+v, want the keyword hits %v, degraded", status, err, res, ids)
	}
}
