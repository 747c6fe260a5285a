package api_test

import (
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkMemPatchOneAgent measures PATCH throughput when every request
// targets the same agent (so every write competes for one agent stream)
// from about 8 concurrent clients, each patching its own memory's
// confidence (no re-embedding): the patches/s metric is the figure the
// notes report.
func BenchmarkMemPatchOneAgent(b *testing.B) {
	s := newStack(b, stackOptions{discardLogs: true})
	_, key := s.user(b, "bench-patch@example.com")
	const clients = 8
	ids := make([]string, clients)
	for i := range ids {
		ids[i] = s.create(b, key, "bench", "belief", map[string]any{"statement": fmt.Sprint("statement ", i)}).ID
	}
	var next atomic.Int64
	b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0))) // RunParallel starts this many per GOMAXPROCS
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		id := ids[next.Add(1)%clients]
		for i := 0; pb.Next(); i++ {
			s.request(b, "PATCH", "/v1/memories/"+id, key, map[string]any{"content": map[string]any{"confidence": float64(i%100) / 100}}).
				must(b, http.StatusOK, nil)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "patches/s")
}
