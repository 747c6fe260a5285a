package workers_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/workers"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/query"
)

// memEnv is the embedding queue on the real stack: SQLite log and read
// model, the projection engine, the built-in local model behind a switch
// that can take it down, and the memory commands that leave memories
// waiting for the queue.
type memEnv struct {
	store    domain.EventStore
	writer   *commands.EventWriter
	provider *memSwitchProvider
	queue    *workers.EmbedQueue
	memories *commands.Memories
	queries  *query.Service
}

func newMemEnv(t *testing.T) *memEnv {
	t.Helper()
	return newMemEnvOn(t, nil)
}

// newMemEnvOn is memEnv with its log in log instead of SQLite (nil: SQLite).
func newMemEnvOn(t *testing.T, log domain.EventStore) *memEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	db, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	readModel := sqlite.NewMemories(db)
	if log == nil {
		log = sqlite.NewEventStore(db, 20*time.Millisecond)
	}
	e := &memEnv{store: log}
	engine := projections.NewEngine(e.store, slog.New(slog.DiscardHandler), projections.NewMemories(readModel))
	done := make(chan struct{})
	go func() { defer close(done); _ = engine.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; db.Close() })

	lp, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.provider = &memSwitchProvider{inner: lp}
	e.writer = commands.NewEventWriter(e.store, engine, 0)
	e.queue, err = workers.NewEmbedQueue(workers.EmbedQueueConfig{Writer: e.writer, Reader: readModel, Embedder: e.provider,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.memories, err = commands.NewMemories(commands.MemoriesConfig{Writer: e.writer, Reader: readModel, Embedder: e.provider, Queue: e.queue, DefaultModel: lp.Models()[0]})
	if err != nil {
		t.Fatal(err)
	}
	e.queries, err = query.New(query.Config{Memories: readModel, Suggestions: sqlite.NewSuggestions(db), Provenance: sqlite.NewProvenance(db),
		Audit: sqlite.NewAudit(db), Jobs: sqlite.NewJobs(db), Log: e.store})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func memMeta(userID string) domain.Metadata {
	return domain.Metadata{Actor: domain.Actor{Kind: domain.ActorKey, ID: "key-" + userID, UserID: userID}, RequestID: "test"}
}

func memNote(text string) commands.MemoryInput {
	content, _ := json.Marshal(map[string]string{"content": text})
	return commands.MemoryInput{Type: "notes", Content: content}
}

// memSwitchProvider is the local model that can be taken down.
type memSwitchProvider struct {
	inner *local.Provider
	down  atomic.Bool
	calls atomic.Int64 // calls that reached the provider, failed or not
}

func (p *memSwitchProvider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	p.calls.Add(1)
	if p.down.Load() {
		return domain.EmbedResult{}, domain.Errorf(domain.KindProviderUnavailable, "provider down (test)")
	}
	return p.inner.Embed(ctx, req)
}
