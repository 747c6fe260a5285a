package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/postgres"
	"github.com/engram-memory/engram/projections"
)

// BenchmarkMemoriesApplyBatch measures how the PostgreSQL memories read
// model applies one batch write of 1000 notes with their vectors (2000
// events, as POST /memories/batch appends them), through the memories
// projection, like the SQLite benchmark of the same name; ns/memory is
// wall time per memory, database round trips included.
func BenchmarkMemoriesApplyBatch(b *testing.B) {
	db := openDB(b)
	store := postgres.NewEventStore(db, 50*time.Millisecond)
	rm := projections.NewMemories(postgres.NewMemories(db))
	ctx := context.Background()
	ref := memory.AgentRef{UserID: "user-a", AgentID: "claire"}
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "bench"}}
	stream := memory.AgentStream(ref.UserID, ref.AgentID)
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
	first := appendAndRead(0, []domain.Payload{memory.AgentCreated{AgentRef: ref, EmbeddingModel: "m1", Dimensions: 4, CreatedAt: t0}})
	if err := rm.Apply(ctx, first); err != nil {
		b.Fatal(err)
	}
	fed := first[len(first)-1].Position
	const perBatch = 1000
	var wall time.Duration
	for n := 0; b.Loop(); n++ {
		b.StopTimer()
		payloads := make([]domain.Payload, 0, 2*perBatch)
		for i := range perBatch {
			id, text := fmt.Sprintf("m%d_%d", n, i), fmt.Sprintf("note %d of batch %d about the deploy", i, n)
			content, _ := json.Marshal(map[string]string{"content": text})
			payloads = append(payloads,
				memory.MemoryCreated{AgentRef: ref, MemoryID: id, Type: memory.Note, Content: content, Tags: []string{"t"}, CreatedAt: t0, TextHash: memory.TextHash(text)},
				memory.MemoryEmbedded{AgentRef: ref, MemoryID: id, Model: "m1", Dimensions: 4, TextHash: memory.TextHash(text), Vector: make(memory.Vector, 4)})
		}
		batch := appendAndRead(fed, payloads)
		fed = batch[len(batch)-1].Position
		start := time.Now()
		b.StartTimer()
		if err := rm.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		wall += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(wall)/float64(b.N*perBatch), "ns/memory")
}
