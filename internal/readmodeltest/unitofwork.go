// Package readmodeltest is the conformance suite of the read-model store
// ports (account.ReadModel, memory.ReadModel, job.ReadModel): the unit of
// work every store implements (domain.ReadModelStore) and each port's
// operations, checked through the queries the commands read the store by.
// An adapter runs it with one line per port, e.g.
//
//	readmodeltest.RunMemories(t, func(t *testing.T) readmodeltest.Memories { return sqlite.NewMemories(openDB(t)) })
//
// Every open must return a fresh, empty store.
package readmodeltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/engram-memory/engram/domain"
)

// op is one write on a port's transaction; apply gives each its own event.
type op[Tx any] func(context.Context, Tx) error

// apply runs ops as one batch of events at positions first, first+1, …
// (each event's operation is ops[position-first]).
func apply[Tx any](ctx context.Context, s domain.ReadModelStore[Tx], first uint64, ops ...op[Tx]) error {
	events := make([]domain.Event, len(ops))
	for i := range ops {
		events[i] = domain.Event{Position: first + uint64(i), Stream: "conformance", Version: uint64(i), Type: "ConformanceStep"}
	}
	return s.Apply(ctx, events, func(ctx context.Context, tx Tx, e domain.Event) error {
		return ops[e.Position-first](ctx, tx)
	})
}

// mustApply is apply that fails the test on an error.
func mustApply[Tx any](t *testing.T, s domain.ReadModelStore[Tx], first uint64, ops ...op[Tx]) {
	t.Helper()
	if err := apply(context.Background(), s, first, ops...); err != nil {
		t.Fatal(err)
	}
}

// exporter is a store that writes its state as canonical bytes (every
// store does: the replay tests compare a rebuild with them).
type exporter interface {
	Export(ctx context.Context, w io.Writer) error
}

// unitOfWork is what the unit-of-work checks need of a port: a write
// that makes item i visible, and a query that tells whether it is.
type unitOfWork[Tx any] struct {
	open func(t *testing.T) domain.ReadModelStore[Tx]
	// put writes item i; seen reports whether item i is visible.
	put  func(ctx context.Context, tx Tx, i int) error
	seen func(t *testing.T, s domain.ReadModelStore[Tx], i int) bool
}

var errInjected = errors.New("injected failure")

// run checks domain.ReadModelStore's contract: the checkpoint, skipping
// what it covers, all-or-nothing batches, big batches and Reset.
func (u unitOfWork[Tx]) run(t *testing.T) {
	ctx := context.Background()
	put := func(i int) op[Tx] { return func(ctx context.Context, tx Tx) error { return u.put(ctx, tx, i) } }
	checkpoint := func(t *testing.T, s domain.ReadModelStore[Tx], want uint64) {
		t.Helper()
		got, err := s.Checkpoint(ctx)
		if err != nil || got != want {
			t.Fatalf("checkpoint = %d, %v; want %d", got, err, want)
		}
	}

	t.Run("CheckpointAdvancesWithTheBatch", func(t *testing.T) {
		s := u.open(t)
		checkpoint(t, s, 0)
		mustApply(t, s, 1, put(1), put(2))
		checkpoint(t, s, 2)
		if !u.seen(t, s, 1) || !u.seen(t, s, 2) {
			t.Fatal("a committed batch's writes are not visible")
		}
	})

	t.Run("EventsAtOrBelowTheCheckpointAreSkipped", func(t *testing.T) {
		s := u.open(t)
		mustApply(t, s, 1, put(1), put(2))
		calls := 0
		counted := func(i int) op[Tx] {
			return func(ctx context.Context, tx Tx) error { calls++; return u.put(ctx, tx, i) }
		}
		// Redelivered whole, then overlapping the checkpoint.
		mustApply(t, s, 1, counted(1), counted(2))
		if calls != 0 {
			t.Fatalf("redelivered events were applied again (%d calls)", calls)
		}
		mustApply(t, s, 2, counted(2), counted(3))
		if calls != 1 || !u.seen(t, s, 3) {
			t.Fatalf("overlapping batch: %d calls, want 1 (the event after the checkpoint)", calls)
		}
		checkpoint(t, s, 3)
	})

	t.Run("AFailedBatchKeepsNothing", func(t *testing.T) {
		s := u.open(t)
		mustApply(t, s, 1, put(1))
		fail := func(ctx context.Context, tx Tx) error { return errInjected }
		err := apply(ctx, s, 2, put(2), put(3), fail)
		if !errors.Is(err, errInjected) {
			t.Fatalf("Apply = %v, want the operation's error (wrapped)", err)
		}
		checkpoint(t, s, 1)
		if u.seen(t, s, 2) || u.seen(t, s, 3) {
			t.Fatal("writes of a failed batch are visible")
		}
		if !u.seen(t, s, 1) {
			t.Fatal("a failed batch undid an earlier one")
		}
		// The retry applies the batch whole.
		mustApply(t, s, 2, put(2), put(3), put(4))
		checkpoint(t, s, 4)
		if !u.seen(t, s, 2) || !u.seen(t, s, 4) {
			t.Fatal("the retried batch is not visible")
		}
	})

	t.Run("ABatchOfAThousandEvents", func(t *testing.T) {
		s := u.open(t)
		ops := make([]op[Tx], 1000)
		for i := range ops {
			ops[i] = put(i + 1)
		}
		mustApply(t, s, 1, ops...)
		checkpoint(t, s, 1000)
		for _, i := range []int{1, 500, 1000} {
			if !u.seen(t, s, i) {
				t.Fatalf("item %d of a big batch is not visible", i)
			}
		}
	})

	t.Run("ExportIsTheStateWhateverTheBatches", func(t *testing.T) {
		export := func(t *testing.T, s domain.ReadModelStore[Tx]) string {
			t.Helper()
			var buf bytes.Buffer
			if err := s.(exporter).Export(ctx, &buf); err != nil {
				t.Fatal(err)
			}
			return buf.String()
		}
		s := u.open(t)
		if got := export(t, s); got != "" {
			t.Fatalf("export of an empty store = %q", got)
		}
		mustApply(t, s, 1, put(1))
		one := export(t, s)
		mustApply(t, s, 2, put(2), put(3))
		whole := export(t, s)
		if one == "" || one == whole {
			t.Fatalf("export does not follow the state: after one item %q, after three %q", one, whole)
		}
		if again := export(t, s); again != whole {
			t.Fatalf("two exports of one state differ:\n%s\n---\n%s", whole, again)
		}
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		for i := 3; i >= 1; i-- { // other batches, other write order: the same state
			mustApply(t, s, uint64(4-i), put(i))
		}
		if replayed := export(t, s); replayed != whole {
			t.Fatalf("export after a replay differs:\n%s\n---\n%s", whole, replayed)
		}
	})

	t.Run("ResetDropsStateAndCheckpoint", func(t *testing.T) {
		s := u.open(t)
		mustApply(t, s, 1, put(1))
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		checkpoint(t, s, 0)
		if u.seen(t, s, 1) {
			t.Fatal("state survived Reset")
		}
		mustApply(t, s, 1, put(1))
		if !u.seen(t, s, 1) {
			t.Fatal("replay after Reset is not visible")
		}
	})
}

// id names item i of a unit-of-work check.
func id(prefix string, i int) string { return fmt.Sprintf("%s-%04d", prefix, i) }
