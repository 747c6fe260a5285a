package cli

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkCLILocalSearch measures the search step of `engram search
// --local` on a stack of 10,000 notes (docs/decisions.md#local-search-speed: "about
// 10 ms"; target p50 < 10 ms): the stack's search service in hybrid mode,
// as the command runs it after opening the stack. It reports p50 and p99.
func BenchmarkCLILocalSearch(b *testing.B) {
	const memories = 10_000
	ctx := context.Background()
	c := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, home: b.TempDir(), stack: "bench"}
	st, err := c.openStack(ctx, true, writeParts|searchParts)
	if err != nil {
		b.Fatal(err)
	}
	defer st.close()
	queries := fillWithNotes(b, st, memories)
	sa := searchArgs{mode: "hybrid", limit: 10}
	var took []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		sa.query = queries[i%len(queries)]
		start := time.Now()
		out, err := searchLocal(ctx, st, sa)
		took = append(took, time.Since(start))
		if err != nil || len(out.Results) == 0 {
			b.Fatalf("search %q: %d results, %v", sa.query, len(out.Results), err)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
