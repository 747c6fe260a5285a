package projections_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/projections"
)

// heldProjection is a sumProjection whose Apply waits at hold (when set)
// until the test lets it go, to hold a rebuild mid-way.
type heldProjection struct {
	*sumProjection
	hold    chan struct{}
	entered chan struct{}
}

func (p *heldProjection) Apply(ctx context.Context, events []domain.Event) error {
	if p.hold != nil {
		p.entered <- struct{}{}
		<-p.hold
		p.hold = nil
	}
	return p.sumProjection.Apply(ctx, events)
}

// A projection rebuilt live is left out of the visibility waits while the
// others keep applying writes; its live handler waits and then applies
// what was appended during the rebuild, so it ends equal to the others.
func TestRebuildLiveServesTheOthers(t *testing.T) {
	store := newStore(t)
	other := &sumProjection{name: "other"}
	rebuilt := &heldProjection{sumProjection: &sumProjection{name: "rebuilt"}}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), other, rebuilt)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go engine.Run(ctx)
	waitFor := func(pos uint64) error {
		waitCtx, done := context.WithTimeout(ctx, 5*time.Second)
		defer done()
		return engine.WaitFor(waitCtx, pos)
	}
	if err := waitFor(appendN(t, store, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}

	rebuilt.hold, rebuilt.entered = make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := engine.RebuildLive(ctx, "rebuilt")
		done <- err
	}()
	<-rebuilt.entered // the rebuild is replaying, held mid-way
	if !engine.Status()["rebuilt"].Rebuilding {
		t.Fatal("Status does not report the projection as rebuilding")
	}
	if _, err := engine.RebuildLive(ctx, "rebuilt"); !errors.Is(err, projections.ErrRebuilding) {
		t.Fatalf("a second live rebuild of the same projection: %v", err)
	}
	during := appendN(t, store, 10)
	if err := waitFor(during); err != nil {
		t.Fatalf("a write during the rebuild waits for the rebuilding projection: %v", err)
	}
	if sum, _ := other.state(); sum != 16 {
		t.Fatalf("the other projection has %d during the rebuild, want 16", sum)
	}
	if err := engine.WaitForProjections(ctx, during, "other"); err != nil {
		t.Fatal(err)
	}
	close(rebuilt.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if engine.Status()["rebuilt"].Rebuilding {
		t.Fatal("Status still reports the rebuild after it returned")
	}
	after := appendN(t, store, 100)
	if err := waitFor(after); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*sumProjection{other, rebuilt.sumProjection} {
		if sum, pos := p.state(); sum != 116 || pos != after {
			t.Errorf("projection %s has %d at %d after the live rebuild, want 116 at %d", p.name, sum, pos, after)
		}
	}
	if _, err := engine.RebuildLive(ctx, "nope"); !errors.Is(err, projections.ErrUnknownProjection) {
		t.Fatalf("live rebuild of an unknown projection: %v", err)
	}
}

// failingProjection is a sumProjection whose Apply fails once, at call
// failAt (counting from 1) after arm.
type failingProjection struct {
	*sumProjection
	mu     sync.Mutex
	calls  int
	failAt int
}

func (p *failingProjection) arm(failAt int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls, p.failAt = 0, failAt
}

func (p *failingProjection) Apply(ctx context.Context, events []domain.Event) error {
	p.mu.Lock()
	p.calls++
	fail := p.calls == p.failAt
	p.mu.Unlock()
	if fail {
		return errors.New("fails part-way through the rebuild")
	}
	return p.sumProjection.Apply(ctx, events)
}

// A live rebuild that fails part-way leaves the projection's checkpoint
// behind its live handler's next batch; the handler replays the gap
// before applying it, so no event is skipped.
func TestRebuildLiveThatFailsPartWaySkipsNothing(t *testing.T) {
	store := newStore(t)
	other := &sumProjection{name: "other"}
	flaky := &failingProjection{sumProjection: &sumProjection{name: "flaky"}}
	engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), other, flaky)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go engine.Run(ctx)
	waitFor := func(pos uint64) error {
		waitCtx, done := context.WithTimeout(ctx, 10*time.Second)
		defer done()
		return engine.WaitFor(waitCtx, pos)
	}
	ones := make([]int, 1500) // three chunks of a live replay
	for i := range ones {
		ones[i] = 1
	}
	if err := waitFor(appendN(t, store, ones...)); err != nil {
		t.Fatal(err)
	}
	flaky.arm(2) // the second chunk fails
	if _, err := engine.RebuildLive(ctx, "flaky"); err == nil {
		t.Fatal("the rebuild did not fail")
	}
	if _, pos := flaky.state(); pos == 0 || pos >= 1500 {
		t.Fatalf("the failed rebuild left the checkpoint at %d; the test needs it part-way", pos)
	}
	after := appendN(t, store, 1000)
	if err := waitFor(after); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*sumProjection{other, flaky.sumProjection} {
		if sum, pos := p.state(); sum != 2500 || pos != after {
			t.Errorf("projection %s has %d at %d, want 2500 at %d", p.name, sum, pos, after)
		}
	}
}

// A catch-up reads the checkpoints that share a table in one statement
// (at open, a reader asks eight of one database), asks a store with no
// table itself, and names the first projection of a read that failed.
func TestCatchUpReadsTheCheckpointsOfOneTableAtOnce(t *testing.T) {
	unreadable := errors.New("table unreadable")
	cases := []struct {
		name      string
		tableErr  error
		wantReads int
		wantErr   string
	}{
		{name: "one read for the table, the others asked", wantReads: 1},
		{name: "a failed read names its first projection", tableErr: unreadable, wantReads: 1, wantErr: "projections: jobs checkpoint: table unreadable"},
	}
	ctx := context.Background()
	store := newStore(t) // the cases only read it
	head := appendN(t, store, 1, 2, 3)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table := &checkpointTable{rows: map[string]uint64{"jobs": head, "audit": head}, err: tc.tableErr}
			jobsStore := &keyedStore[job.ReadModelTx]{table: table, name: "jobs"}
			auditStore := &keyedStore[audit.ReadModelTx]{table: table, name: "audit"}
			alone := &sumProjection{name: "alone", pos: head}
			engine := projections.NewEngine(store, slog.New(slog.NewTextHandler(io.Discard, nil)), projections.NewJobs(jobsStore), projections.NewAudit(auditStore), alone)
			err := engine.CatchUp(ctx)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("CatchUp = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if reads, asked := table.count(), jobsStore.asked+auditStore.asked; reads != tc.wantReads || asked != 0 {
				t.Errorf("%d reads of the table and %d checkpoints asked one by one, want %d and 0", reads, asked, tc.wantReads)
			}
			if err != nil {
				return
			}
			for name, st := range engine.Status() {
				if st.Position != head {
					t.Errorf("%s is at %d, want %d", name, st.Position, head)
				}
			}
		})
	}
}

// checkpointTable is a domain.CheckpointTable that counts its reads.
type checkpointTable struct {
	mu    sync.Mutex
	rows  map[string]uint64
	err   error
	reads int
}

func (c *checkpointTable) Checkpoints(_ context.Context, names []string) (map[string]uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if c.err != nil {
		return nil, c.err
	}
	out := map[string]uint64{}
	for _, n := range names {
		out[n] = c.rows[n]
	}
	return out, nil
}

func (c *checkpointTable) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// keyedStore is a read-model store whose checkpoint is a row of table; it
// counts the times its own Checkpoint is asked, and applies nothing.
type keyedStore[Tx any] struct {
	table *checkpointTable
	name  string
	asked int
}

func (s *keyedStore[Tx]) CheckpointKey() (domain.CheckpointTable, string) { return s.table, s.name }
func (s *keyedStore[Tx]) Checkpoint(context.Context) (uint64, error) {
	s.asked++
	return s.table.rows[s.name], nil
}
func (s *keyedStore[Tx]) Apply(context.Context, []domain.Event, func(context.Context, Tx, domain.Event) error) error {
	return errors.New("keyedStore: nothing to apply")
}
func (s *keyedStore[Tx]) Reset(context.Context) error { return nil }
