package vectorindex

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"
)

// Errors returned by Upsert and Search; they are wrapped with details.
var (
	ErrDimensionMismatch = errors.New("vectorindex: dimension mismatch")
	ErrInvalidVector     = errors.New("vectorindex: invalid vector")
	ErrInvalidItem       = errors.New("vectorindex: invalid item")
)

// Item is one memory's vector and the metadata searches filter on.
type Item struct {
	ID        string
	Vector    []float32 // any non-zero length; stored normalised
	Type      string
	Tags      []string
	CreatedAt time.Time
}

// Hit is one search result. Score is the cosine similarity, in [-1, 1].
type Hit struct {
	ID        string
	Score     float32
	CreatedAt time.Time
}

// Index is a set of independent collections. All methods are safe for
// concurrent use: each collection has its own RWMutex, so searches run in
// parallel and a write blocks only its own collection.
type Index struct {
	opts Options

	mu   sync.RWMutex
	cols map[string]*collection

	scratch sync.Pool // *scratch for graph walks and scans

	buildSlots chan struct{} // semaphore: BuildWorkers graph builds at a time
	stop       chan struct{} // closed by Close
	closeOnce  sync.Once
	// finishing is closed by FinishBuilds: builds no longer hold off for
	// writers.
	finishing  chan struct{}
	finishOnce sync.Once

	snapshotMu sync.Mutex // one snapshot image at a time (snapshot.go)

	bgMu   sync.Mutex
	bgN    int           // running indexers
	bgIdle chan struct{} // closed whenever bgN == 0
}

// New returns an empty index.
func New(opts Options) *Index {
	opts = opts.withDefaults()
	idle := make(chan struct{})
	close(idle)
	ix := &Index{
		opts:       opts,
		cols:       make(map[string]*collection),
		buildSlots: make(chan struct{}, opts.BuildWorkers),
		stop:       make(chan struct{}),
		finishing:  make(chan struct{}),
		bgIdle:     idle,
	}
	ix.scratch.New = func() any { return new(scratch) }
	return ix
}

// Close stops background graph builds and waits for them. Collections whose
// graph was not finished keep serving exact scans.
func (ix *Index) Close() {
	ix.closeOnce.Do(func() { close(ix.stop) })
	<-ix.idle()
}

// WaitIndexed blocks until no graph build is running (or ctx ends). Start-up
// code and tests use it after a bulk load.
func (ix *Index) WaitIndexed(ctx context.Context) error {
	for {
		ch := ix.idle()
		select {
		case <-ch:
			ix.bgMu.Lock()
			n := ix.bgN
			ix.bgMu.Unlock()
			if n == 0 {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// FinishBuilds makes the graph builds hold off for writers no more and
// waits for them to finish (or ctx to end): for a process about to save
// its image and stop, whose last writes (a catch-up, a refill) would
// otherwise hold its build off for writeQuiet.
func (ix *Index) FinishBuilds(ctx context.Context) error {
	ix.finishOnce.Do(func() { close(ix.finishing) })
	return ix.WaitIndexed(ctx)
}

func (ix *Index) idle() <-chan struct{} {
	ix.bgMu.Lock()
	defer ix.bgMu.Unlock()
	return ix.bgIdle
}

// Upsert inserts items into collection, replacing items with the same ID.
// The first insert fixes the collection's dimension. The batch is validated
// as a whole first: on error nothing is stored.
func (ix *Index) Upsert(collection string, items ...Item) error {
	if len(items) == 0 {
		return nil
	}
	batch, dim, err := prepare(items)
	if err != nil {
		return err
	}
	for {
		c := ix.collectionFor(collection)
		c.mu.Lock()
		if c.dropped { // lost a race with DropCollection: use the new one
			c.mu.Unlock()
			continue
		}
		err := ix.upsertLocked(c, batch, dim)
		c.mu.Unlock()
		return err
	}
}

func (ix *Index) upsertLocked(c *collection, batch []prepared, dim int) error {
	if c.dim != 0 && c.dim != dim {
		return fmt.Errorf("%w: collection %q holds %d-dimensional vectors, got %d", ErrDimensionMismatch, c.name, c.dim, dim)
	}
	if err := c.checkCodes(batch); err != nil {
		return err
	}
	c.ownArrays()
	c.dim = dim
	if err := c.upsert(batch); err != nil {
		return err
	}
	c.lastWrite = time.Now()
	ix.afterWrite(c)
	ix.waitForTail(c)
	return nil
}

// waitForTail holds the writer (caller holds c's write lock, released
// while waiting) until the graph build has caught up to within the tail
// bound of the slots written since it started, or stopped: a search never
// scans more than Options.MaxTail slots because writers outran the builder.
// A bulk load before the graph has first caught up is not held back: a
// restart's fill of a big agent would otherwise take as long as its graph.
func (ix *Index) waitForTail(c *collection) {
	bound := ix.opts.maxTail(c.dim)
	for bound > 0 && c.caughtUp && c.indexing && !c.dropped && c.newSlots() > bound {
		c.published.Wait()
	}
}

func prepare(items []Item) ([]prepared, int, error) {
	dim := len(items[0].Vector)
	out := make([]prepared, len(items))
	for i, it := range items {
		switch {
		case it.ID == "":
			return nil, 0, fmt.Errorf("%w: item %d has an empty ID", ErrInvalidItem, i)
		case len(it.Tags) > maxTags:
			return nil, 0, fmt.Errorf("%w: item %q has %d tags, at most %d allowed", ErrInvalidItem, it.ID, len(it.Tags), maxTags)
		case len(it.Vector) != dim:
			return nil, 0, fmt.Errorf("%w: item %q has %d dimensions, the batch %d", ErrDimensionMismatch, it.ID, len(it.Vector), dim)
		}
		inv, ok := inverseNorm(it.Vector)
		if !ok {
			return nil, 0, fmt.Errorf("%w: item %q is zero or not finite", ErrInvalidVector, it.ID)
		}
		out[i] = prepared{id: it.ID, vec: it.Vector, inv: inv, typ: it.Type, tags: it.Tags, created: unixNanos(it.CreatedAt)}
	}
	return out, dim, nil
}

// Delete removes ids from collection; unknown ids are ignored.
func (ix *Index) Delete(collection string, ids ...string) {
	c := ix.lookup(collection)
	if c == nil || len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A snapshot's catch-up deletes every memory it re-reads, mostly ones
	// captured after the image, which it does not hold: such a delete
	// changes nothing, so it copies none of the image's arrays.
	if c.dropped || !slices.ContainsFunc(ids, c.holds) {
		return
	}
	c.ownArrays()
	for _, id := range ids {
		c.remove(id)
	}
	ix.afterWrite(c)
}

// DropCollection removes a collection and frees its memory.
func (ix *Index) DropCollection(collection string) {
	ix.mu.Lock()
	c := ix.cols[collection]
	delete(ix.cols, collection)
	ix.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	c.release()
	c.mu.Unlock()
}

// Collections lists the collection keys that start with prefix, sorted.
func (ix *Index) Collections(prefix string) []string {
	ix.mu.RLock()
	var out []string
	for name := range ix.cols {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	ix.mu.RUnlock()
	slices.Sort(out)
	return out
}

// Len is the number of items in collection (0 if it does not exist).
func (ix *Index) Len(collection string) int {
	c := ix.lookup(collection)
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.live()
}

func (ix *Index) lookup(name string) *collection {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cols[name]
}

func (ix *Index) collectionFor(name string) *collection {
	if c := ix.lookup(name); c != nil {
		return c
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	c := ix.cols[name]
	if c == nil {
		c = &collection{name: strings.Clone(name)}
		c.published = sync.NewCond(&c.mu)
		ix.cols[c.name] = c
	}
	return c
}

// graphParams derives a per-collection seed so that two collections loaded
// alike do not share level sequences.
func (ix *Index) graphParams(c *collection) graphParams {
	h := fnv.New64a()
	h.Write([]byte(c.name))
	return graphParams{m: ix.opts.M, efC: ix.opts.EfConstruction, seed: ix.opts.Seed ^ h.Sum64()}
}

// contains reports whether collection holds an item with id.
func (ix *Index) contains(collection, id string) bool {
	c := ix.lookup(collection)
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.slot(id)
	return ok && !c.dropped
}
