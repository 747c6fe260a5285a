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

// Snapshot benchmarks at the size of a big agent: ENGRAM_BENCH_VECTORS
// (default 100,000) memories of ENGRAM_BENCH_DIM dimensions (default 100,
// the default model's) in one collection, past the ANN threshold (a graph),
// full precision and quantised. The docs/benchmarks.md figures come from
//
//	go test -run '^$' -bench 'Snapshot|Refill' -benchtime 3x -timeout 30m ./infra/vectorindex/
//
// The fixture (the index, its graph built) is made once per mode and
// shared by the benchmarks.

var snapBench struct {
	sync.Mutex
	fixtures map[bool]*snapFixture
}

type snapFixture struct {
	points []domain.VectorPoint
	port   *Port
	body   []byte
	build  time.Duration // filling the index and building its graph
}

func benchSnapFixture(b *testing.B, quantize bool) *snapFixture {
	b.Helper()
	snapBench.Lock()
	defer snapBench.Unlock()
	if f := snapBench.fixtures[quantize]; f != nil {
		return f
	}
	n, dim := envInt(b, "ENGRAM_BENCH_VECTORS", 100_000), envInt(b, "ENGRAM_BENCH_DIM", 100)
	gen := newClustered(dim, max(1, n/100), 1, 41)
	points := make([]domain.VectorPoint, n)
	space := domain.VectorSpace{Model: "default", Dimensions: dim}
	for i := range points {
		it := makeItem(i, gen.next())
		points[i] = domain.VectorPoint{MemoryID: it.ID, UserID: "u", AgentID: "a", Space: space,
			Type: it.Type, Tags: it.Tags, CreatedAt: it.CreatedAt, Forgotten: i%50 == 0, Vector: it.Vector}
	}
	port, build := refill(b, points, snapBenchOptions(quantize))
	var body bytes.Buffer
	if err := port.WriteSnapshot(&body); err != nil {
		b.Fatal(err)
	}
	f := &snapFixture{points: points, port: port, body: body.Bytes(), build: build}
	if snapBench.fixtures == nil {
		snapBench.fixtures = map[bool]*snapFixture{}
	}
	snapBench.fixtures[quantize] = f
	return f
}

func snapBenchOptions(quantize bool) Options {
	return Options{Quantize: quantize, FloatDir: os.TempDir()}
}

// refill is what a start does today without a snapshot: every point
// upserted in batches of 1,000 (as the projection's fill does), then the
// graph built.
func refill(b *testing.B, points []domain.VectorPoint, opts Options) (*Port, time.Duration) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	p := NewPort(New(opts))
	for lo := 0; lo < len(points); lo += 1000 {
		if err := p.UpsertVectors(ctx, points[lo:min(len(points), lo+1000)]...); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Index().WaitIndexed(ctx); err != nil {
		b.Fatal(err)
	}
	return p, time.Since(start)
}

func benchName(f *snapFixture, quantize bool) string {
	return fmt.Sprintf("n=%d/dim=%d/quantize=%v", len(f.points), f.points[0].Space.Dimensions, quantize)
}

// BenchmarkWriteSnapshot: the image of a 100k-vector port, to memory.
func BenchmarkWriteSnapshot(b *testing.B) {
	for _, quantize := range []bool{false, true} {
		f := benchSnapFixture(b, quantize)
		b.Run(benchName(f, quantize), func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := f.port.WriteSnapshot(&buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "body-bytes")
			b.ReportMetric(float64(buf.Len())/float64(len(f.points)), "body-B/vector")
		})
	}
}

// BenchmarkReadSnapshot: loading the image, used in place from a mapped
// file ("mapped") or copied to the heap ("heap": a misaligned copy, the
// path a big-endian machine takes), then one search (the first query
// after a start). rss-anon-MB and rss-file-MB are the process's anonymous
// and file-backed resident memory grown by the load and a hundred
// searches, measured with the garbage collected before and after.
func BenchmarkReadSnapshot(b *testing.B) {
	for _, quantize := range []bool{false, true} {
		f := benchSnapFixture(b, quantize)
		for _, mode := range []string{"mapped", "heap"} {
			b.Run(benchName(f, quantize)+"/"+mode, func(b *testing.B) {
				data, unmap := snapBenchData(b, f.body, mode)
				defer unmap()
				opts := snapBenchOptions(quantize)
				q := domain.VectorQuery{Scope: domain.IndexScope{UserID: "u", AgentID: "a"}, Space: f.points[0].Space, Vector: f.points[7].Vector, Limit: 10}
				var anon, file int64
				for b.Loop() {
					b.StopTimer()
					anon0, file0 := rss(b)
					b.StartTimer()
					p, err := ReadSnapshot(data, opts)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p.SearchVectors(context.Background(), q); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					for i := range 100 {
						q := q
						q.Vector = f.points[i*len(f.points)/100].Vector
						if _, err := p.SearchVectors(context.Background(), q); err != nil {
							b.Fatal(err)
						}
					}
					anon1, file1 := rss(b)
					// The first load touches the mapping: later ones find it
					// resident already, so the largest growth is reported.
					anon, file = max(anon, anon1-anon0), max(file, file1-file0)
					runtime.KeepAlive(p)
					p.Index().Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(anon)/(1<<20), "rss-anon-MB")
				b.ReportMetric(float64(file)/(1<<20), "rss-file-MB")
			})
		}
	}
}

// BenchmarkRefill is today's start without a snapshot, for comparison
// with BenchmarkReadSnapshot: the fill and the graph build of the same
// points (from memory: a real start also reads them from SQLite).
func BenchmarkRefill(b *testing.B) {
	for _, quantize := range []bool{false, true} {
		f := benchSnapFixture(b, quantize)
		b.Run(benchName(f, quantize), func(b *testing.B) {
			for b.Loop() {
				p, _ := refill(b, f.points, snapBenchOptions(quantize))
				b.StopTimer()
				p.Index().Close()
				b.StartTimer()
			}
		})
	}
}

// snapBenchData is the body as a mapped file, or as a misaligned heap
// copy that ReadSnapshot must copy from.
func snapBenchData(b *testing.B, body []byte, mode string) ([]byte, func()) {
	if mode == "heap" {
		buf := make([]byte, len(body)+1)
		copy(buf[1:], body)
		return buf[1:], func() {}
	}
	path := filepath.Join(b.TempDir(), "vectors.snap")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		b.Fatal(err)
	}
	data, unmap, err := mapFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data, unmap
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
