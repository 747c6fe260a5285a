package workers_test

import (
	"slices"
	"testing"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/internal/memenvtest"
	"github.com/engram-memory/engram/internal/workers"
)

// A memory purged while the embedding queue works through a batch is not
// sent to the provider once its purge is acknowledged: the queue reads
// each group again just before its provider call. Two agents' pending
// memories are two groups, one call each; the first call purges the
// other agent's memory before it answers, and the second call is never
// made. The provider is an OpenAI-compatible server on loopback that
// records what reaches it.
func TestEmbedQueueSendsNoTextOfAMemoryPurgedBeforeItsCall(t *testing.T) {
	e := memenvtest.New(t)
	ctx, meta := t.Context(), memenvtest.Meta("u1")
	counter, provider := memenvtest.NewCountingProvider(t)
	// The writes find the provider down, so both memories wait for the
	// queue.
	e.Provider.Down.Store(true)
	mem, err := commands.NewMemories(commands.MemoriesConfig{Writer: e.Writer, Reader: e.ReadModel, Embedder: e.Provider, DefaultModel: memenvtest.CountedModel})
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"a": "the lighthouse keeper logs every ship", "b": "the secret the user asked to purge"}
	ids := map[string]string{}
	for agent, text := range texts {
		c, err := mem.Create(ctx, meta, agent, memenvtest.Note(text))
		if err != nil {
			t.Fatal(err)
		}
		if c.Embedding.Status != memory.StatusPending {
			t.Fatalf("%s: status %s while the provider is down", agent, c.Embedding.Status)
		}
		ids[agent] = c.ID
	}
	queue, err := workers.NewEmbedQueue(workers.EmbedQueueConfig{Writer: e.Writer, Reader: e.ReadModel, Embedder: provider})
	if err != nil {
		t.Fatal(err)
	}
	// The first call purges the memory it was not asked about; the purge
	// is acknowledged (applied by the read model) before the call answers.
	var purged string
	counter.BeforeAnswer = func(asked []string) {
		if purged != "" {
			return
		}
		purged = "b"
		if slices.Contains(asked, texts["b"]) {
			purged = "a"
		}
		if err := mem.Purge(ctx, meta, ids[purged], nil); err != nil {
			t.Errorf("purge during the queue's call: %v", err)
		}
	}

	n, err := queue.Drain(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v; want the one memory left embedded", n, err)
	}
	if counter.Received(texts[purged]) || counter.Calls.Load() != 1 {
		t.Fatalf("%d provider calls; the text of the memory purged before its call reached the provider: %v", counter.Calls.Load(), counter.Received(texts[purged]))
	}
	if pending, err := e.ReadModel.PendingEmbeddings(ctx, 10); err != nil || len(pending) != 0 {
		t.Fatalf("pending after the drain: %+v, %v", pending, err)
	}
}
