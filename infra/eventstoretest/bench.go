package eventstoretest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

// BenchEvents returns batch events shaped like a memory's creation, the
// events every event store's benchmarks append.
func BenchEvents(batch int) []domain.NewEvent {
	payload, _ := json.Marshal(map[string]any{"memory_id": "0193a1f0-0000-7000-8000-000000000001", "content": map[string]string{"statement": "the deploy pipeline needs a manual approval step for production"}})
	events := make([]domain.NewEvent, batch)
	for i := range events {
		events[i] = domain.NewEvent{Type: "MemoryCreated", SchemaVersion: 1, Actor: domain.Actor{Kind: domain.ActorKey, ID: "k", UserID: "u"}, RequestID: "req", Payload: payload}
	}
	return events
}

// BenchAppend measures appends of one and of 100 events to a fresh store
// from open, over 64 streams; events/s is the figure to report. The same
// shapes for every event store, so their figures compare one for one.
func BenchAppend(b *testing.B, open func(b *testing.B) domain.EventStore) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			store := open(b)
			events := BenchEvents(batch)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := store.Append(ctx, fmt.Sprintf("agent-%d", i%64), domain.ExpectAny, events); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchAppendConcurrent measures one-event appends from 1, 8 and 64
// concurrent writers, each on its own stream (as requests of different
// agents are): appends/s and the p99 latency of one append are the figures
// to report.
func BenchAppendConcurrent(b *testing.B, open func(b *testing.B) domain.EventStore) {
	events := BenchEvents(1)
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			store := open(b)
			ctx := context.Background()
			latencies := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stream := fmt.Sprintf("agent-%d", w)
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						start := time.Now()
						if _, err := store.Append(ctx, stream, domain.ExpectAny, events); err != nil {
							b.Error(err)
							return
						}
						latencies[i] = time.Since(start)
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			slices.Sort(latencies)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
			b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
