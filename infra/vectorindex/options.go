package vectorindex

import "runtime"

// Options tune the index; zero fields take the defaults shown.
type Options struct {
	// ANNThreshold is the number of live vectors at which a collection gets
	// an HNSW graph. The default depends on the dimension: 20,000 vectors at
	// 384 dims, 5,000 at 1536, i.e. a graph once an exact scan would read
	// more than ~30 MB (~1 ms). Negative: never, always scan exactly.
	ANNThreshold int
	// M is the HNSW degree (default 16; layer 0 allows 1.5M).
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
	// MaxTail bounds how many slots written since a graph collection's
	// current graph was started may wait for the background build.
	// Searches scan unindexed slots exactly, so the bound caps what writers
	// that outrun the build can add to a search; an Upsert that would leave
	// more waits until the builder has caught up (back-pressure). The
	// default is the ANN threshold: such a tail costs a search about one
	// exact scan at the threshold (~1 ms). Slots that were there when the
	// graph was started (crossing the threshold, a compaction) are the
	// build's backlog and are not counted, and writes are not held back
	// until the graph has first caught up (a bulk load, such as the fill
	// of an in-process index at start-up). Negative: unbounded.
	MaxTail int
	// BuildWhileWriting lets a graph build run while its collection is
	// being written. By default a build holds off while writes keep
	// coming (a write in the last writeQuiet) and its collection's new
	// tail is under half of MaxTail: on a small machine the build
	// otherwise takes a core from the writes, and ingest slows down as
	// the agent grows. Searches stay exact meanwhile (they scan the tail).
	// An offline rebuild sets it: there nothing else wants the spare core.
	BuildWhileWriting bool
	// Quantize stores the vectors of graph collections (those past the ANN
	// threshold) as int8 codes, a quarter of the heap of float32: graph
	// walks and scans rank by the codes, and the best 4×k candidates are
	// rescored against the full-precision vectors, which move to an
	// unlinked file in FloatDir (the kernel's page cache, not the heap).
	// Hits carry exact scores. Smaller collections stay full precision.
	Quantize bool
	// FloatDir is where quantised collections keep their full-precision
	// vectors (default: os.TempDir()).
	FloatDir string
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

// maxTail is the tail bound of a collection of dim; 0 means unbounded.
func (o Options) maxTail(dim int) int {
	switch {
	case o.MaxTail < 0:
		return 0
	case o.MaxTail > 0:
		return o.MaxTail
	}
	return o.annThreshold(dim)
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
