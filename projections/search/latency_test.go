package search_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

// TestLatencyProfile reports p50/p95/p99 of the search service per mode on
// one agent of ENGRAM_LATENCY_MEMORIES synthetic notes (sequential, no
// HTTP). It is a measurement, not a check: it runs only when the variable
// is set, e.g. ENGRAM_LATENCY_MEMORIES=100000.
func TestLatencyProfile(t *testing.T) {
	v := os.Getenv("ENGRAM_LATENCY_MEMORIES")
	if v == "" {
		t.Skip("set ENGRAM_LATENCY_MEMORIES to run")
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := searchtest.New(t, searchtest.Options{})
	corpus := searchtest.NewCorpus(7, 5000)
	start := time.Now()
	if err := s.Fill(ctx, "u1", "bench", n, corpus, time.Now().Add(-time.Duration(n+3600)*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Logf("filled %d memories in %v", n, time.Since(start))
	start = time.Now()
	if err := s.Index.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("vector index built in %v more; %+v", time.Since(start), s.Index.Stats().PerCollection)
	queries := make([]string, 1000)
	for i := range queries {
		queries[i] = corpus.Query()
	}
	for _, mode := range allModes {
		lat := make([]time.Duration, len(queries))
		for i, q := range queries {
			t0 := time.Now()
			if _, err := s.Search.Search(ctx, search.Request{UserID: "u1", AgentID: "bench", Query: q, Mode: mode, Limit: 10}); err != nil {
				t.Fatal(err)
			}
			lat[i] = time.Since(t0)
		}
		slices.Sort(lat)
		p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
		t.Logf("%-8s n=%d p50 %v  p95 %v  p99 %v  max %v", mode, n, p(0.5), p(0.95), p(0.99), lat[len(lat)-1])
	}
}
