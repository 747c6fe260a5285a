package projections_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/projections"
)

// countingStore counts the engine's subscriptions to the log, its reads
// of a range, and its own page reads (ReadAll; a subscription's and a
// range's reads happen inside the store).
type countingStore struct {
	domain.EventStore
	subscriptions, ranges, reads atomic.Int64
}

func (s *countingStore) SubscribeAll(ctx context.Context, after uint64, handle func(context.Context, []domain.Event) error) error {
	s.subscriptions.Add(1)
	return s.EventStore.SubscribeAll(ctx, after, handle)
}

func (s *countingStore) ReadRange(ctx context.Context, after, until uint64, handle func(context.Context, []domain.Event) error) error {
	s.ranges.Add(1)
	return s.EventStore.ReadRange(ctx, after, until, handle)
}

func (s *countingStore) ReadAll(ctx context.Context, after uint64, limit int) ([]domain.Event, error) {
	s.reads.Add(1)
	return s.EventStore.ReadAll(ctx, after, limit)
}

func runEngine(t *testing.T, engine *projections.Engine) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); engine.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ctx
}

func waitFor(t *testing.T, ctx context.Context, engine *projections.Engine, pos uint64, names ...string) {
	t.Helper()
	waitCtx, done := context.WithTimeout(ctx, 20*time.Second)
	defer done()
	if err := engine.WaitForProjections(waitCtx, pos, names...); err != nil {
		t.Fatal(err)
	}
}

// The projections of an engine are fed by one reader of the log, however
// many there are: one subscription, and no reads of their own while they
// keep up (each used to subscribe to the log for itself).
func TestOneFollowerReadsTheLogForEveryProjection(t *testing.T) {
	store := &countingStore{EventStore: newStore(t)}
	var projs []projections.Projection
	var sums []*sumProjection
	for _, name := range []string{"a", "b", "c", "d"} {
		p := &sumProjection{name: name}
		projs, sums = append(projs, p), append(sums, p)
	}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), projs...)
	ctx := runEngine(t, engine)

	want := 0
	var pos uint64
	for i := 1; i <= 20; i++ {
		pos = appendN(t, store, i, i)
		want += 2 * i
		waitFor(t, ctx, engine, pos)
	}
	for _, p := range sums {
		if sum, at := p.state(); sum != want || at != pos {
			t.Errorf("%s: sum %d at %d, want %d at %d", p.name, sum, at, want, pos)
		}
	}
	if n, r := store.subscriptions.Load(), store.reads.Load()+store.ranges.Load(); n != 1 || r != 0 {
		t.Fatalf("%d projections made %d subscriptions and %d reads of the log, want 1 and 0", len(projs), n, r)
	}
}

// stallingProjection is a sumProjection whose Apply waits until stall is
// closed, as a projection held by a slow store or a long lock would.
type stallingProjection struct {
	*sumProjection
	stall chan struct{}
}

func (p *stallingProjection) Apply(ctx context.Context, events []domain.Event) error {
	<-p.stall
	return p.sumProjection.Apply(ctx, events)
}

// A projection that stalls does not hold the others: they keep applying
// what is appended. Once it moves again it applies what was queued for it,
// reads from its own checkpoint what the follower stopped queueing for it,
// and ends equal to them,
// without a skipped or doubled event.
func TestStalledProjectionLeavesTheOthersLiveAndCatchesUp(t *testing.T) {
	store := &countingStore{EventStore: newStore(t)}
	live := &sumProjection{name: "live"}
	stalled := &stallingProjection{sumProjection: &sumProjection{name: "stalled"}, stall: make(chan struct{})}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), live, stalled)
	projections.SetMaxPending(engine, 4)
	ctx := runEngine(t, engine)
	released := false
	defer func() {
		if !released {
			close(stalled.stall)
		}
	}()

	want := 0
	var pos uint64
	for i := 1; i <= 12; i++ { // more than it queues for one projection
		pos = appendN(t, store, i)
		want += i
		waitFor(t, ctx, engine, pos, "live")
	}
	if sum, at := stalled.state(); at != 0 || sum != 0 {
		t.Fatalf("the stalled projection applied up to %d", at)
	}
	close(stalled.stall)
	released = true
	pos = appendN(t, store, 100)
	want += 100
	waitFor(t, ctx, engine, pos)
	for _, p := range []*sumProjection{live, stalled.sumProjection} {
		if sum, at := p.state(); sum != want || at != pos {
			t.Errorf("%s: sum %d at %d, want %d at %d", p.name, sum, at, want, pos)
		}
	}
	if store.ranges.Load() < 1 {
		t.Error("the stalled projection never read the log for itself: it was queued all it missed")
	}
}

// Projections at different checkpoints are each fed from their own: one
// already past part of the log is handed only what follows its
// checkpoint, one behind gets all of it.
func TestProjectionsAtDifferentCheckpointsAreFedFromTheirOwn(t *testing.T) {
	store := newStore(t)
	first := appendN(t, store, 1, 2, 3)
	ahead := &countingProjection{sumProjection: sumProjection{name: "ahead", sum: 6, pos: first}}
	behind := &sumProjection{name: "behind"}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), ahead, behind)
	ctx := runEngine(t, engine)
	waitFor(t, ctx, engine, first)

	pos := appendN(t, store, 10)
	waitFor(t, ctx, engine, pos)
	for _, p := range []*sumProjection{&ahead.sumProjection, behind} {
		if sum, at := p.state(); sum != 16 || at != pos {
			t.Errorf("%s: sum %d at %d, want 16 at %d", p.name, sum, at, pos)
		}
	}
	ahead.mu.Lock()
	defer ahead.mu.Unlock()
	if ahead.calls != 1 {
		t.Errorf("the projection ahead was handed %d batches, want 1: only the one after its checkpoint", ahead.calls)
	}
}

// A projection that fell behind (here stalled; in a server, paused by a
// live rebuild) applies its backlog of small batches joined, in a few
// Apply calls, as a read of the log would give it, not one per write:
// the writes waiting for it would otherwise wait for a transaction each.
func TestBacklogOfSmallBatchesIsAppliedJoined(t *testing.T) {
	store := newStore(t)
	counted := &countingProjection{sumProjection: sumProjection{name: "behind"}}
	behind := &countingStall{countingProjection: counted, stall: make(chan struct{})}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), behind, &sumProjection{name: "live"})
	ctx := runEngine(t, engine)

	var pos uint64
	for i := 1; i <= 20; i++ {
		pos = appendN(t, store, i)
		waitFor(t, ctx, engine, pos, "live")
	}
	close(behind.stall)
	waitFor(t, ctx, engine, pos)
	counted.mu.Lock()
	defer counted.mu.Unlock()
	if counted.calls > 2 || counted.sum != 210 {
		t.Fatalf("20 one-event batches, the first held, took %d Apply calls (sum %d), want at most 2: the held batch, then the rest joined", counted.calls, counted.sum)
	}
}

// countingStall counts Apply calls, and waits for stall before each.
type countingStall struct {
	*countingProjection
	stall chan struct{}
}

func (p *countingStall) Apply(ctx context.Context, events []domain.Event) error {
	<-p.stall
	return p.countingProjection.Apply(ctx, events)
}

// Every path that brings projections to the log reads it through the one
// reader the live follower uses (the store's subscription): CatchUp, a
// rebuild, a live rebuild and the live following alike, never a reader of
// their own (they used to page the log with ReadAll).
func TestEveryPathReadsTheLogThroughTheFollowersReader(t *testing.T) {
	store := &countingStore{EventStore: newStore(t)}
	p := &sumProjection{name: "p"}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), p)
	pos := appendN(t, store, 1, 2, 3)
	if err := engine.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := engine.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := runEngine(t, engine)
	waitFor(t, ctx, engine, pos)
	if _, err := engine.RebuildLive(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	pos = appendN(t, store, 4)
	waitFor(t, ctx, engine, pos)
	if sum, at := p.state(); sum != 10 || at != pos {
		t.Errorf("sum %d at %d, want 10 at %d", sum, at, pos)
	}
	if r := store.reads.Load(); r != 0 {
		t.Errorf("the engine read the log %d times beside its reader, want 0", r)
	}
	// Only the follower waits for appends: the bounded reads read a range
	// (on PostgreSQL a subscription costs a LISTEN connection).
	if n := store.subscriptions.Load(); n != 1 {
		t.Errorf("%d subscriptions, want 1: the follower", n)
	}
	if n := store.ranges.Load(); n != 3 {
		t.Errorf("%d reads of a range, want 3: CatchUp, Rebuild, RebuildLive", n)
	}
}

// headAheadStore says its head is further than its last event, as a log
// restored from a backup older than what a reader saw would.
type headAheadStore struct{ domain.EventStore }

func (s headAheadStore) Head(ctx context.Context) (uint64, error) {
	head, err := s.EventStore.Head(ctx)
	return head + 5, err
}

// A bounded read reads up to a position the engine has seen in the log:
// when the log ends before it, the read fails at once, saying so (it used
// to wait for events that may never come).
func TestCatchUpToAPositionPastTheLogsEndFails(t *testing.T) {
	store := headAheadStore{newStore(t)}
	p := &sumProjection{name: "p"}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), p)
	appendN(t, store, 1, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := engine.CatchUp(ctx); !errors.Is(err, domain.ErrLogEndsBefore) {
		t.Fatalf("CatchUp past the log's end returned %v, want domain.ErrLogEndsBefore", err)
	}
}

// onePerPageStore hands its subscribers pages of one event, as a store
// streaming a subscription (KurrentDB) may when its reader keeps up.
type onePerPageStore struct{ domain.EventStore }

func (s onePerPageStore) SubscribeAll(ctx context.Context, after uint64, handle func(context.Context, []domain.Event) error) error {
	return s.EventStore.SubscribeAll(ctx, after, onePerPage(handle))
}

func (s onePerPageStore) ReadRange(ctx context.Context, after, until uint64, handle func(context.Context, []domain.Event) error) error {
	return s.EventStore.ReadRange(ctx, after, until, onePerPage(handle))
}

func onePerPage(handle func(context.Context, []domain.Event) error) func(context.Context, []domain.Event) error {
	return func(ctx context.Context, events []domain.Event) error {
		for i := range events {
			if err := handle(ctx, events[i:i+1]); err != nil {
				return err
			}
		}
		return nil
	}
}

// A replay applies the log in full chunks however small the store's pages
// are: a transaction per page would cost a replay what a chunk saves.
func TestReplayJoinsSmallPagesIntoChunks(t *testing.T) {
	store := onePerPageStore{newStore(t)}
	p := &countingProjection{sumProjection: sumProjection{name: "p"}}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), p)
	ns := make([]int, 100)
	for i := range ns {
		ns[i] = i + 1
	}
	pos := appendN(t, store, ns...)
	if err := engine.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls != 1 || p.sum != 5050 || p.pos != pos {
		t.Fatalf("100 events in pages of one took %d Apply calls (sum %d at %d), want 1 (5050 at %d)", p.calls, p.sum, p.pos, pos)
	}
}
