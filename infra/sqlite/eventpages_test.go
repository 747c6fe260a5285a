package sqlite

import (
	"fmt"
	"testing"

	"github.com/engram-memory/engram/domain"
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
