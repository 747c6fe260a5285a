package vectorindex

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// Benchmarks run on clustered 384-d data (1 centroid per 100 points). Each
// fixture (items, queries, brute-force truth, a flat index and a graph
// index) is built once per benchmark process; the 100k graph takes about a
// minute on the 2-core machine.

const benchDim = 384

type benchFixture struct {
	items   []Item
	queries [][]float32
	flat    *Index // ANNThreshold -1: exact scans
	hnsw    *Index // graph built before timing
	truth   map[string][][]Hit
	oracle  *oracle
}

var benchFixtures struct {
	sync.Mutex
	m map[int]*benchFixture
}

var benchFilters = []struct {
	name string
	f    Filter
}{
	{"nofilter", Filter{}},
	{"type10pct", Filter{Types: []string{"goal"}}},
	{"tag1pct", Filter{Tags: []string{"m42"}}},
	{"tag50pct", Filter{Tags: []string{"odd"}}},
}

func benchData(b *testing.B, n int) *benchFixture {
	benchFixtures.Lock()
	defer benchFixtures.Unlock()
	if fx := benchFixtures.m[n]; fx != nil {
		return fx
	}
	gen := newClustered(benchDim, n/100, 1, 31)
	fx := &benchFixture{items: make([]Item, n), truth: map[string][][]Hit{}}
	for i := range fx.items {
		fx.items[i] = makeItem(i, gen.next())
	}
	for range 200 {
		fx.queries = append(fx.queries, gen.next())
	}
	fx.flat = New(Options{ANNThreshold: -1})
	fx.hnsw = New(Options{ANNThreshold: 1})
	for _, ix := range []*Index{fx.flat, fx.hnsw} {
		if err := ix.Upsert("c", fx.items...); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	if err := fx.hnsw.WaitIndexed(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d×%d graph built in %v (%.0f inserts/s)", n, benchDim, time.Since(start).Round(time.Millisecond), float64(n)/time.Since(start).Seconds())
	fx.oracle = newOracle(fx.items)
	for _, bf := range benchFilters {
		for _, q := range fx.queries {
			fx.truth[bf.name] = append(fx.truth[bf.name], fx.oracle.search(q, 10, bf.f))
		}
	}
	if benchFixtures.m == nil {
		benchFixtures.m = map[int]*benchFixture{}
	}
	benchFixtures.m[n] = fx
	return fx
}

func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10_000, 100_000} {
		for _, mode := range []string{"flat", "hnsw"} {
			for _, bf := range benchFilters {
				b.Run(fmt.Sprintf("n=%dk/%s/%s", n/1000, mode, bf.name), func(b *testing.B) {
					fx := benchData(b, n)
					ix := fx.flat
					if mode == "hnsw" {
						ix = fx.hnsw
					}
					var sum float64
					for i, q := range fx.queries {
						got, err := ix.Search(ctx, "c", q, 10, bf.f)
						if err != nil {
							b.Fatal(err)
						}
						sum += recall(got, fx.truth[bf.name][i])
					}
					var lat latencies
					b.ResetTimer()
					for i := 0; b.Loop(); i++ {
						t0 := time.Now()
						if _, err := ix.Search(ctx, "c", fx.queries[i%len(fx.queries)], 10, bf.f); err != nil {
							b.Fatal(err)
						}
						lat.add(time.Since(t0))
					}
					lat.report(b)
					b.ReportMetric(sum/float64(len(fx.queries)), "recall@10")
				})
			}
		}
	}
}

// BenchmarkSearchConcurrent is the service's load shape: 8 concurrent
// searches on 2 cores against one 100k×384 agent.
func BenchmarkSearchConcurrent(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"flat", "hnsw"} {
		for _, bf := range benchFilters[:3] {
			b.Run(mode+"/"+bf.name, func(b *testing.B) {
				fx := benchData(b, 100_000)
				ix := fx.flat
				if mode == "hnsw" {
					ix = fx.hnsw
				}
				b.SetParallelism(8 / min(8, max(1, runtimeProcs())))
				var mu sync.Mutex
				var all latencies
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					var lat latencies
					for i := 0; pb.Next(); i++ {
						t0 := time.Now()
						if _, err := ix.Search(ctx, "c", fx.queries[i%len(fx.queries)], 10, bf.f); err != nil {
							b.Error(err)
							return
						}
						lat.add(time.Since(t0))
					}
					mu.Lock()
					all = append(all, lat...)
					mu.Unlock()
				})
				all.report(b)
			})
		}
	}
}

// latencies collects per-query times so benchmarks can report p50 and p99,
// which say more than the mean on a shared 2-core machine.
type latencies []time.Duration

func (l *latencies) add(d time.Duration) { *l = append(*l, d) }

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkUpsert measures bulk-load throughput into a flat collection
// (copy, normalisation check, id map, metadata), in batches of 1000.
func BenchmarkUpsert(b *testing.B) {
	gen := newClustered(benchDim, 100, 1, 41)
	items := make([]Item, 10_000)
	for i := range items {
		items[i] = makeItem(i, gen.next())
	}
	b.ResetTimer()
	for b.Loop() {
		ix := New(Options{ANNThreshold: -1})
		for i := 0; i < len(items); i += 1000 {
			if err := ix.Upsert("c", items[i:i+1000]...); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkGraphBuild measures background graph construction at 10k×384.
func BenchmarkGraphBuild(b *testing.B) {
	gen := newClustered(benchDim, 100, 1, 51)
	items := make([]Item, 10_000)
	for i := range items {
		items[i] = makeItem(i, gen.next())
	}
	b.ResetTimer()
	for b.Loop() {
		ix := New(Options{ANNThreshold: 1})
		if err := ix.Upsert("c", items...); err != nil {
			b.Fatal(err)
		}
		if err := ix.WaitIndexed(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "inserts/s")
}

// BenchmarkFilterStrategy calibrates the walk/scan cost model: the same
// time-window filter (matches spread evenly over the vector space) served by
// a forced graph walk and by an exact scan, at several selectivities.
func BenchmarkFilterStrategy(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10_000, 100_000} {
		for _, pct := range []int{2, 5, 10, 20, 30, 50} {
			f := Filter{CreatedBefore: baseTime.Add(time.Duration(n*pct/100) * time.Minute)}
			for _, strategy := range []string{"walk", "scan", "auto"} {
				b.Run(fmt.Sprintf("n=%dk/share=%d%%/%s", n/1000, pct, strategy), func(b *testing.B) {
					fx := benchData(b, n)
					ix := fx.hnsw
					switch strategy {
					case "walk":
						ix.opts.forceWalk = true
						defer func() { ix.opts.forceWalk = false }()
					case "scan":
						ix = fx.flat
					}
					var sum float64
					for _, q := range fx.queries[:50] {
						got, err := ix.Search(ctx, "c", q, 10, f)
						if err != nil {
							b.Fatal(err)
						}
						sum += recall(got, fx.oracle.search(q, 10, f))
					}
					b.ResetTimer()
					for i := 0; b.Loop(); i++ {
						if _, err := ix.Search(ctx, "c", fx.queries[i%len(fx.queries)], 10, f); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(sum/50, "recall@10")
				})
			}
		}
	}
}
