package multinode_test

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// BenchmarkSearchOneVsThreeNodes measures hybrid search latency end to end
// (HTTP on loopback) on one node and on three, as deployed: non-race
// binaries sharing the PostgreSQL log and the PostgreSQL read models, each
// node with its own in-process keyword and vector indexes fed from the
// log. Four thousand memories are written through the first node; then
// searchConcurrency clients search, request i on node i mod n, without a
// consistency token and with the token of the last write (which every
// node has applied, so it measures what checking a token costs).
// p50-ms and p99-ms are the figures to report, with the core count and
// load average the benchmark logs (run with -benchtime 4000x or so).
func BenchmarkSearchOneVsThreeNodes(b *testing.B) {
	const memories = 4000
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			c := startClusterOf(b, benchBinPath, nodes, "--rate-limit", "0", "--read-models", "postgres")
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
			for _, n := range c.nodes { // every node's indexes hold the corpus
				must(b, call(b, n, "GET", "/memories?agent_id=bench&limit=1", key, nil, "Engram-Consistency-Token", token), http.StatusOK)
			}
			for _, mode := range []struct{ name, token string }{{"no-token", ""}, {"token", token}} {
				b.Run(mode.name, func(b *testing.B) {
					latencies := searchConcurrently(b, c.nodes, key, mode.token)
					slices.Sort(latencies)
					b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
					b.Logf("%d searches, %d cores, load average %s", len(latencies), runtime.NumCPU(), loadAverage())
				})
			}
		})
	}
}

// searchConcurrency is how many clients search at once.
const searchConcurrency = 8

// searchConcurrently runs b.N hybrid searches from searchConcurrency
// clients, request i on nodes[i mod len(nodes)], and returns each one's
// latency; token, when set, is sent as the consistency token.
func searchConcurrently(b *testing.B, nodes []*testserver.Server, key, token string) []time.Duration {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: searchConcurrency}}
	defer client.CloseIdleConnections()
	var headers []string
	if token != "" {
		headers = []string{"Engram-Consistency-Token", token}
	}
	latencies := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range searchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
				start := time.Now()
				r, err := tryCallWith(client, nodes[i%len(nodes)], "POST", "/search", key,
					map[string]any{"agent_id": "bench", "query": fmt.Sprintf("database migration day %d", i%30), "limit": 10}, headers...)
				latencies[i] = time.Since(start)
				if err != nil || r.status != http.StatusOK {
					b.Errorf("search: %d %v %v", r.status, r.body, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	return latencies
}

// loadAverage is the machine's 1, 5 and 15 minute load averages.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}
