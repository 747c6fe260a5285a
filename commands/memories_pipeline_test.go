package commands_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/memenvtest"
	"github.com/engram-memory/engram/projections"
)

// gatedProjection applies nothing until its gate opens, as a slow index
// would.
type gatedProjection struct {
	gate chan struct{}
	mu   sync.Mutex
	pos  uint64
}

func (p *gatedProjection) Name() string { return "gated" }
func (p *gatedProjection) Position(context.Context) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pos, nil
}
func (p *gatedProjection) Reset(context.Context) error { return nil }
func (p *gatedProjection) Apply(ctx context.Context, events []domain.Event) error {
	select {
	case <-p.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pos = max(p.pos, events[len(events)-1].Position)
	return nil
}

// TestCreateHoldsTheUserLockUntilItsDecisionReadModelApplied: with
// DecidesOn naming the memories read model, a user's second create
// appends while a slower projection still applies the first, and both
// answer only once every projection has applied them; without it, the
// second waits for the first to be visible everywhere.
func TestCreateHoldsTheUserLockUntilItsDecisionReadModelApplied(t *testing.T) {
	for _, c := range []struct {
		name               string
		decidesOn          []string
		secondAppendsEarly bool
	}{
		{"decisions on the memories read model", []string{projections.MemoriesProjectionName}, true},
		{"decisions on every projection", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			db, err := sqlite.Open(ctx, sqlitetest.Dir(t), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			store := sqlite.NewEventStore(db, 20*time.Millisecond)
			readMod := sqlite.NewMemories(db)
			gated := &gatedProjection{gate: make(chan struct{})}
			engine := projections.NewEngine(store, slog.New(slog.DiscardHandler), projections.NewMemories(readMod), gated)
			stopped := make(chan struct{})
			go func() { defer close(stopped); _ = engine.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-stopped; db.Close() })
			lp, err := local.New(local.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m, err := commands.NewMemories(commands.MemoriesConfig{Writer: commands.NewEventWriter(store, engine, 0), Reader: readMod,
				Embedder: lp, DefaultModel: lp.Models()[0], DecidesOn: c.decidesOn})
			if err != nil {
				t.Fatal(err)
			}
			head := func() uint64 {
				h, err := store.Head(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			// waitHead waits up to d for the log to pass after.
			waitHead := func(after uint64, d time.Duration) bool {
				for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if head() > after {
						return true
					}
				}
				return false
			}
			create := func(text string) <-chan error {
				done := make(chan error, 1)
				go func() {
					_, err := m.CreateBatch(ctx, memenvtest.Meta("u1"), "agent", []commands.MemoryInput{memenvtest.Note(text)})
					done <- err
				}()
				return done
			}
			first := create("first")
			if !waitHead(0, 10*time.Second) {
				t.Fatal("the first create never appended")
			}
			afterFirst := head()
			second := create("second")
			// An append that must come is awaited for as long as a loaded
			// machine takes to embed and decide; one that must not come is
			// looked for during half a second.
			window := 500 * time.Millisecond
			if c.secondAppendsEarly {
				window = 10 * time.Second
			}
			if got := waitHead(afterFirst, window); got != c.secondAppendsEarly {
				t.Fatalf("second create appended while the gated projection held the first: %v, want %v", got, c.secondAppendsEarly)
			}
			for _, done := range []<-chan error{first, second} {
				select {
				case err := <-done:
					t.Fatalf("a create answered (%v) before every projection applied it", err)
				default:
				}
			}
			close(gated.gate)
			for _, done := range []<-chan error{first, second} {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			if view, found, err := readMod.Agent(ctx, "u1", "agent"); err != nil || !found || view.StoredMemories != 2 {
				t.Fatalf("agent after both creates: %+v, %v, %v; want 2 memories", view, found, err)
			}
		})
	}
}
