package multinode_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// BenchmarkSearch measures hybrid search latency end to end (HTTP on
// loopback) over one node and over three nodes sharing the PostgreSQL log,
// requests spread round robin: p50-ms and p99-ms are the figures to report.
// Each node answers from its own replicas, so a search costs the same on
// one node or three; what three nodes add is the credential check's read
// of the shared log's head.
func BenchmarkSearch(b *testing.B) {
	const memories = 300
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			c := startCluster(b, nodes, "--rate-limit", "0")
			one := c.nodes[0]
			key := testserver.Register(b, one.BaseURL, one.DataDir, "bench@example.com")
			var token string
			for start := 0; start < memories; start += 100 {
				var items []any
				for i := start; i < start+100; i++ {
					items = append(items, map[string]any{"type": "note", "content": map[string]any{"content": fmt.Sprintf("note %d: the release needs a database migration and a cache flush on day %d", i, i%30)}})
				}
				r := must(b, call(b, one, "POST", "/memories/batch", key, map[string]any{"agent_id": "bench", "memories": items}), http.StatusCreated)
				token = r.header.Get("Engram-Consistency-Token")
			}
			for _, n := range c.nodes { // every replica has the corpus
				must(b, call(b, n, "GET", "/memories?agent_id=bench&limit=1", key, nil, "Engram-Consistency-Token", token), http.StatusOK)
			}
			latencies := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				r := call(b, c.nodes[i%nodes], "POST", "/search", key, map[string]any{"agent_id": "bench", "query": fmt.Sprintf("database migration day %d", i%30), "limit": 10})
				latencies[i] = time.Since(start)
				if r.status != http.StatusOK {
					b.Fatalf("search: %d %v", r.status, r.body)
				}
			}
			b.StopTimer()
			slices.Sort(latencies)
			b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
