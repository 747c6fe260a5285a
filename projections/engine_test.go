package projections_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/testlog"
	"github.com/engram-memory/engram/projections"
)

// sumProjection adds up payload numbers; it keeps its checkpoint next to its
// state, like a real read model, and can be told to fail once.
type sumProjection struct {
	name string
	mu   sync.Mutex
	sum  int
	pos  uint64
	fail int
	// panics makes the next Apply calls panic, as a bug would.
	panics int
}

func (p *sumProjection) Name() string { return p.name }
func (p *sumProjection) Position(context.Context) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pos, nil
}
func (p *sumProjection) Reset(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sum, p.pos = 0, 0
	return nil
}
func (p *sumProjection) Apply(_ context.Context, events []domain.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.panics > 0 {
		p.panics--
		panic("projection bug")
	}
	if p.fail > 0 {
		p.fail--
		return errors.New("transient failure")
	}
	for _, e := range events {
		if e.Position <= p.pos {
			continue
		}
		var n struct{ N int }
		if err := json.Unmarshal(e.Payload, &n); err != nil {
			return err
		}
		p.sum += n.N
		p.pos = e.Position
	}
	return nil
}
func (p *sumProjection) state() (int, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sum, p.pos
}

func appendN(t *testing.T, store domain.EventStore, ns ...int) uint64 {
	t.Helper()
	events := make([]domain.NewEvent, len(ns))
	for i, n := range ns {
		raw, _ := json.Marshal(map[string]int{"N": n})
		events[i] = domain.NewEvent{Type: "Added", SchemaVersion: 1, Payload: raw}
	}
	res, err := store.Append(context.Background(), "s", domain.ExpectAny, events)
	if err != nil {
		t.Fatal(err)
	}
	return res.LastPosition
}

func newStore(t *testing.T) domain.EventStore {
	db, err := sqlite.Open(context.Background(), sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return sqlite.NewEventStore(db, 20*time.Millisecond)
}

func TestEngineReadYourWritesAndRetry(t *testing.T) {
	store := newStore(t)
	a := &sumProjection{name: "a"}
	b := &sumProjection{name: "b", fail: 2}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), a, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go engine.Run(ctx)

	for i := 1; i <= 20; i++ {
		pos := appendN(t, store, i)
		waitCtx, done := context.WithTimeout(ctx, 10*time.Second)
		if err := engine.WaitFor(waitCtx, pos); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		done()
		want := i * (i + 1) / 2
		for _, p := range []*sumProjection{a, b} {
			if sum, at := p.state(); sum != want || at < pos {
				t.Fatalf("after write %d projection %s has sum %d at %d, want %d at %d", i, p.name, sum, at, want, pos)
			}
		}
	}
}

// TestEngineLogsWatermillStartupAtDebug: an info-level log shows none of
// the router's per-handler start-up lines; debug shows them.
func TestEngineLogsWatermillStartupAtDebug(t *testing.T) {
	for _, c := range []struct {
		level     slog.Level
		wantLines bool
	}{{slog.LevelInfo, false}, {slog.LevelDebug, true}} {
		t.Run(c.level.String(), func(t *testing.T) {
			store := newStore(t)
			var buf testlog.Buffer
			p := &sumProjection{name: "p"}
			engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: c.level})), p)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- engine.Run(ctx) }()
			pos := appendN(t, store, 1)
			waitCtx, stop := context.WithTimeout(ctx, 10*time.Second)
			defer stop()
			if err := engine.WaitFor(waitCtx, pos); err != nil {
				t.Fatal(err)
			}
			cancel()
			<-done
			got := strings.Contains(buf.String(), "component=watermill")
			if got != c.wantLines {
				t.Fatalf("watermill lines at %s: %v, want %v\n%s", c.level, got, c.wantLines, buf.String())
			}
		})
	}
}

func TestEngineRebuildEqualsIncremental(t *testing.T) {
	store := newStore(t)
	p := &sumProjection{name: "p"}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), p)
	for i := 0; i < 25; i++ {
		appendN(t, store, i, 2*i)
	}
	ctx := context.Background()
	if err := engine.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	sum, pos := p.state()
	if err := engine.Rebuild(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if s2, p2 := p.state(); s2 != sum || p2 != pos {
		t.Fatalf("rebuild gave %d at %d, incremental %d at %d", s2, p2, sum, pos)
	}
	if err := engine.Rebuild(ctx, "nope"); err == nil {
		t.Fatal("rebuild of an unknown projection succeeded")
	}
}

// A batch that fails more often than the quick retries allow is parked and
// redelivered, never skipped; a panic is retried like an error. Status
// counts it all and clears the error once the batch applies.
func TestEngineParksAndRecovers(t *testing.T) {
	store := newStore(t)
	flaky := &sumProjection{name: "flaky", fail: 6} // 4 attempts per delivery: parked once
	buggy := &sumProjection{name: "buggy", panics: 1}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), flaky, buggy)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go engine.Run(ctx)

	var parkedSeen bool
	pos := appendN(t, store, 7)
	waitCtx, done := context.WithTimeout(ctx, 30*time.Second)
	defer done()
	for {
		st := engine.Status()["flaky"]
		if st.ParkedSince != nil && st.Error != "" {
			parkedSeen = true
		}
		if st.Position >= pos {
			break
		}
		select {
		case <-waitCtx.Done():
			t.Fatalf("flaky never applied: %+v", st)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := engine.WaitFor(waitCtx, pos); err != nil {
		t.Fatal(err)
	}
	st := engine.Status()
	if f := st["flaky"]; f.FailedAttempts != 6 || f.Parked < 1 || f.ParkedSince != nil || f.Error != "" || f.Batches != 1 || f.Events != 1 {
		t.Fatalf("flaky status after recovery: %+v", f)
	}
	if !parkedSeen {
		t.Error("the parked batch never showed in Status")
	}
	if b := st["buggy"]; b.FailedAttempts != 1 || b.Parked != 0 || b.Batches != 1 {
		t.Fatalf("buggy status: %+v", b)
	}
	for _, p := range []*sumProjection{flaky, buggy} {
		if sum, at := p.state(); sum != 7 || at != pos {
			t.Fatalf("%s: sum %d at %d, want 7 at %d", p.name, sum, at, pos)
		}
	}
}

// tagsProjection records where the decoded tags of each MemoryCreated it
// applies live in memory, to tell shared decodings from private ones.
type tagsProjection struct {
	sumProjection
	tags map[uint64]*string
}

func (p *tagsProjection) Apply(_ context.Context, events []domain.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range events {
		if e.Position <= p.pos {
			continue
		}
		var c memory.MemoryCreated
		if err := e.Decode(&c); err != nil {
			return err
		}
		p.tags[e.Position] = unsafe.SliceData(c.Tags)
		p.pos = e.Position
	}
	return nil
}

// TestLiveHandlersDecodeEachPayloadOnce: the projections' live handlers
// share one decoding of each memory payload instead of parsing its JSON
// once per projection (the decoded tags are the same slice for all).
func TestLiveHandlersDecodeEachPayloadOnce(t *testing.T) {
	store := newStore(t)
	var projs []projections.Projection
	var tags []*tagsProjection
	for _, name := range []string{"a", "b", "c"} {
		p := &tagsProjection{sumProjection: sumProjection{name: name}, tags: map[uint64]*string{}}
		projs, tags = append(projs, p), append(tags, p)
	}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), projs...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go engine.Run(ctx)

	var events []domain.NewEvent
	for i := range 50 {
		e, err := domain.MarshalEvent(memory.MemoryCreated{MemoryID: fmt.Sprint("m", i), Type: memory.Note,
			Content: json.RawMessage(`{"content":"x"}`), Tags: []string{"t"}}, domain.Metadata{})
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	res, err := store.Append(ctx, "s", domain.ExpectAny, events)
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	if err := engine.WaitFor(waitCtx, res.LastPosition); err != nil {
		t.Fatal(err)
	}
	for _, p := range tags[1:] {
		p.mu.Lock()
		for pos, want := range tags[0].tags {
			if got := p.tags[pos]; got != want {
				t.Errorf("event %d: projection %s decoded its own payload (tags at %p, projection a's at %p)", pos, p.name, got, want)
			}
		}
		p.mu.Unlock()
	}
}

// countingProjection counts the Apply calls it gets.
type countingProjection struct {
	sumProjection
	calls int
}

func (p *countingProjection) Apply(ctx context.Context, events []domain.Event) error {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
	return p.sumProjection.Apply(ctx, events)
}

// TestFullBatchWriteReachesEachProjectionInOneApply: a batch write of
// memory.MaxBatch memories with their vectors (two events each) is
// applied by every projection in one call, so in one transaction, not cut
// into pages.
func TestFullBatchWriteReachesEachProjectionInOneApply(t *testing.T) {
	store := newStore(t)
	p := &countingProjection{sumProjection: sumProjection{name: "p"}}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ones := make([]int, 2*memory.MaxBatch+1) // + the agent's creation
	for i := range ones {
		ones[i] = 1
	}
	pos := appendN(t, store, ones...)
	go engine.Run(ctx)
	waitCtx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	if err := engine.WaitFor(waitCtx, pos); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls != 1 || p.sum != len(ones) {
		t.Fatalf("%d events applied in %d calls (sum %d), want 1 call", len(ones), p.calls, p.sum)
	}
}

// slowRouterStart is a log handler that holds the router's start at its
// first log line ("Loading plugins", before its handlers run) for a while,
// so that a test can stop the engine in between, deterministically.
type slowRouterStart struct{ slog.Handler }

func (h slowRouterStart) Enabled(context.Context, slog.Level) bool { return true }
func (h slowRouterStart) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "Loading plugins" {
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}
func (h slowRouterStart) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h slowRouterStart) WithGroup(string) slog.Handler      { return h }

// TestEngineStopsAtOnceBeforeItsRouterRuns: an engine stopped while its
// router is still starting returns as soon as it is stopped. The router
// used to be closed before it ran: the close then waited its whole 10 s
// timeout for handlers that never started, holding the data dir's lock
// all along (one `engram mcp` call in about twenty took 10 s).
func TestEngineStopsAtOnceBeforeItsRouterRuns(t *testing.T) {
	engine := projections.NewEngine(newStore(t), slog.New(slowRouterStart{}), &sumProjection{name: "a"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- engine.Run(ctx) }()
	time.Sleep(20 * time.Millisecond) // into the router's start
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second): // half the router's close timeout
		t.Fatal("an engine stopped before its router ran is still stopping after 5 s")
	}
}

// catchingUpProjection stands for an index restored from its image: its
// Position (where the index loads and catches up its tail) returns only
// once every other projection's Position has started, or fails after
// barrierWait, or fails with err.
type catchingUpProjection struct {
	sumProjection
	started *sync.WaitGroup
	err     error
}

const barrierWait = 5 * time.Second

func (p *catchingUpProjection) Position(ctx context.Context) (uint64, error) {
	p.started.Done()
	all := make(chan struct{})
	go func() { p.started.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(barrierWait):
		return 0, errors.New("caught up alone: the other projections' catch-up had not started")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if p.err != nil {
		return 0, p.err
	}
	return p.sumProjection.Position(ctx)
}

// TestEngineStartCatchesUpProjectionsAtOnce: a start asks every
// projection its checkpoint at once, so the keyword and vector indexes
// restored from their images catch up their tails side by side (each
// waits here until the other has started; in turn, the first gives up
// after barrierWait). A failure of one still fails the start, naming it.
func TestEngineStartCatchesUpProjectionsAtOnce(t *testing.T) {
	broken := errors.New("image unreadable")
	cases := []struct {
		name    string
		errs    []error
		wantErr string
	}{
		{name: "both indexes catch up at once, then apply the log", errs: []error{nil, nil}},
		{name: "a failing catch-up fails the start, naming its projection", errs: []error{nil, broken}, wantErr: "projections: vectors checkpoint: image unreadable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore(t)
			head := appendN(t, store, 1, 2, 3)
			var started sync.WaitGroup
			started.Add(len(tc.errs))
			var ps []projections.Projection
			var indexes []*catchingUpProjection
			for i, name := range []string{"keyword", "vectors"} {
				p := &catchingUpProjection{sumProjection: sumProjection{name: name}, started: &started, err: tc.errs[i]}
				ps, indexes = append(ps, p), append(indexes, p)
			}
			engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), ps...)
			ctx, cancel := context.WithTimeout(context.Background(), 2*barrierWait)
			defer cancel()
			ran := make(chan error, 1)
			go func() { ran <- engine.Run(ctx) }()
			if tc.wantErr != "" {
				if err := <-ran; err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Run = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err := engine.WaitFor(ctx, head); err != nil {
				select {
				case runErr := <-ran:
					t.Fatalf("the start failed: %v", runErr)
				default:
					t.Fatalf("wait for %d: %v", head, err)
				}
			}
			for _, p := range indexes {
				if sum, at := p.state(); sum != 6 || at != head {
					t.Errorf("%s has sum %d at %d, want 6 at %d", p.name, sum, at, head)
				}
			}
			cancel()
			<-ran
		})
	}
}
