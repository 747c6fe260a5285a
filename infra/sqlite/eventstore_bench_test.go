package sqlite_test

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
	"github.com/engram-memory/engram/infra/sqlite"
)

// BenchmarkAppend measures durable appends; events/s is the figure to report.
func BenchmarkAppend(b *testing.B) {
	payload, _ := json.Marshal(map[string]any{"memory_id": "0193a1f0-0000-7000-8000-000000000001", "content": map[string]string{"statement": "the deploy pipeline needs a manual approval step for production"}})
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			store := sqlite.NewEventStore(openDB(b), time.Second)
			events := make([]domain.NewEvent, batch)
			for i := range events {
				events[i] = domain.NewEvent{Type: "MemoryCreated", SchemaVersion: 1, Actor: domain.Actor{Kind: domain.ActorKey, ID: "k"}, Payload: payload}
			}
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

// BenchmarkAppendConcurrent measures one-event appends from concurrent
// writers (each its own stream, as requests of different agents are) for
// both durability settings: appends/s and the p99 latency of one append are
// the figures to report. Group commit is what keeps durable throughput up
// as concurrency grows.
func BenchmarkAppendConcurrent(b *testing.B) {
	payload, _ := json.Marshal(map[string]any{"memory_id": "0193a1f0-0000-7000-8000-000000000001", "content": map[string]string{"statement": "the deploy pipeline needs a manual approval step for production"}})
	events := []domain.NewEvent{{Type: "MemoryCreated", SchemaVersion: 1, Actor: domain.Actor{Kind: domain.ActorKey, ID: "k"}, Payload: payload}}
	for _, durability := range []sqlite.Durability{sqlite.Durable, sqlite.Relaxed} {
		for _, writers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("durability=%s/writers=%d", durability, writers), func(b *testing.B) {
				db, err := sqlite.Open(context.Background(), b.TempDir(), sqlite.Options{Durability: durability})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				store := sqlite.NewEventStore(db, time.Second)
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
}

// BenchmarkReadAll measures reading the log in pages, the replay path.
func BenchmarkReadAll(b *testing.B) {
	store := sqlite.NewEventStore(openDB(b), time.Second)
	ctx := context.Background()
	payload, _ := json.Marshal(map[string]string{"statement": "the deploy pipeline needs a manual approval step"})
	events := make([]domain.NewEvent, 1000)
	for i := range events {
		events[i] = domain.NewEvent{Type: "MemoryCreated", SchemaVersion: 1, Payload: payload}
	}
	for i := 0; i < 50; i++ {
		if _, err := store.Append(ctx, "s", domain.ExpectAny, events); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	total := 0
	for i := 0; i < b.N; i++ {
		var after uint64
		for {
			page, err := store.ReadAll(ctx, after, 1000)
			if err != nil {
				b.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			total += len(page)
			after = page[len(page)-1].Position
		}
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "events/s")
}
