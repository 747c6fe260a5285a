package vectorindex

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Snapshot benchmarks: ENGRAM_BENCH_VECTORS memories (default 20,000, so
// that `make bench` stays quick) of ENGRAM_BENCH_DIM dimensions (default
// 100, the default model's) in one collection with a graph, full precision
// and quantised. Below the default ANN threshold (76,800 at 100 dims) the
// threshold is lowered to half the size, so the graph is always there.
// The docs/benchmarks.md figures come from
//
//	ENGRAM_BENCH_VECTORS=100000 go test -run '^$' -bench Snapshot -benchtime 3x -timeout 60m ./infra/vectorindex/
//
// The fixture (the index, its graph built) is made once per mode and
// shared by the snapshot benchmarks; building it is a refill, which takes
// minutes at 100k on a shared 2-core machine.

var snapBench struct {
	sync.Mutex
	fixtures map[bool]*snapFixture
}

type snapFixture struct {
	points []domain.VectorPoint
	port   *Port
	body   []byte
	refill time.Duration // building port: what a start without a snapshot does
}

func benchSnapFixture(b *testing.B, quantize bool) *snapFixture {
	b.Helper()
	snapBench.Lock()
	defer snapBench.Unlock()
	if f := snapBench.fixtures[quantize]; f != nil {
		return f
	}
	points := benchSnapPoints(b)
	start := time.Now()
	port := refill(b, points, snapBenchOptions(points, quantize))
	took := time.Since(start)
	var body bytes.Buffer
	if err := port.WriteSnapshot(&body); err != nil {
		b.Fatal(err)
	}
	f := &snapFixture{points: points, port: port, body: body.Bytes(), refill: took}
	if snapBench.fixtures == nil {
		snapBench.fixtures = map[bool]*snapFixture{}
	}
	snapBench.fixtures[quantize] = f
	return f
}

// benchSnapPoints are one agent's memories, 2% of them forgotten.
func benchSnapPoints(b *testing.B) []domain.VectorPoint {
	n, dim := envInt(b, "ENGRAM_BENCH_VECTORS", 20_000), envInt(b, "ENGRAM_BENCH_DIM", 100)
	gen := newClustered(dim, max(1, n/100), 1, 41)
	points := make([]domain.VectorPoint, n)
	space := domain.VectorSpace{Model: "default", Dimensions: dim}
	for i := range points {
		it := makeItem(i, gen.next())
		points[i] = domain.VectorPoint{MemoryID: it.ID, UserID: "u", AgentID: "a", Space: space,
			Type: it.Type, Tags: it.Tags, CreatedAt: it.CreatedAt, Forgotten: i%50 == 0, Vector: it.Vector}
	}
	return points
}

func snapBenchOptions(points []domain.VectorPoint, quantize bool) Options {
	opts := Options{Quantize: quantize, FloatDir: os.TempDir()}
	if n := len(points); n < opts.annThreshold(points[0].Space.Dimensions) {
		opts.ANNThreshold = n / 2
	}
	return opts
}

// refill is what a start does today without a snapshot: every point
// upserted in batches of 1,000 (as the projection's fill does), then the
// graph built.
func refill(b *testing.B, points []domain.VectorPoint, opts Options) *Port {
	b.Helper()
	ctx := context.Background()
	p := NewPort(New(opts))
	for lo := 0; lo < len(points); lo += 1000 {
		if err := p.UpsertVectors(ctx, points[lo:min(len(points), lo+1000)]...); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Index().WaitIndexed(ctx); err != nil {
		b.Fatal(err)
	}
	return p
}

func benchName(b *testing.B, quantize bool) string {
	n, dim := envInt(b, "ENGRAM_BENCH_VECTORS", 20_000), envInt(b, "ENGRAM_BENCH_DIM", 100)
	return fmt.Sprintf("n=%d/dim=%d/quantize=%v", n, dim, quantize)
}

// BenchmarkWriteSnapshot: the image of a 100k-vector port, to memory;
// capture-ns is the part writers wait for.
func BenchmarkWriteSnapshot(b *testing.B) {
	for _, quantize := range []bool{false, true} {
		b.Run(benchName(b, quantize), func(b *testing.B) {
			f := benchSnapFixture(b, quantize) // b.Loop restarts the timer
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := f.port.WriteSnapshot(&buf); err != nil {
					b.Fatal(err)
				}
			}
			// How long writers wait: WriteSnapshot's capture step.
			start := time.Now()
			const captures = 100
			for range captures {
				f.port.ix.snapshotMu.Lock()
				f.port.writes.Lock()
				_ = f.port.forgotten.All()
				imgs := f.port.ix.image()
				f.port.writes.Unlock()
				releaseImage(imgs)
				f.port.ix.snapshotMu.Unlock()
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/captures, "capture-ns")
			b.ReportMetric(float64(buf.Len()), "body-bytes")
			b.ReportMetric(float64(buf.Len())/float64(len(f.points)), "body-B/vector")
		})
	}
}

// BenchmarkReadSnapshot: loading the image, then one search (the first
// query after a start), from a mapped file ("mapped": the arrays used in
// place), from the file read onto the heap ("heap": likewise, in the
// buffer), or from a misaligned copy ("copied": every array copied, the
// path a big-endian machine takes). rss-anon-MB and rss-file-MB are the
// process's anonymous and file-backed resident memory grown by reading,
// loading and a hundred searches, with the garbage collected before and
// after; cpu-ns/op is the process's user and system time per load (on a
// loaded machine wall time mostly waits for a core); refill-ns is building the same port from its points (the
// fixture), today's start without a snapshot.
func BenchmarkReadSnapshot(b *testing.B) {
	for _, quantize := range []bool{false, true} {
		for _, mode := range []string{"mapped", "heap", "copied"} {
			b.Run(benchName(b, quantize)+"/"+mode, func(b *testing.B) {
				f := benchSnapFixture(b, quantize) // b.Loop restarts the timer
				path := filepath.Join(b.TempDir(), "vectors.snap")
				if err := os.WriteFile(path, f.body, 0o600); err != nil {
					b.Fatal(err)
				}
				opts := snapBenchOptions(f.points, quantize)
				q := domain.VectorQuery{Scope: domain.IndexScope{UserID: "u", AgentID: "a"}, Space: f.points[0].Space, Vector: f.points[7].Vector, Limit: 10}
				var anon, file int64
				var cpu time.Duration // user and system time of the loads
				for b.Loop() {
					b.StopTimer()
					anon0, file0 := rss(b)
					cpu0 := cpuTime()
					b.StartTimer()
					data, unmap := snapBenchData(b, path, mode)
					p, err := ReadSnapshot(data, opts)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p.SearchVectors(context.Background(), q); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					cpu += cpuTime() - cpu0
					for i := range 100 {
						q := q
						q.Vector = f.points[i*len(f.points)/100].Vector
						if _, err := p.SearchVectors(context.Background(), q); err != nil {
							b.Fatal(err)
						}
					}
					anon1, file1 := rss(b)
					anon, file = max(anon, anon1-anon0), max(file, file1-file0)
					runtime.KeepAlive(p)
					p.Index().Close()
					unmap()
					b.StartTimer()
				}
				b.ReportMetric(float64(anon)/(1<<20), "rss-anon-MB")
				b.ReportMetric(float64(file)/(1<<20), "rss-file-MB")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(f.refill.Nanoseconds()), "refill-ns")
			})
		}
	}
}

// BenchmarkRefill is today's start without a snapshot, for comparison
// with BenchmarkReadSnapshot: the fill and the graph build of the same
// points (from memory: a real start also reads them from SQLite).
func BenchmarkRefill(b *testing.B) {
	points := benchSnapPoints(b)
	for _, quantize := range []bool{false, true} {
		b.Run(benchName(b, quantize), func(b *testing.B) {
			for b.Loop() {
				p := refill(b, points, snapBenchOptions(points, quantize))
				b.StopTimer()
				p.Index().Close()
				b.StartTimer()
			}
		})
	}
}

// snapBenchData is the file's body as mode reads it (see
// BenchmarkReadSnapshot).
func snapBenchData(b *testing.B, path, mode string) ([]byte, func()) {
	if mode == "mapped" {
		data, unmap, err := mapFile(path)
		if err != nil {
			b.Fatal(err)
		}
		return data, unmap
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if mode == "copied" {
		buf := make([]byte, len(data)+1)
		copy(buf[1:], data)
		data = buf[1:]
	}
	return data, func() {}
}

// rss is the process's anonymous and file-backed resident bytes
// (/proc/self/status; 0 elsewhere), after a garbage collection that returns freed
// memory to the system.
func rss(b *testing.B) (anon, file int64) {
	debug.FreeOSMemory()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0 // not Linux: the RSS figures read 0
	}
	for line := range strings.Lines(string(status)) {
		k, v, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "RssAnon":
			anon = kb << 10
		case "RssFile":
			file = kb << 10
		}
	}
	return anon, file
}

// BenchmarkGraphLinkCheck is the check of every node and link a read of a
// vector image makes (checkLinks) on the fixture's graph: most of the
// image checks' CPU at a command line's open (docs/benchmarks.md).
func BenchmarkGraphLinkCheck(b *testing.B) {
	f := benchSnapFixture(b, false)
	names := f.port.Index().Collections("")
	c := f.port.Index().lookup(names[0])
	c.mu.RLock()
	g := c.graph
	c.mu.RUnlock()
	if g == nil {
		b.Fatal("the fixture's collection has no graph")
	}
	cpu0 := cpuTime()
	for b.Loop() {
		if msg := g.checkLinks(g.maxLevel, len(g.upper)); msg != "" {
			b.Fatal(msg)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkIDOrderCheck is the check a read of a vector image makes of a
// collection's live slots in ID order (checkIDOrder) on the fixture.
func BenchmarkIDOrderCheck(b *testing.B) {
	f := benchSnapFixture(b, false)
	p, err := ReadSnapshot(f.body, snapBenchOptions(f.points, false))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Index().Close)
	c := p.Index().lookup(p.Index().Collections("")[0])
	if c.idOrder == nil {
		b.Fatal("the read collection has no ID order")
	}
	d := &decoder{}
	cpu0 := cpuTime()
	for b.Loop() {
		if !d.checkIDOrder(c, c.idOrder) {
			b.Fatal(d.err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
