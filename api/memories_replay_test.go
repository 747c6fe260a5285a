package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/projections"
)

// TestMemReplayEquivalence builds the memories read model through the API
// (every kind of change, including embeddings made later by the queue),
// then rebuilds it from the log: the export must be byte-equal, and the
// replay must not call the embedding provider.
func TestMemReplayEquivalence(t *testing.T) {
	t.Parallel()
	onEachReadModelBackend(t, stackOptions{runQueue: true}, func(t *testing.T, s *stack) {
		userA, keyA := s.user(t, "replay-a@example.com")
		_, keyB := s.user(t, "replay-b@example.com")

		var batch struct{ Memories []memCreated }
		var items []any
		for i, typ := range []string{"episode", "belief", "note", "value", "goal", "playbook", "raw_entry", "relationship", "drive"} {
			items = append(items, map[string]any{"type": typ, "content": contentOf(typ, i), "tags": []string{"t" + fmt.Sprint(i%3)}})
		}
		s.request(t, "POST", "/v1/memories/batch", keyA, map[string]any{"agent_id": "a", "memories": items}).must(t, http.StatusCreated, &batch)
		ids := make([]string, len(batch.Memories))
		for i, c := range batch.Memories {
			ids[i] = c.ID
		}
		s.request(t, "POST", "/v1/memories", keyA, map[string]any{"agent_id": "a", "type": "note", "content": map[string]any{"content": "derived"},
			"derived_from": []string{"episode:" + ids[0], "raw:" + ids[6]}}).must(t, http.StatusCreated, nil)
		s.request(t, "PATCH", "/v1/memories/"+ids[1], keyA, map[string]any{"content": map[string]any{"statement": "changed"}, "tags": []string{"x"}}).must(t, http.StatusOK, nil)
		s.request(t, "PATCH", "/v1/memories/"+ids[2], keyA, map[string]any{"tags": []string{"only tags"}}).must(t, http.StatusOK, nil)
		// ids[3] is a value, protected by default: it is unprotected first.
		s.request(t, "POST", "/v1/memories/"+ids[3]+"/unprotect", keyA, nil).must(t, http.StatusOK, nil)
		s.request(t, "DELETE", "/v1/memories/"+ids[3], keyA, nil).must(t, http.StatusOK, nil)
		s.request(t, "DELETE", "/v1/memories/"+ids[4]+"?purge=true", keyA, nil).must(t, http.StatusOK, nil)
		// Concurrent patches of different fields of one memory, one of them
		// conditional, and a refused stale one.
		var wg sync.WaitGroup
		for _, change := range []map[string]any{{"objective": "walrus objective"}, {"outcome": "narwhal outcome"}, {"lessons": []string{"beluga"}}, {"confidence": 0.1}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.request(t, "PATCH", "/v1/memories/"+ids[0], keyA, map[string]any{"content": change}).must(t, http.StatusOK, nil)
			}()
		}
		wg.Wait()
		s.requestIfMatch(t, "PATCH", "/v1/memories/"+ids[0], keyA, `"1"`, map[string]any{"tags": []string{"stale"}}).must(t, http.StatusPreconditionFailed, nil)
		s.requestIfMatch(t, "PATCH", "/v1/memories/"+ids[0], keyA, `"5"`, map[string]any{"content": map[string]any{"outcome_type": "mixed"}}).must(t, http.StatusOK, nil)
		s.create(t, keyB, "a", "note", map[string]any{"content": "same agent id, other user"})
		s.create(t, keyB, "gone", "note", map[string]any{"content": "deleted with its agent"})
		s.request(t, "DELETE", "/v1/agents/gone", keyB, nil).must(t, http.StatusOK, nil)
		s.create(t, keyB, "gone", "belief", map[string]any{"statement": "re-created"})

		// A processing pass (on the cognition stream) consumes raw entries.
		s.raws(t, keyA, "a", goldenRaw...)
		s.process(t, keyA, "a", map[string]any{"force": true, "transition": "raw_to_note"})

		// Some vectors come from the queue, after an outage.
		s.provider.down.Store(true)
		pending := s.create(t, keyA, "a", "goal", map[string]any{"title": "embedded later"})
		s.request(t, "PATCH", "/v1/memories/"+ids[5], keyA, map[string]any{"content": map[string]any{"name": "renamed while down"}}).must(t, http.StatusOK, nil)
		s.provider.down.Store(false)
		s.queue.Kick()
		memEventually(t, "the queue catches up", func() bool {
			return s.get(t, keyA, pending.ID).Embedding.Status == memory.StatusEmbedded &&
				s.get(t, keyA, ids[5]).Embedding.Status == memory.StatusEmbedded
		})

		s.stopQueue()
		s.stopEngine()
		incremental := s.export(t)
		calls := s.provider.calls.Load()

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.engine.Rebuild(ctx, projections.MemoriesProjectionName, projections.KeywordProjectionName); err != nil {
			t.Fatal(err)
		}
		// The rebuilt keyword index applied the patches field by field too.
		for _, word := range []string{"walrus", "narwhal", "beluga"} {
			hits, err := s.wired.KeywordIndex.SearchKeyword(ctx, domain.KeywordQuery{Scope: domain.IndexScope{UserID: userA, AgentID: "a"}, Text: word, Limit: 5})
			if err != nil || len(hits) != 1 || hits[0].MemoryID != ids[0] {
				t.Errorf("rebuilt keyword index: %q finds %+v, %v; want the patched episode", word, hits, err)
			}
		}
		replayed := s.export(t)
		if !bytes.Equal(incremental, replayed) {
			t.Fatalf("replay differs from the incremental build:\n--- incremental\n%s\n--- replayed\n%s", incremental, replayed)
		}
		if got := s.provider.calls.Load(); got != calls {
			t.Errorf("replay called the provider %d times", got-calls)
		}
		if !bytes.Contains(incremental, []byte(`"consumed":1`)) && !bytes.Contains(incremental, []byte(`"consumed":true`)) {
			t.Error("no memory of the export was consumed by the processing pass")
		}
		if n := bytes.Count(incremental, []byte("\n")); n < 20 {
			t.Errorf("export has only %d rows; the scenario did not run", n)
		}
	})
}

// contentOf is valid content of each type, varied by i.
func contentOf(typ string, i int) map[string]any {
	s := fmt.Sprint("text ", i)
	switch typ {
	case "episode":
		return map[string]any{"objective": s, "outcome": s, "lessons": []string{s}}
	case "belief":
		return map[string]any{"statement": s}
	case "note", "raw_entry":
		return map[string]any{"content": s}
	case "value":
		return map[string]any{"name": s, "statement": s}
	case "goal":
		return map[string]any{"title": s}
	case "playbook":
		return map[string]any{"name": s, "description": s, "steps": []map[string]string{{"action": s}}}
	case "relationship":
		return map[string]any{"entity_name": s, "relationship_type": "friend"}
	case "drive":
		return map[string]any{"drive_type": s}
	}
	panic("unknown type " + typ)
}

// BenchmarkMemBatchIngest measures ingest through POST /v1/memories/batch
// (1000 notes per request, embedded on write with the built-in local
// model): the memories/s metric is the figure the notes report.
func BenchmarkMemBatchIngest(b *testing.B) {
	s := newStack(b, stackOptions{runQueue: true, discardLogs: true})
	_, key := s.user(b, "bench@example.com")
	items := make([]any, memory.MaxBatch)
	for i := range items {
		items[i] = map[string]any{"type": "note", "content": map[string]any{
			"content": fmt.Sprintf("Meeting note %d: the deployment of service %d moved to Thursday after the load test found a slow query", i, i%37)}}
	}
	body := map[string]any{"agent_id": "bench", "memories": items}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		s.request(b, "POST", "/v1/memories/batch", key, body).must(b, http.StatusCreated, nil)
	}
	b.ReportMetric(float64(b.N*len(items))/time.Since(start).Seconds(), "memories/s")
}
