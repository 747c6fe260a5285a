// Package searchtest wires the real search core in process for tests and
// benchmarks: SQLite event log and read models in a temp dir, the
// projection engine with the memories, keyword and vector projections, the
// memory commands, the built-in local embedding model behind a counting,
// switchable provider, and the search service.
package searchtest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/projections/search"
)

// Env is the application every Engram binary builds (internal/app.New),
// in process, with the memory commands and a search service.
type Env struct {
	*app.Core
	DataDir   string
	Memories  *commands.Memories
	ReadModel app.MemoriesReadModel
	// Index is the embedded vector index (statistics, graph builds).
	Index    *vectorindex.Index
	Provider *Provider
	Search   *search.Service

	app *app.App
}

// Options tune an Env.
type Options struct {
	Search  search.Options
	Indexes app.Indexes
	// Embed configures the local provider (default: the built-in models).
	Embed local.Options
	// Model is the model new agents are bound to (default
	// engram-hash-384, which the search tests were written against).
	Model string
}

// New starts an Env on a fresh data dir; it stops on t.Cleanup.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	s, err := Open(context.Background(), sqlitetest.Dir(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Open starts an Env on dataDir (which may hold an earlier Env's data):
// the application with its write side and search, over the built-in local
// provider behind a counting switch. It returns once the projections have
// applied the log (both in-memory indexes loaded), as the server's
// start-up gate waits.
func Open(ctx context.Context, dataDir string, opts Options) (*Env, error) {
	p, err := local.New(opts.Embed)
	if err != nil {
		return nil, err
	}
	provider := &Provider{P: p}
	a, err := app.New(ctx, app.Settings{
		Config: app.Config{
			DataDir: dataDir, GroupCommit: 20 * time.Millisecond, Indexes: opts.Indexes, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		},
		Embedding: app.Embedding{Model: cmp.Or(opts.Model, local.BuiltinModelName)},
		Providers: []domain.EmbeddingProvider{provider},
		Search:    opts.Search,
	}, app.Writes|app.Search)
	if err != nil {
		return nil, fmt.Errorf("searchtest: %w", err)
	}
	if err := a.CaughtUp().WaitServing(ctx); err != nil {
		_ = a.Close(ctx)
		return nil, err
	}
	return &Env{
		Core: a.Core, DataDir: dataDir, Memories: a.Memories, ReadModel: a.Core.Memories, Index: a.Core.EmbeddedVectors,
		Provider: provider, Search: a.Search, app: a,
	}, nil
}

// StopEngine stops the background engine (before Rebuild, or a restart).
func (s *Env) StopEngine() { s.app.StopEngine() }

// Close stops the engine and closes the app.
func (s *Env) Close() { _ = s.app.Close(context.Background()) }

// VectorCount is the number of searchable vectors of the agent in its
// active space (0 for an unknown agent).
func (s *Env) VectorCount(t testing.TB, userID, agentID string) int {
	t.Helper()
	space, ok := s.Vectors.AgentSpace(userID, agentID)
	if !ok {
		return 0
	}
	n, err := s.VectorIndex.CountVectors(context.Background(), domain.IndexScope{UserID: userID, AgentID: agentID}, space)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Meta is the event metadata of a request by userID.
func Meta(userID string) domain.Metadata {
	return domain.Metadata{Actor: domain.Actor{Kind: domain.ActorKey, ID: "key-" + userID, UserID: userID}}
}

// Note creates a note through the memory commands and returns its id.
func (s *Env) Note(t testing.TB, userID, agentID, text string, tags []string, createdAt time.Time) string {
	t.Helper()
	return s.Create(t, userID, agentID, memory.Note, map[string]any{"content": text}, tags, createdAt)
}

// Create creates a memory of any type; a zero createdAt means now.
func (s *Env) Create(t testing.TB, userID, agentID string, typ memory.Type, content any, tags []string, createdAt time.Time) string {
	t.Helper()
	raw, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	in := commands.MemoryInput{Type: string(typ), Content: raw, Tags: tags}
	if !createdAt.IsZero() {
		in.CreatedAt = createdAt.UTC().Format(time.RFC3339Nano)
	}
	c, err := s.Memories.Create(context.Background(), Meta(userID), agentID, in)
	if err != nil {
		t.Fatalf("create %s in %s/%s: %v", typ, userID, agentID, err)
	}
	return c.ID
}

// Provider wraps an embedding provider: it counts calls and can be switched
// off to act like an unreachable backend.
type Provider struct {
	P     domain.EmbeddingProvider
	calls atomic.Int64
	down  atomic.Bool
}

// Calls is the number of Embed calls so far.
func (p *Provider) Calls() int64 { return p.calls.Load() }

// SetDown makes Embed fail with KindProviderUnavailable (or work again).
func (p *Provider) SetDown(down bool) { p.down.Store(down) }

func (p *Provider) Name() string                    { return p.P.Name() }
func (p *Provider) Models() []domain.EmbeddingModel { return p.P.Models() }

// Embed implements domain.EmbeddingProvider.
func (p *Provider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	p.calls.Add(1)
	if p.down.Load() {
		return domain.EmbedResult{}, &domain.Error{Kind: domain.KindProviderUnavailable, Message: "embedding provider unreachable (test)", Err: errors.New("down")}
	}
	return p.P.Embed(ctx, req)
}
