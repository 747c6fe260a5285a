package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
	"github.com/engram-memory/engram/infra/qdrant/qdranttest"
	"github.com/engram-memory/engram/internal/app"
)

// A search index on a server of its own (Meilisearch for keywords, Qdrant
// for vectors) that goes down makes the searches that need it 503
// <side>_index_unavailable, on REST (POST /search, POST
// /embeddings/similar) and MCP alike, while hybrid search answers from
// the other side and says so; the memories themselves are not touched.
// Both servers are the in-process ones that speak their real protocols
// (infra/meilisearch/meilitest, infra/qdrant/qdranttest).
func TestSearchWithAnIndexDownSaysWhich(t *testing.T) {
	t.Parallel()
	const indexKey = "index-test-key"
	meili := meilitest.New(t, meilitest.Options{APIKey: indexKey})
	qdrant := qdranttest.Start(t, indexKey)
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, indexes: app.Indexes{
		Keyword: app.Meilisearch, MeilisearchURL: meili.URL, MeilisearchAPIKey: indexKey,
		Vector: app.Qdrant, QdrantURL: "http://" + qdrant.Addr, QdrantAPIKey: indexKey,
	}})
	note := s.create(t, aliceKey, "a1", "note", map[string]any{"content": "the harbour lighthouse keeper logs every ship"})
	const query = "harbour lighthouse keeper"
	vector := s.vectorOf("default", query)
	similar := func() response {
		return s.call("POST", "/v1/embeddings/similar", aliceKey, map[string]any{"agent_id": "a1", "embedding": vector})
	}
	cs := s.mcpClient(t, aliceKey, "", "2025-11-25")
	schemas := toolSchemas(t, cs)
	mcpSearch := func(mode string) toolCall {
		return callTool(t, cs, schemas, "search_memories", map[string]any{"agent_id": "a1", "query": query, "mode": mode})
	}
	found := func(what string, r response) {
		t.Helper()
		if ids := resultIDs(expect(t, r, http.StatusOK)); len(ids) != 1 || ids[0] != note.ID {
			t.Errorf("%s: found %v, want the note %s", what, ids, note.ID)
		}
	}
	for _, mode := range []string{"keyword", "vector", "hybrid"} {
		found(mode+" search with both indexes up", s.searchFor(t, query, mode))
	}

	meili.Close()
	ready := s.call("GET", "/readyz", "", nil)
	wantError(t, ready, http.StatusServiceUnavailable, "backend_unavailable")
	backends, _ := ready.details()["backends"].(map[string]any)
	keywordState, _ := backends["keyword_index"].(map[string]any)
	vectorState, _ := backends["vector_index"].(map[string]any)
	if keywordState["status"] != "unavailable" || vectorState["status"] != "ok" {
		t.Errorf("/readyz with Meilisearch down: backends %v, want keyword_index unavailable and vector_index ok", backends)
	}
	down := s.searchFor(t, query, "keyword")
	wantError(t, down, http.StatusServiceUnavailable, "keyword_index_unavailable")
	if !strings.Contains(down.errorMessage(), "keyword search index is unavailable") {
		t.Errorf("keyword search with Meilisearch down: message %q", down.errorMessage())
	}
	mcpSearch("keyword").fails(t, "keyword_index_unavailable", "")
	hybrid := s.searchFor(t, query, "hybrid")
	found("hybrid search with Meilisearch down", hybrid)
	if got := hybrid.str("degraded"); got != "keyword_unavailable" {
		t.Errorf("hybrid search with Meilisearch down: degraded %q, want keyword_unavailable", got)
	}
	found("vector search with Meilisearch down", s.searchFor(t, query, "vector"))
	expect(t, similar(), http.StatusOK)

	qdrant.Stop()
	down = s.searchFor(t, query, "vector")
	wantError(t, down, http.StatusServiceUnavailable, "vector_index_unavailable")
	if !strings.Contains(down.errorMessage(), "vector search index is unavailable") {
		t.Errorf("vector search with Qdrant down: message %q", down.errorMessage())
	}
	wantError(t, similar(), http.StatusServiceUnavailable, "vector_index_unavailable")
	mcpSearch("vector").fails(t, "vector_index_unavailable", "")
	// Both down, hybrid search has no side to answer from.
	wantError(t, s.searchFor(t, query, "hybrid"), http.StatusServiceUnavailable, "keyword_index_unavailable")

	// The memory is untouched, and read without any index.
	if got := s.get(t, aliceKey, note.ID); got.Version != 1 || got.Forgotten {
		t.Errorf("the note with both indexes down: %+v", got)
	}
}
