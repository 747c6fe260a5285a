package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventstoretest"
	"github.com/engram-memory/engram/infra/sqlite"
)

// BenchmarkAppend measures durable appends; events/s is the figure to report.
func BenchmarkAppend(b *testing.B) {
	eventstoretest.BenchAppend(b, func(b *testing.B) domain.EventStore { return sqlite.NewEventStore(openDB(b), time.Second) })
}

// BenchmarkAppendConcurrent measures one-event appends from concurrent
// writers for both durability settings. Group commit is what keeps
// durable throughput up as concurrency grows.
func BenchmarkAppendConcurrent(b *testing.B) {
	for _, durability := range []sqlite.Durability{sqlite.Durable, sqlite.Relaxed} {
		b.Run(fmt.Sprintf("durability=%s", durability), func(b *testing.B) {
			eventstoretest.BenchAppendConcurrent(b, func(b *testing.B) domain.EventStore {
				db, err := sqlite.Open(context.Background(), b.TempDir(), sqlite.Options{Durability: durability})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { db.Close() })
				return sqlite.NewEventStore(db, time.Second)
			})
		})
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
