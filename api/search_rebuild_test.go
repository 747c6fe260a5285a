package api_test

import (
	"context"
	"database/sql"
	"net/http"
	"testing"

	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/search"
)

// TestSearchDuringALiveRebuildSaysSo rebuilds the keyword and the vector
// projection live, and holds each rebuild half-way: its index is dropped
// and the replay that refills it waits for the database's one writer,
// which the test holds. Meanwhile the index answers nothing (or part of
// the memories); a search must not pass that off as the answer. Hybrid
// search answers from the other side with degraded <side>_rebuilding, the
// side's own mode is 503 <side>_index_rebuilding, and the other mode is
// unaffected. POST /embeddings/similar, which searches the vector index
// too, is 503 vector_index_rebuilding during the vector rebuild. Once the
// rebuild ends, every mode finds the memory again with nothing degraded.
func TestSearchDuringALiveRebuildSaysSo(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	note := s.create(t, aliceKey, "a1", "note", map[string]any{"content": "the harbour lighthouse keeper logs every ship"})
	const query = "harbour lighthouse keeper"
	similar := func(t *testing.T) response {
		return s.request(t, "POST", "/v1/embeddings/similar", aliceKey, map[string]any{"agent_id": "a1", "embedding": s.vectorOf("default", query)})
	}

	for _, tc := range []struct {
		projection, mode, otherMode, degraded, code string
		// similarCode is /embeddings/similar's during the rebuild ("":
		// it finds the note).
		similarCode string
	}{
		{projections.KeywordProjectionName, "keyword", "vector", search.DegradedKeywordRebuilding, "keyword_index_rebuilding", ""},
		{projections.VectorsProjectionName, "vector", "keyword", search.DegradedVectorRebuilding, "vector_index_rebuilding", "vector_index_rebuilding"},
	} {
		t.Run(tc.projection, func(t *testing.T) {
			release := s.holdWriter(t)
			rebuilt := make(chan error, 1)
			go func() {
				_, err := s.wired.LiveRebuild(context.Background(), tc.projection)
				rebuilt <- err
			}()
			memEventually(t, "the projection reports rebuilding", func() bool { return s.engine.Status()[tc.projection].Rebuilding })

			hybrid := s.searchFor(t, query, "hybrid")
			expect(t, hybrid, http.StatusOK)
			if got := hybrid.str("degraded"); got != tc.degraded {
				t.Errorf("hybrid search during the rebuild: degraded %q, want %q: %s", got, tc.degraded, hybrid.raw)
			}
			if ids := resultIDs(hybrid); len(ids) != 1 || ids[0] != note.ID {
				t.Errorf("hybrid search during the rebuild found %v, want the note %s from the other side", ids, note.ID)
			}
			wantError(t, s.searchFor(t, query, tc.mode), http.StatusServiceUnavailable, tc.code)
			if other := expect(t, s.searchFor(t, query, tc.otherMode), http.StatusOK); len(resultIDs(other)) != 1 {
				t.Errorf("%s search during the rebuild of the %s projection: %s", tc.otherMode, tc.projection, other.raw)
			}
			if tc.similarCode != "" {
				wantError(t, similar(t), http.StatusServiceUnavailable, tc.similarCode)
			} else if ids := resultIDs(expect(t, similar(t), http.StatusOK)); len(ids) != 1 || ids[0] != note.ID {
				t.Errorf("similar during the rebuild of the %s projection found %v, want the note", tc.projection, ids)
			}

			release()
			if err := <-rebuilt; err != nil {
				t.Fatal(err)
			}
			for _, mode := range []string{"hybrid", "keyword", "vector"} {
				r := expect(t, s.searchFor(t, query, mode), http.StatusOK)
				if ids := resultIDs(r); len(ids) != 1 || ids[0] != note.ID || r.str("degraded") != "" {
					t.Errorf("%s search after the rebuild: %s, want the note and nothing degraded", mode, r.raw)
				}
			}
			if ids := resultIDs(expect(t, similar(t), http.StatusOK)); len(ids) != 1 || ids[0] != note.ID {
				t.Errorf("similar after the rebuild found %v, want the note", ids)
			}
		})
	}
}

// holdWriter takes the database's one write connection until the
// returned release is called: every write (a projection's batch, a live
// rebuild's replay) waits meanwhile, while reads go on.
func (s *stack) holdWriter(t *testing.T) (release func()) {
	t.Helper()
	held, done, finished := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		finished <- s.db.WriteTx(context.Background(), func(*sql.Tx) error {
			close(held)
			<-done
			return nil
		})
	}()
	<-held
	var released bool
	release = func() {
		if !released {
			released = true
			close(done)
			if err := <-finished; err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(release)
	return release
}

func (s *stack) searchFor(t *testing.T, query, mode string) response {
	t.Helper()
	return s.request(t, "POST", "/v1/search", aliceKey, map[string]any{"agent_id": "a1", "query": query, "mode": mode, "limit": 10})
}

// resultIDs are the ids of a search response's results, in order.
func resultIDs(r response) []string {
	results, _ := r.data()["results"].([]any)
	var ids []string
	for _, res := range results {
		m, _ := res.(map[string]any)
		id, _ := m["id"].(string)
		ids = append(ids, id)
	}
	return ids
}
