package cli

import (
	"cmp"
	"encoding/json"
	"flag"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// benchBinary is another engram build for BenchmarkCLIProcess to measure
// (e.g. that of the previous commit, for a before/after pair).
var benchBinary = flag.String("engram-binary", "", "engram binary BenchmarkCLIProcess runs (default: this tree's)")

// BenchmarkCLIProcess measures whole `engram` processes (this tree's
// binary, without the race detector, or -engram-binary) on a local stack of 10,000 notes, from start to
// exit: the open of the stack plus the command, as an agent's hook pays
// it. Each reports p50 and p99 in ms; the searches also report the p50 of
// the query_time_ms and open_ms they print (docs/benchmarks.md).
// search-after-capture times a hybrid search that follows a capture (the
// capture untimed): the search catches its index images up with the
// captures since they were saved (docs/snapshots.md).
func BenchmarkCLIProcess(b *testing.B) {
	bin := cmp.Or(*benchBinary, binPath)
	home := b.TempDir()
	queries := fillBenchStack(b, home, 10_000)
	for _, bc := range []struct {
		name string
		args func(i int) []string
		// first runs untimed before each timed run (nil: nothing).
		first []string
	}{
		{"search-hybrid", func(i int) []string {
			return []string{"-s", "bench", "search", "--local", "--json", queries[i%len(queries)]}
		}, nil},
		{"search-keyword", func(i int) []string {
			return []string{"-s", "bench", "search", "--local", "--json", "--mode", "keyword", queries[i%len(queries)]}
		}, nil},
		{"stats", func(int) []string { return []string{"-s", "bench", "stats", "--json"} }, nil},
		{"list", func(int) []string { return []string{"-s", "bench", "list", "--json", "--limit", "10"} }, nil},
		{"capture", func(int) []string { return []string{"-s", "bench", "note", "a note captured by the benchmark"} }, nil},
		{"search-after-capture", func(i int) []string {
			return []string{"-s", "bench", "search", "--local", "--json", queries[i%len(queries)]}
		}, []string{"-s", "bench", "note", "a note captured by the benchmark before a search"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var took, query, open []time.Duration
			for i := 0; b.Loop(); i++ {
				if bc.first != nil {
					b.StopTimer()
					first := exec.Command(bin, bc.first...)
					first.Env = testserver.Environ(home)
					if out, err := first.CombinedOutput(); err != nil {
						b.Fatalf("engram %v: %v\n%s", bc.first, err, out)
					}
					b.StartTimer()
				}
				cmd := exec.Command(bin, bc.args(i)...)
				cmd.Env = testserver.Environ(home)
				began := time.Now()
				out, err := cmd.Output()
				took = append(took, time.Since(began))
				if err != nil {
					b.Fatalf("engram %v: %v", bc.args(i), err)
				}
				var times struct {
					QueryTimeUS *int64 `json:"query_time_us"`
					OpenMS      *int64 `json:"open_ms"`
				}
				if json.Unmarshal(out, &times) == nil && times.QueryTimeUS != nil {
					query = append(query, time.Duration(*times.QueryTimeUS)*time.Microsecond)
					if times.OpenMS != nil {
						open = append(open, time.Duration(*times.OpenMS)*time.Millisecond)
					}
				}
			}
			reportPercentiles(b, took)
			if len(query) > 0 {
				b.ReportMetric(p50ms(query), "query_time-p50-ms")
			}
			if len(open) > 0 {
				b.ReportMetric(p50ms(open), "open-p50-ms")
			}
		})
	}
}

func p50ms(d []time.Duration) float64 {
	sorted := append([]time.Duration(nil), d...)
	slices.Sort(sorted)
	return float64(sorted[len(sorted)/2].Microseconds()) / 1000
}
