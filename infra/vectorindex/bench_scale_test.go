package vectorindex

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkLargeCollection builds one collection the size of a big agent
// and reports what it costs: build rate, memory held per vector (measured
// heap, and Stats' estimate), and recall@10 against exact search with the
// search time, with and without int8 quantisation (file-B/vector: the
// full-precision vectors a quantised collection keeps in its float file).
// The size comes from ENGRAM_BENCH_VECTORS (default 20,000, so `make bench`
// stays quick) at ENGRAM_BENCH_DIM dimensions (default 100, the default
// model's); the issue-14 figures come from
//
//	ENGRAM_BENCH_VECTORS=1000000 go test -run '^$' -bench LargeCollection -benchtime 2000x -timeout 2h ./infra/vectorindex/
//
// which takes a long time on a shared 2-core machine (the graph build).
func BenchmarkLargeCollection(b *testing.B) {
	n, dim := envInt(b, "ENGRAM_BENCH_VECTORS", 20_000), envInt(b, "ENGRAM_BENCH_DIM", 100)
	for _, quantize := range []bool{false, true} {
		b.Run(fmt.Sprintf("n=%d/dim=%d/quantize=%v", n, dim, quantize), func(b *testing.B) {
			benchmarkLargeCollection(b, n, dim, Options{Quantize: quantize})
		})
	}
}

func benchmarkLargeCollection(b *testing.B, n, dim int, opts Options) {
	ctx := context.Background()
	gen := newClustered(dim, max(1, n/100), 1, 41)
	queries := make([][]float32, 100)
	for i := range queries {
		queries[i] = gen.next()
	}
	items := make([]Item, n)
	for i := range items {
		items[i] = makeItem(i, gen.next())
	}
	before := heapInUse() // the items are counted out: they stay alive below
	ix := New(opts)
	defer ix.Close()
	start := time.Now()
	for i := 0; i < n; i += 1000 {
		if err := ix.Upsert("agent", items[i:min(n, i+1000)]...); err != nil {
			b.Fatal(err)
		}
	}
	if err := ix.WaitIndexed(ctx); err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	held := int64(heapInUse() - before)
	st := ix.Stats()
	oracle := newOracle(items)
	var sum float64
	for _, q := range queries {
		got, err := ix.Search(ctx, "agent", q, 10, Filter{})
		if err != nil {
			b.Fatal(err)
		}
		sum += recall(got, oracle.search(q, 10, Filter{}))
	}
	var lat latencies
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := ix.Search(ctx, "agent", queries[i%len(queries)], 10, Filter{}); err != nil {
			b.Fatal(err)
		}
		lat.add(time.Since(t0))
	}
	lat.report(b)
	runtime.KeepAlive(items)
	b.ReportMetric(sum/float64(len(queries)), "recall@10")
	b.ReportMetric(float64(n)/build.Seconds(), "inserts/s")
	b.ReportMetric(float64(held)/float64(n), "heap-B/vector")
	b.ReportMetric(float64(st.HeldBytes)/float64(n), "stats-B/vector")
	b.ReportMetric(float64(st.FileBytes)/float64(n), "file-B/vector")
	b.ReportMetric(float64(dim*4), "raw-B/vector")
	b.Logf("%d×%d (%s, quantized %v): loaded in %v; index holds ~%.0f MiB (Stats %.0f MiB), raw vectors %.0f MiB",
		n, dim, st.PerCollection[0].Mode, st.PerCollection[0].Quantized, build.Round(time.Second), float64(held)/(1<<20), float64(st.HeldBytes)/(1<<20), float64(n*dim*4)/(1<<20))
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}
