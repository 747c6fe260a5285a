package sqlite_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventlog"
	"github.com/engram-memory/engram/infra/eventstoretest"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
)

// openDB opens a new database, copied from the migrated template: the
// tests of migrating open an empty directory instead.
func openDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestEventStoreConformance(t *testing.T) {
	open := func(t *testing.T) domain.EventStore {
		return sqlite.NewEventStore(openDB(t), 50*time.Millisecond)
	}
	eventstoretest.Run(t, open)
	eventstoretest.RunAtomicAcrossStreams(t, open)
}

func TestEventStreamsAndStreamVersion(t *testing.T) {
	ctx := context.Background()
	store := sqlite.NewEventStore(openDB(t), 50*time.Millisecond)
	if v, err := store.StreamVersion(ctx, "a"); err != nil || v != -1 {
		t.Fatalf("version of a missing stream = %d, %v; want -1", v, err)
	}
	ev := func(id string) domain.NewEvent {
		return domain.NewEvent{ID: id, Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}
	}
	if _, err := store.Append(ctx, "a", domain.ExpectNoStream, []domain.NewEvent{ev("e1"), ev("e2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, "b", domain.ExpectNoStream, []domain.NewEvent{ev("e3")}); err != nil {
		t.Fatal(err)
	}
	if v, err := store.StreamVersion(ctx, "a"); err != nil || v != 1 {
		t.Fatalf("version of a = %d, %v; want 1", v, err)
	}
	ids := []string{"e1", "e3", "missing"}
	for i := range 600 { // more than one IN (...) chunk
		ids = append(ids, fmt.Sprintf("absent-%d", i))
	}
	got, err := store.EventStreams(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["e1"] != "a" || got["e3"] != "b" {
		t.Fatalf("EventStreams = %v, want e1→a, e3→b", got)
	}
	places, err := store.EventPlaces(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(places) != 2 || places["e1"] != (domain.EventPlace{Stream: "a", Position: 1}) || places["e3"] != (domain.EventPlace{Stream: "b", Position: 3}) {
		t.Fatalf("EventPlaces = %v, want e1 at a/1, e3 at b/3", places)
	}
	for _, c := range []struct {
		stream, typ string
		want        uint64
	}{{"a", "T", 2}, {"b", "T", 3}, {"a", "Other", 0}, {"missing", "T", 0}} {
		if pos, err := store.LastOfType(ctx, c.stream, c.typ); err != nil || pos != c.want {
			t.Fatalf("LastOfType(%s, %s) = %d, %v; want %d", c.stream, c.typ, pos, err, c.want)
		}
	}
}

// ReadAll answers from the page cache only while the page is still the
// log's answer: a short page read before an append grows with it.
func TestReadAllSeesAppendsAfterACachedShortPage(t *testing.T) {
	ctx := context.Background()
	store := sqlite.NewEventStore(openDB(t), 50*time.Millisecond)
	ev := func(id string) domain.NewEvent {
		return domain.NewEvent{ID: id, Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}
	}
	if _, err := store.Append(ctx, "a", domain.ExpectAny, []domain.NewEvent{ev("e1"), ev("e2")}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second read is the cached one
		if page, err := store.ReadAll(ctx, 0, 10); err != nil || len(page) != 2 {
			t.Fatalf("ReadAll = %d events, %v; want 2", len(page), err)
		}
	}
	if _, err := store.Append(ctx, "a", domain.ExpectAny, []domain.NewEvent{ev("e3")}); err != nil {
		t.Fatal(err)
	}
	page, err := store.ReadAll(ctx, 0, 10)
	if err != nil || len(page) != 3 || page[2].ID != "e3" {
		t.Fatalf("ReadAll after an append = %d events, %v; want e1, e2, e3", len(page), err)
	}
}

// A range longer than a page of the store is read page after page, the
// last cut at the bound (pages of 4 here instead of FollowBatch: a real
// log of 10 events instead of 8,000).
func TestReadRangeReadsPageAfterPage(t *testing.T) {
	ctx := context.Background()
	store := sqlite.NewEventStore(openDB(t), 50*time.Millisecond)
	events := make([]domain.NewEvent, 10)
	for i := range events {
		events[i] = domain.NewEvent{Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}
	}
	res, err := store.Append(ctx, "a", domain.ExpectNoStream, events)
	if err != nil {
		t.Fatal(err)
	}
	readPagesOf4 := func(ctx context.Context, after uint64, limit int) ([]domain.Event, error) {
		return store.ReadAll(ctx, after, min(limit, 4))
	}
	until := res.LastPosition - 1
	var pages []int
	var last uint64
	err = eventlog.ReadRange(ctx, 0, until, readPagesOf4, func(_ context.Context, page []domain.Event) error {
		pages = append(pages, len(page))
		for _, e := range page {
			if e.Position != last+1 {
				t.Fatalf("event at %d after %d", e.Position, last)
			}
			last = e.Position
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != until || !slices.Equal(pages, []int{4, 4, 1}) {
		t.Fatalf("read up to %d in pages of %v, want up to %d in pages of [4 4 1]", last, pages, until)
	}
}
