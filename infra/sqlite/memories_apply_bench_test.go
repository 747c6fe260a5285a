package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/textindex"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/projections"
)

// BenchmarkMemoriesApplyBatch measures how the memories read model, the
// two index projections (their SQLite state and in-process index) and the
// audit trail apply
// one batch write of 1000 notes with their vectors (2000 events, as
// POST /memories/batch appends them); cpu-ns/memory is steadier than wall
// time on a shared machine.
func BenchmarkMemoriesApplyBatch(b *testing.B) {
	b.Run("memories", func(b *testing.B) {
		benchmarkApplyBatch(b, func(db *sqlite.DB) projections.Projection {
			return projections.NewMemories(sqlite.NewMemories(db))
		})
	})
	b.Run("vectors", func(b *testing.B) {
		benchmarkApplyBatch(b, func(db *sqlite.DB) projections.Projection {
			return projections.NewVectors(sqlite.NewVectorStore(db), vectorindex.NewPort(vectorindex.New(vectorindex.Options{})), true, nil)
		})
	})
	b.Run("keyword", func(b *testing.B) {
		benchmarkApplyBatch(b, func(db *sqlite.DB) projections.Projection {
			return projections.NewKeyword(sqlite.NewKeywordStore(db), textindex.NewPort(textindex.Options{}, 0), true, nil)
		})
	})
	b.Run("audit", func(b *testing.B) {
		benchmarkApplyBatch(b, func(db *sqlite.DB) projections.Projection {
			return projections.NewAudit(sqlite.NewAudit(db))
		})
	})
}

func benchmarkApplyBatch(b *testing.B, newProjection func(*sqlite.DB) projections.Projection) {
	db := openDB(b)
	store := sqlite.NewEventStore(db, 50*time.Millisecond)
	rm := newProjection(db)
	ctx := context.Background()
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "bench"}}
	stream := memory.AgentStream(memAlice.UserID, memAlice.AgentID)
	appendAndRead := func(after uint64, payloads []domain.Payload) []domain.Event {
		events := make([]domain.NewEvent, len(payloads))
		for i, p := range payloads {
			e, err := domain.MarshalEvent(p, meta)
			if err != nil {
				b.Fatal(err)
			}
			events[i] = e
		}
		if _, err := store.Append(ctx, stream, domain.ExpectAny, events); err != nil {
			b.Fatal(err)
		}
		batch, err := store.ReadAll(ctx, after, 10000)
		if err != nil {
			b.Fatal(err)
		}
		return batch
	}
	first := appendAndRead(0, []domain.Payload{memAgentCreated(memAlice, "m1", 4)})
	if err := rm.Apply(ctx, first); err != nil {
		b.Fatal(err)
	}
	fed := first[len(first)-1].Position
	const perBatch = 1000
	var cpu time.Duration
	b.ResetTimer()
	for n := range b.N {
		b.StopTimer()
		payloads := make([]domain.Payload, 0, 2*perBatch)
		for i := range perBatch {
			id, text := fmt.Sprintf("m%d_%d", n, i), fmt.Sprintf("note %d of batch %d about the deploy", i, n)
			payloads = append(payloads, memNoteCreated(memAlice, id, text, memT0), memEmbeddedEvent(memAlice, id, "m1", 4, text))
		}
		batch := appendAndRead(fed, payloads)
		fed = batch[len(batch)-1].Position
		cpu0 := processCPU()
		b.StartTimer()
		if err := rm.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += processCPU() - cpu0
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(b.N*perBatch), "cpu-ns/memory")
}
