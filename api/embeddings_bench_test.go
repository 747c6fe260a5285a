package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/workers"
)

// BenchmarkBulkReembed measures a whole re-embedding job (claim, batches of
// 128 embedded and appended, switch, complete) over 5,000 notes, in
// memories per second: to the generated static model (a switch), and with
// the built-in model (a refresh).
func BenchmarkBulkReembed(b *testing.B) {
	for _, model := range []string{staticModel, "default"} {
		b.Run(model, func(b *testing.B) { benchmarkBulkReembed(b, model) })
	}
}

func benchmarkBulkReembed(b *testing.B, model string) {
	const n = 5000
	for range b.N {
		b.StopTimer()
		s := newStack(b, stackOptions{fixedAuth: true, discardLogs: true, noRun: true, runner: workers.RunnerConfig{BatchSize: 128}})
		s.seed(alice, "claire", n)
		jobID := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": model}).data()["job_id"].(string)
		b.StartTimer()
		start := time.Now()
		for {
			did, err := s.runner.Step(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if !did {
				break
			}
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "memories/s")
		b.StopTimer()
		if d := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data(); d["status"] != "completed" || num(d["memories_processed"]) != n {
			b.Fatalf("job: %v", d)
		}
		s.closeAll()
	}
}
