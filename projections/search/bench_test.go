package search_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

// BenchmarkSearch measures the search service (no HTTP) on one agent of
// 10k synthetic notes (384-dim built-in model), per mode; set
// ENGRAM_BENCH_MEMORIES to change the size (e.g. 100000).
func BenchmarkSearch(b *testing.B) {
	n := 10000
	if v := os.Getenv("ENGRAM_BENCH_MEMORIES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	s := searchtest.New(b, searchtest.Options{})
	corpus := searchtest.NewCorpus(7, 5000)
	start := time.Now()
	if err := s.Fill(ctx, "u1", "bench", n, corpus, time.Now().Add(-time.Duration(n+3600)*time.Second)); err != nil {
		b.Fatal(err)
	}
	b.Logf("filled %d memories in %v", n, time.Since(start))
	if err := s.Index.WaitIndexed(ctx); err != nil {
		b.Fatal(err)
	}
	queries := make([]string, 256)
	for i := range queries {
		queries[i] = corpus.Query()
	}
	for _, mode := range allModes {
		b.Run(string(mode), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.Search.Search(ctx, search.Request{UserID: "u1", AgentID: "bench", Query: queries[i%len(queries)], Mode: mode, Limit: 10}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run("hybrid-filtered", func(b *testing.B) {
		f := search.Filter{Tags: []string{"t3"}, CreatedAfter: time.Now().Add(-time.Duration(n/2) * time.Second)}
		i := 0
		for b.Loop() {
			if _, err := s.Search.Search(ctx, search.Request{UserID: "u1", AgentID: "bench", Query: queries[i%len(queries)], Limit: 10, Filter: f}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
