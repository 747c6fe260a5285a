package vectorindex

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
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

// Options tune the index; zero fields take the defaults shown.
type Options struct {
	// ANNThreshold is the number of live vectors at which a collection gets
	// an HNSW graph. The default depends on the dimension: 20,000 vectors at
	// 384 dims, 5,000 at 1536, i.e. a graph once an exact scan would read
	// more than ~30 MB (~1 ms). Negative: never, always scan exactly.
	ANNThreshold int
	// M is the HNSW degree (default 16; layer 0 allows 2M).
	M int
	// EfConstruction is the beam width while building (default 100).
	EfConstruction int
	// EfSearch is the minimum beam width of a search (default 64); a search
	// for k uses max(k, EfSearch).
	EfSearch int
	// CompactFraction: once tombstones exceed this share of a graph
	// collection's slots it is compacted and its graph rebuilt (default 0.25).
	CompactFraction float64
	// ScanWorkers is how many goroutines share one exact scan of a big
	// collection (default min(2, GOMAXPROCS)).
	ScanWorkers int
	// BuildWorkers is how many collections build graphs at once (default 1,
	// leaving the other core to searches during start-up).
	BuildWorkers int
	// Seed varies the graphs' random levels; builds are deterministic for a
	// given seed, collection name and insertion order.
	Seed uint64

	forceWalk bool // tests: walk the graph even when a scan looks cheaper
}

// defaultANNFloats is the default threshold in floats (20k×384 = 30 MB):
// scan time is proportional to vectors×dim, so the threshold is too.
const defaultANNFloats = 20000 * 384

// annThreshold is the live count at which a collection of dim gets a graph;
// 0 means never.
func (o Options) annThreshold(dim int) int {
	switch {
	case o.ANNThreshold < 0:
		return 0
	case o.ANNThreshold > 0:
		return o.ANNThreshold
	}
	return max(1000, defaultANNFloats/max(dim, 1))
}

func (o Options) withDefaults() Options {
	if o.M <= 1 {
		o.M = 16
	}
	if o.EfConstruction <= 0 {
		o.EfConstruction = 100
	}
	if o.EfSearch <= 0 {
		o.EfSearch = 64
	}
	if o.CompactFraction <= 0 {
		o.CompactFraction = 0.25
	}
	if o.ScanWorkers <= 0 {
		o.ScanWorkers = min(2, runtime.GOMAXPROCS(0))
	}
	if o.BuildWorkers <= 0 {
		o.BuildWorkers = 1
	}
	return o
}

// Index is a set of independent collections. All methods are safe for
// concurrent use: each collection has its own RWMutex, so searches run in
// parallel and a write blocks only its own collection.
type Index struct {
	opts Options

	mu   sync.RWMutex
	cols map[string]*collection

	scratch sync.Pool // *scratch for graph searches

	buildSlots chan struct{} // semaphore: BuildWorkers graph builds at a time
	stop       chan struct{} // closed by Close
	closeOnce  sync.Once

	bgMu   sync.Mutex
	bgN    int           // running indexers
	bgIdle chan struct{} // closed whenever bgN == 0
}

// New returns an empty index.
func New(opts Options) *Index {
	idle := make(chan struct{})
	close(idle)
	ix := &Index{
		opts:       opts.withDefaults(),
		cols:       make(map[string]*collection),
		buildSlots: make(chan struct{}, max(1, opts.withDefaults().BuildWorkers)),
		stop:       make(chan struct{}),
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
	c.dim = dim
	c.upsert(batch)
	ix.afterWrite(c)
	return nil
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
	if c.dropped {
		return
	}
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
