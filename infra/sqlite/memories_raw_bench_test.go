package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
)

// BenchmarkRawProcessedFilter measures what the raw entry listing's
// processed= filter and the stats ask of an agent of 100,000 raw entries,
// one in ten consumed by a pass: a page of 500 of each state, and the
// counts. The processed state is an indexed column, so no query walks the
// agent's entries.
func BenchmarkRawProcessedFilter(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	rm := sqlite.NewMemories(openDB(b))
	events := make([]domain.Event, n)
	for i := range events {
		events[i] = domain.Event{Position: uint64(i + 1)}
	}
	err := rm.Apply(ctx, events, func(ctx context.Context, tx memory.ReadModelTx, e domain.Event) error {
		i := int(e.Position - 1)
		if i == 0 {
			if err := tx.AddAgent(ctx, memory.AgentCreated{AgentRef: memAlice, EmbeddingModel: "m1", Dimensions: 4, CreatedAt: memT0}); err != nil {
				return err
			}
		}
		content, _ := json.Marshal(map[string]string{"content": fmt.Sprintf("raw thought number %d", i), "source": "import"})
		at := memT0.Add(time.Duration(i) * time.Second)
		id := fmt.Sprintf("raw_%08d", i)
		if err := tx.InsertMemory(ctx, memory.NewMemory{
			MemoryCreated: memory.MemoryCreated{AgentRef: memAlice, MemoryID: id, Type: memory.RawEntry, Content: content,
				Tags: []string{}, DerivedFrom: []string{}, CreatedAt: at, TextHash: memory.TextHash(string(content))},
			Vitality: memory.InitialVitality(memory.RawEntry, content, at),
		}); err != nil {
			return err
		}
		if i%10 == 0 {
			return tx.MarkConsumed(ctx, memAlice, id)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	now := memT0.Add(n * time.Second)
	for _, processed := range []bool{true, false} {
		b.Run(fmt.Sprintf("list processed=%v limit=500", processed), func(b *testing.B) {
			for range b.N {
				page, err := rm.ListMemories(ctx, memory.ListQuery{UserID: memAlice.UserID, AgentID: memAlice.AgentID, Types: []memory.Type{memory.RawEntry},
					Processed: &processed, IncludeWeak: true, Now: now, Limit: 500})
				if err != nil || len(page.Memories) != 500 || page.Memories[0].Processed != processed {
					b.Fatalf("%d entries, %v", len(page.Memories), err)
				}
			}
		})
	}
	b.Run("stats", func(b *testing.B) {
		for range b.N {
			st, found, err := rm.AgentStats(ctx, memAlice.UserID, memAlice.AgentID, now)
			if err != nil || !found || st.Raw.Processed != n/10 || st.Raw.Unprocessed != n-n/10 {
				b.Fatalf("stats %+v %v %v", st.Raw, found, err)
			}
		}
	})
}
