package sqlite

import (
	"slices"
	"sync"

	"github.com/engram-memory/engram/domain"
)

// pageCache shares recent ReadAll pages among the projections' log
// subscribers. Every projection follows the log on its own, so without it
// each page is read and scanned from SQLite once per projection: eight
// times while ingesting (the projections wake on the same append and read
// the same page) and during a rebuild (they advance in step, one writer
// transaction each).
//
// A full page never changes: positions are committed once, in order. A
// shorter page is the tail of the log as it was read, so it is served only
// while this store has committed nothing since (the commit generation is
// unchanged); a subscriber that took its wake-up channel before reading
// still wakes for a commit that follows, and reads on from the page's
// end. Empty pages are not kept. The cache holds at most maxBytes of
// payload and evicts the oldest pages first.
//
// The subscribers wake on the same append at once, so they also miss the
// cache at once: a read of a page that another subscriber is reading at
// the same commit generation waits for that read instead of running the
// same query again (at 1,000 memories a batch, the duplicate reads were
// most of the ~12% of a fill's CPU spent reading the log).
type pageCache struct {
	mu       sync.Mutex
	pages    []cachedPage // oldest first
	bytes    int
	maxBytes int
	reading  map[pageKey]*pageRead
}

// pageKey names a read of the log: a page at a commit generation.
type pageKey struct {
	after uint64
	limit int
	gen   uint64
}

// pageRead is a read in progress; done is closed when events and err are
// set.
type pageRead struct {
	done   chan struct{}
	events []domain.Event
	err    error
}

type cachedPage struct {
	after  uint64
	limit  int
	gen    uint64
	bytes  int
	events []domain.Event
}

// pageCacheBytes bounds the cache: a few pages of 1,000 events with
// 384-dimension vectors (~4 KB of JSON each), many more of smaller ones.
const pageCacheBytes = 32 << 20

// eventOverhead approximates an event's bytes beyond its payload (ids,
// stream, type, the struct itself).
const eventOverhead = 256

func newPageCache(maxBytes int) *pageCache {
	return &pageCache{maxBytes: maxBytes, reading: map[pageKey]*pageRead{}}
}

// read returns the page (after, limit) at commit generation gen: from the
// cache, from a read of it at gen already in progress, or else from read,
// whose page it keeps. A read at gen sees every commit up to gen, so
// sharing it loses no wake-up. Should a shared read fail (its caller's
// context ended), the waiters read for themselves.
func (c *pageCache) read(after uint64, limit int, gen uint64, read func() ([]domain.Event, error)) ([]domain.Event, error) {
	if events, ok := c.get(after, limit, gen); ok {
		return events, nil
	}
	key := pageKey{after: after, limit: limit, gen: gen}
	c.mu.Lock()
	if r, ok := c.reading[key]; ok {
		c.mu.Unlock()
		<-r.done
		if r.err != nil {
			return read()
		}
		return slices.Clone(r.events), nil
	}
	r := &pageRead{done: make(chan struct{})}
	c.reading[key] = r
	c.mu.Unlock()

	r.events, r.err = read()
	if r.err == nil {
		c.put(after, limit, gen, r.events)
	}
	c.mu.Lock()
	delete(c.reading, key)
	c.mu.Unlock()
	close(r.done)
	// The waiters copy r.events after done; the caller owns its copy.
	return slices.Clone(r.events), r.err
}

// get returns a copy of the cached page (after, limit) if it is still the
// log's answer at commit generation gen.
func (c *pageCache) get(after uint64, limit int, gen uint64) ([]domain.Event, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.pages) - 1; i >= 0; i-- {
		p := &c.pages[i]
		if p.after == after && p.limit == limit && (len(p.events) == limit || p.gen == gen) {
			// A copy of the slice: callers own what ReadAll returns.
			return slices.Clone(p.events), true
		}
	}
	return nil, false
}

// put keeps a page read at commit generation gen.
func (c *pageCache) put(after uint64, limit int, gen uint64, events []domain.Event) {
	if len(events) == 0 {
		return
	}
	size := 0
	for _, e := range events {
		size += len(e.Payload) + eventOverhead
	}
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.pages {
		if c.pages[i].after == after && c.pages[i].limit == limit {
			c.bytes -= c.pages[i].bytes
			c.pages = slices.Delete(c.pages, i, i+1)
			break
		}
	}
	drop := 0
	for c.bytes+size > c.maxBytes {
		c.bytes -= c.pages[drop].bytes
		drop++
	}
	c.pages = append(slices.Delete(c.pages, 0, drop), cachedPage{after: after, limit: limit, gen: gen, bytes: size, events: slices.Clone(events)})
	c.bytes += size
}
