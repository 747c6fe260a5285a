// Package memenvtest is the memory write side on the real stack, for the
// tests of the commands and of the embedding queue: SQLite log and read
// model, the projection engine, the built-in local model behind a switch
// that can take it down, and the embedding queue (not running: a test
// drains or runs it).
package memenvtest

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/workers"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/query"
)

// Env is the stack New builds.
type Env struct {
	Store     domain.EventStore
	ReadModel *sqlite.Memories
	Writer    *commands.EventWriter
	Provider  *SwitchProvider
	Model     domain.EmbeddingModel
	Queue     *workers.EmbedQueue
	Memories  *commands.Memories
	// Suggestions is the suggestions read model, which the processing
	// pipeline decides on.
	Suggestions *sqlite.Suggestions
	// Queries reads what the commands wrote.
	Queries *query.Service
}

// New builds the stack in a temporary directory; the test's cleanup
// stops it.
func New(t testing.TB) *Env {
	t.Helper()
	return NewOn(t, nil)
}

// NewOn is New with its event log in log (nil: SQLite beside the read
// model), e.g. KurrentDB's test server with a small append limit.
func NewOn(t testing.TB, log domain.EventStore) *Env {
	t.Helper()
	return build(t, log, nil)
}

// NewAround is New with its SQLite event log seen through wrap, e.g. one
// that lets another writer append first.
func NewAround(t testing.TB, wrap func(domain.EventStore) domain.EventStore) *Env {
	t.Helper()
	return build(t, nil, wrap)
}

// build builds the stack over log, or when nil over the SQLite log beside
// the read models, seen through wrap when it is not nil.
func build(t testing.TB, log domain.EventStore, wrap func(domain.EventStore) domain.EventStore) *Env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	db, err := sqlite.Open(ctx, sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if log == nil {
		log = sqlite.NewEventStore(db, 20*time.Millisecond)
		if wrap != nil {
			log = wrap(log)
		}
	}
	e := &Env{Store: log, ReadModel: sqlite.NewMemories(db), Suggestions: sqlite.NewSuggestions(db)}
	engine := projections.NewEngine(e.Store, slog.New(slog.DiscardHandler), projections.NewMemories(e.ReadModel), projections.NewSuggestions(e.Suggestions))
	done := make(chan struct{})
	go func() { defer close(done); _ = engine.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; db.Close() })

	lp, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.Provider = &SwitchProvider{inner: lp}
	e.Model = lp.Models()[0]
	e.Writer = commands.NewEventWriter(e.Store, engine, 0)
	e.Queue, err = workers.NewEmbedQueue(workers.EmbedQueueConfig{Writer: e.Writer, Reader: e.ReadModel, Embedder: e.Provider,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.Memories = e.NewMemories(t, e.ReadModel)
	e.Queries, err = query.New(query.Config{Memories: e.ReadModel, Suggestions: e.Suggestions, Provenance: sqlite.NewProvenance(db),
		Audit: sqlite.NewAudit(db), Jobs: sqlite.NewJobs(db), States: processing.NewSnapshots(e.Store)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// NewMemories are memory commands of the stack that read through reader
// (a test may put one in front of the read model).
func (e *Env) NewMemories(t testing.TB, reader commands.MemoryReadModel) *commands.Memories {
	t.Helper()
	m, err := commands.NewMemories(commands.MemoriesConfig{Writer: e.Writer, Reader: reader, Embedder: e.Provider, Queue: e.Queue, DefaultModel: e.Model})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Meta is the metadata of a request by an API key of userID.
func Meta(userID string) domain.Metadata {
	return domain.Metadata{Actor: domain.Actor{Kind: domain.ActorKey, ID: "key-" + userID, UserID: userID}, RequestID: "test"}
}

// Note is a note memory holding text.
func Note(text string) commands.MemoryInput {
	content, _ := json.Marshal(map[string]string{"content": text})
	return commands.MemoryInput{Type: "notes", Content: content}
}

// SwitchProvider is the real local provider behind a switch that
// simulates an outage, optionally corrupting answers, and counting calls.
type SwitchProvider struct {
	inner    *local.Provider
	Down     atomic.Bool
	Truncate atomic.Bool  // answer vectors one dimension short
	Calls    atomic.Int64 // calls that reached the provider, failed or not
}

// Embed embeds with the local model unless the switch is down.
func (p *SwitchProvider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	p.Calls.Add(1)
	if p.Down.Load() {
		return domain.EmbedResult{}, domain.Errorf(domain.KindProviderUnavailable, "provider down (test)")
	}
	res, err := p.inner.Embed(ctx, req)
	if err == nil && p.Truncate.Load() {
		for i, v := range res.Vectors {
			res.Vectors[i] = v[:len(v)-1]
		}
	}
	return res, err
}
