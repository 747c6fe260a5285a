package sqlite

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventlog"
)

func pageOf(from, n, payload int) []domain.Event {
	events := make([]domain.Event, n)
	for i := range events {
		events[i] = domain.Event{Position: uint64(from + i), ID: fmt.Sprint(from + i), Payload: make([]byte, payload)}
	}
	return events
}

func TestPageCache(t *testing.T) {
	tests := []struct {
		name    string
		put     []domain.Event
		limit   int
		putGen  uint64
		getGen  uint64
		wantHit bool
	}{
		{name: "a full page is served at any later generation", put: pageOf(1, 4, 10), limit: 4, putGen: 1, getGen: 9, wantHit: true},
		{name: "a short page is served while nothing was committed", put: pageOf(1, 3, 10), limit: 4, putGen: 1, getGen: 1, wantHit: true},
		{name: "a short page is stale once something was committed", put: pageOf(1, 3, 10), limit: 4, putGen: 1, getGen: 2, wantHit: false},
		{name: "an empty page is never kept", put: nil, limit: 4, putGen: 1, getGen: 1, wantHit: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newPageCache(1 << 20)
			c.put(0, tc.limit, tc.putGen, tc.put)
			got, ok := c.get(0, tc.limit, tc.getGen)
			if ok != tc.wantHit {
				t.Fatalf("hit = %v, want %v", ok, tc.wantHit)
			}
			if ok && len(got) != len(tc.put) {
				t.Fatalf("got %d events, want %d", len(got), len(tc.put))
			}
			if _, ok := c.get(0, tc.limit+1, tc.putGen); ok {
				t.Fatal("a page was served for another limit")
			}
			if _, ok := c.get(1, tc.limit, tc.putGen); ok {
				t.Fatal("a page was served for another position")
			}
		})
	}
}

func TestPageCacheCallersOwnWhatTheyGet(t *testing.T) {
	c := newPageCache(1 << 20)
	c.put(0, 2, 1, pageOf(1, 2, 1))
	got, _ := c.get(0, 2, 1)
	got[0].ID = "changed"
	again, _ := c.get(0, 2, 1)
	if again[0].ID != "1" {
		t.Fatalf("a caller's change reached the cache: %q", again[0].ID)
	}
}

func TestPageCacheEvictsOldestBeyondItsBound(t *testing.T) {
	pageBytes := 2 * (100 + eventOverhead)
	c := newPageCache(3 * pageBytes)
	for i := range 5 {
		c.put(uint64(2*i), 2, 1, pageOf(2*i+1, 2, 100))
	}
	for i := range 5 {
		_, ok := c.get(uint64(2*i), 2, 1)
		if want := i >= 2; ok != want {
			t.Errorf("page %d cached = %v, want %v", i, ok, want)
		}
	}
	if c.bytes > c.maxBytes {
		t.Fatalf("cache holds %d bytes, bound %d", c.bytes, c.maxBytes)
	}
	c.put(100, 2, 1, pageOf(101, 2, 10*pageBytes)) // bigger than the whole cache
	if _, ok := c.get(100, 2, 1); ok {
		t.Fatal("a page bigger than the bound was kept")
	}
}

// The projections' subscribers wake on the same append and ask for the
// same page at once: one of them reads the log, the others wait for its
// page; each gets its own copy.
func TestPageCacheReadsAPageOnceForConcurrentCallers(t *testing.T) {
	const callers = 8
	c := newPageCache(1 << 20)
	var reads atomic.Int32
	release := make(chan struct{})
	read := func() ([]domain.Event, error) {
		reads.Add(1)
		<-release
		return pageOf(11, 3, 10), nil // a short page: the tail of the log
	}
	got := make([][]domain.Event, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			var err error
			if got[i], err = c.read(10, 100, 7, read); err != nil {
				t.Error(err)
			}
		})
	}
	time.Sleep(100 * time.Millisecond) // let every caller reach the cache
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d concurrent callers read the log %d times, want once", callers, n)
	}
	for i, events := range got {
		if len(events) != 3 || events[0].Position != 11 {
			t.Fatalf("caller %d got %+v", i, events)
		}
	}
	got[0][0].Position = 99
	if got[1][0].Position != 11 {
		t.Fatal("callers share one slice")
	}
}

// A read that fails (its caller's context ended) is not shared: a caller
// that waited for it reads for itself.
func TestPageCacheWaiterReadsAgainWhenTheSharedReadFails(t *testing.T) {
	c := newPageCache(1 << 20)
	release := make(chan struct{})
	leader := make(chan error, 1)
	go func() {
		_, err := c.read(0, 10, 1, func() ([]domain.Event, error) {
			<-release
			return nil, errors.New("context canceled")
		})
		leader <- err
	}()
	for {
		c.mu.Lock()
		n := len(c.reading)
		c.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	own := make(chan []domain.Event, 1)
	go func() {
		events, err := c.read(0, 10, 1, func() ([]domain.Event, error) { return pageOf(1, 2, 10), nil })
		if err != nil {
			t.Error(err)
		}
		own <- events
	}()
	time.Sleep(50 * time.Millisecond)
	close(release)
	if err := <-leader; err == nil {
		t.Fatal("the failed read reported no error to its caller")
	}
	if events := <-own; len(events) != 2 {
		t.Fatalf("the waiter got %d events, want its own read's 2", len(events))
	}
}

// TestAppendSeedsThePagesCaughtUpSubscribersReadNext: the events an append
// commits are in the page cache as the pages a subscriber caught up before
// it reads next (eventlog.Follow's), equal to what SQLite returns for them,
// so the subscribers do not read back what was just written.
func TestAppendSeedsThePagesCaughtUpSubscribersReadNext(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := NewEventStore(db, time.Second)
	newEvents := func(n int) []domain.NewEvent {
		events := make([]domain.NewEvent, n)
		for i := range events {
			events[i] = domain.NewEvent{Type: "Noted", SchemaVersion: 2, RequestID: "req",
				Actor: domain.Actor{Kind: domain.ActorKind("user"), ID: "u", UserID: "u"}, Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}
		}
		return events
	}
	fromSQLite := func(after uint64, limit int) []domain.Event {
		rows, err := db.queryHot(ctx, `SELECT `+eventColumns+` FROM events WHERE position > ? ORDER BY position LIMIT ?`, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		events, err := scanEvents(rows)
		if err != nil {
			t.Fatal(err)
		}
		return events
	}
	var head uint64
	for _, c := range []struct {
		name  string
		count int
	}{
		{"one event", 1},
		{"a short page", 7},
		{"more than a page", eventlog.FollowBatch + 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			sent := newEvents(c.count)
			res, err := store.Append(ctx, "s-"+c.name, domain.ExpectAny, sent)
			if err != nil {
				t.Fatal(err)
			}
			sent[0].Payload[0] = 'X' // the cache keeps its own copy
			gen := store.commits.Load()
			for after := head; after < res.LastPosition; after += eventlog.FollowBatch {
				cached, ok := store.pages.get(after, eventlog.FollowBatch, gen)
				if !ok {
					t.Fatalf("page after %d not seeded", after)
				}
				if want := fromSQLite(after, eventlog.FollowBatch); !reflect.DeepEqual(cached, want) {
					t.Fatalf("page after %d: cached %+v\nSQLite %+v", after, cached[0], want[0])
				}
			}
			head = res.LastPosition
		})
	}
}
