package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

// groupAppend is one append of a group-commit scenario and the outcome it
// must get.
type groupAppend struct {
	stream   string
	expected int64
	events   []domain.NewEvent
	// cancelled: its caller gives up while it waits in the queue.
	cancelled bool
	wantErr   error // nil: must commit
}

func namedEvents(ids ...string) []domain.NewEvent {
	out := make([]domain.NewEvent, len(ids))
	for i, id := range ids {
		out[i] = domain.NewEvent{ID: id, Type: "Tested", SchemaVersion: 1, Payload: []byte(fmt.Sprintf(`{"n":%q}`, id))}
	}
	return out
}

// queueWhileWriterBusy holds the writer, queues appends one by one (each
// is in the queue before the next starts, so their order is known),
// cancels the callers of those marked cancelled, then frees the writer and
// returns each append's outcome in queue order.
func queueWhileWriterBusy(t *testing.T, s *EventStore, appends []groupAppend) ([]domain.AppendResult, []error) {
	t.Helper()
	ctx := context.Background()
	release := make(chan struct{})
	held := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		writerDone <- s.db.WriteTx(ctx, func(*sql.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	results := make([]domain.AppendResult, len(appends))
	errs := make([]error, len(appends))
	finished := make(chan int, len(appends))
	var cancels []context.CancelFunc
	for i, a := range appends {
		appendCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		if a.cancelled {
			cancels = append(cancels, cancel)
		}
		go func() {
			results[i], errs[i] = s.Append(appendCtx, a.stream, a.expected, a.events)
			finished <- i
		}()
		waitFor(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.queue) == i+1
		})
	}
	for _, cancel := range cancels {
		cancel()
	}
	close(release)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	for range appends {
		<-finished
	}
	return results, errs
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// walFrames is the number of frames in the WAL file: every commit writes
// at least one, so fewer frames than appends proves they shared commits.
func walFrames(t *testing.T, db *DB) int64 {
	t.Helper()
	var pageSize int64
	if err := db.read.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(db.path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	const walHeader, frameHeader = 32, 24
	if fi.Size() < walHeader {
		return 0
	}
	return (fi.Size() - walHeader) / (frameHeader + pageSize)
}

func TestGroupCommitGivesEachAppendItsOwnOutcome(t *testing.T) {
	for _, durability := range []Durability{Durable, Relaxed} {
		t.Run(string(durability), func(t *testing.T) {
			ctx := context.Background()
			db, err := Open(ctx, t.TempDir(), Options{Durability: durability})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			s := NewEventStore(db, time.Second)
			// "old" is at version 1 and holds event id "taken".
			if _, err := s.Append(ctx, "old", domain.ExpectNoStream, namedEvents("o0", "taken")); err != nil {
				t.Fatal(err)
			}
			if _, err := db.write.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				t.Fatal(err)
			}

			appends := []groupAppend{
				{stream: "a", expected: domain.ExpectNoStream, events: namedEvents("a0", "a1")},
				{stream: "b", expected: domain.ExpectAny, events: namedEvents("b0")},
				// Sees the append before it in the same group.
				{stream: "a", expected: 1, events: namedEvents("a2")},
				// Stale: "old" is at 1.
				{stream: "old", expected: 0, events: namedEvents("stale"), wantErr: domain.ErrWrongExpectedVersion},
				{stream: "old", expected: 1, events: namedEvents("o2", "o3")},
				// Fails after its first event is written: the savepoint
				// must take "c0" back with it.
				{stream: "c", expected: domain.ExpectAny, events: namedEvents("c0", "taken"), wantErr: errAny},
				// Its caller went away before the commit: not written.
				{stream: "a", expected: domain.ExpectAny, events: namedEvents("gone"), cancelled: true, wantErr: context.Canceled},
				{stream: "a", expected: domain.ExpectAny, events: namedEvents("a3")},
				// Its expected version must not count the failed append.
				{stream: "c", expected: domain.ExpectNoStream, events: namedEvents("c1")},
			}
			for i := range 24 {
				appends = append(appends, groupAppend{stream: fmt.Sprintf("s%d", i%5), expected: domain.ExpectAny, events: namedEvents(fmt.Sprintf("s%d-%d", i%5, i))})
			}
			results, errs := queueWhileWriterBusy(t, s, appends)

			if frames := walFrames(t, db); frames >= int64(len(appends)) {
				t.Errorf("%d appends wrote %d WAL frames: they were not committed together", len(appends), frames)
			}
			wantPos := uint64(2) // "old" holds positions 1 and 2
			for i, a := range appends {
				switch {
				case a.wantErr == nil && errs[i] != nil:
					t.Errorf("append %d (%s): %v", i, a.stream, errs[i])
				case a.wantErr == errAny && errs[i] == nil, a.wantErr != nil && a.wantErr != errAny && !errors.Is(errs[i], a.wantErr):
					t.Errorf("append %d (%s): error %v, want %v", i, a.stream, errs[i], a.wantErr)
				case a.wantErr == nil:
					wantPos += uint64(len(a.events))
					if results[i].LastPosition != wantPos {
						t.Errorf("append %d (%s): last position %d, want %d (queue order, no gaps)", i, a.stream, results[i].LastPosition, wantPos)
					}
				}
			}

			all, err := s.ReadAll(ctx, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for i, e := range all {
				if e.Position != uint64(i+1) {
					t.Fatalf("event %d has position %d: positions are not contiguous", i, e.Position)
				}
				gotIDs = append(gotIDs, e.ID)
			}
			wantIDs := []string{"o0", "taken"}
			for _, a := range appends {
				if a.wantErr == nil {
					for _, e := range a.events {
						wantIDs = append(wantIDs, e.ID)
					}
				}
			}
			if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
				t.Errorf("log holds\n%v\nwant\n%v", gotIDs, wantIDs)
			}
			for stream, want := range map[string][]string{"a": {"a0", "a1", "a2", "a3"}, "c": {"c1"}, "old": {"o0", "taken", "o2", "o3"}} {
				events, err := s.ReadStream(ctx, stream, 0)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for i, e := range events {
					if e.Version != uint64(i) {
						t.Errorf("stream %s: event %s has version %d, want %d", stream, e.ID, e.Version, i)
					}
					got = append(got, e.ID)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("stream %s holds %v, want %v", stream, got, want)
				}
			}
		})
	}
}

// errAny marks an append that must fail, whatever the error.
var errAny = errors.New("any error")

// The log's commits run at synchronous=FULL when durable (the commit
// returns after the WAL is synced), at NORMAL when relaxed; the read
// models' commits run at NORMAL either way.
func TestDurabilitySetsSynchronousOfTheLogCommits(t *testing.T) {
	const normal, full = 1, 2
	for _, tc := range []struct {
		durability  Durability
		log, models int
	}{
		{Durable, full, normal},
		{"", full, normal}, // the default is durable
		{Relaxed, normal, normal},
	} {
		t.Run(string(tc.durability), func(t *testing.T) {
			ctx := context.Background()
			db, err := Open(ctx, t.TempDir(), Options{Durability: tc.durability})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			synchronous := func(run func(context.Context, func(*sql.Tx) error) error) int {
				var level int
				if err := run(ctx, func(tx *sql.Tx) error {
					return tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&level)
				}); err != nil {
					t.Fatal(err)
				}
				return level
			}
			logTx := func(ctx context.Context, fn func(*sql.Tx) error) error {
				_, err := db.logTx(ctx, fn)
				return err
			}
			if got := synchronous(logTx); got != tc.log {
				t.Errorf("log commit: synchronous = %d, want %d", got, tc.log)
			}
			if got := synchronous(db.WriteTx); got != tc.models {
				t.Errorf("read-model commit after a log commit: synchronous = %d, want %d", got, tc.models)
			}
		})
	}
}

func TestOpenRejectsAnUnknownDurability(t *testing.T) {
	_, err := Open(context.Background(), t.TempDir(), Options{Durability: "sometimes"})
	if err == nil || !strings.Contains(err.Error(), `"sometimes"`) {
		t.Fatalf("Open with durability %q: %v, want an error naming it", "sometimes", err)
	}
}

// commitLog records what the event store reports of its group commits.
type commitLog struct {
	mu      sync.Mutex
	sizes   []int
	commits []time.Duration
}

func (c *commitLog) GroupCommitted(appends int, commit time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sizes = append(c.sizes, appends)
	c.commits = append(c.commits, commit)
}

// TestGroupCommitIsObserved: appends queued while the writer is busy are
// committed as one group, and the observer hears of it once, with the
// number of appends it committed (a failed one is not counted) and the
// time of its commit.
func TestGroupCommitIsObserved(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, t.TempDir(), Options{Durability: Durable})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := NewEventStore(db, time.Second)
	observed := &commitLog{}
	s.ObserveCommits(observed)
	if _, err := s.Append(ctx, "alone", domain.ExpectNoStream, namedEvents("first")); err != nil {
		t.Fatal(err)
	}
	appends := []groupAppend{
		{stream: "alone", expected: 5, events: namedEvents("stale"), wantErr: domain.ErrWrongExpectedVersion},
	}
	for i := range 6 {
		appends = append(appends, groupAppend{stream: fmt.Sprintf("s%d", i), expected: domain.ExpectNoStream, events: namedEvents(fmt.Sprintf("e%d", i))})
	}
	queueWhileWriterBusy(t, s, appends)

	observed.mu.Lock()
	defer observed.mu.Unlock()
	if want := []int{1, 6}; !slices.Equal(observed.sizes, want) {
		t.Errorf("group sizes %v, want %v (the lone append, then the six that succeeded together)", observed.sizes, want)
	}
	for i, d := range observed.commits {
		if d <= 0 {
			t.Errorf("commit %d took %v", i, d)
		}
	}
}
