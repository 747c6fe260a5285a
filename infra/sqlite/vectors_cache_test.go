package sqlite_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/sqlite"
)

// Within one batch the vector state caches agents and memories; every
// read inside the batch must equal what a read in a later batch (from the
// database) returns, whatever the writes in between.
func TestVectorStateReadsWithinABatchEqualTheStoredRows(t *testing.T) {
	ctx := context.Background()
	store := sqlite.NewVectorStore(openDB(t))
	agent := domain.VectorAgent{UserID: "u", AgentID: "a", Space: domain.VectorSpace{Model: "m", Dimensions: 3}}
	created := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	steps := []struct {
		name  string
		write func(domain.VectorStateTx) error
	}{
		{"put agent", func(tx domain.VectorStateTx) error { return tx.PutAgent(ctx, agent) }},
		{"insert memory without tags", func(tx domain.VectorStateTx) error {
			return tx.PutMemory(ctx, domain.VectorMemory{MemoryID: "m1", UserID: "u", AgentID: "a", Type: "note", CreatedAt: created, TextHash: "h1"})
		}},
		{"update memory", func(tx domain.VectorStateTx) error {
			return tx.PutMemory(ctx, domain.VectorMemory{MemoryID: "m1", UserID: "other", AgentID: "a", Type: "fact", Tags: []string{"t"}, CreatedAt: time.Now(), TextHash: "h2", Forgotten: true})
		}},
		{"delete memory", func(tx domain.VectorStateTx) error { return tx.DeleteMemory(ctx, "m1") }},
		{"insert again with tags", func(tx domain.VectorStateTx) error {
			return tx.PutMemory(ctx, domain.VectorMemory{MemoryID: "m1", UserID: "u", AgentID: "a", Type: "note", Tags: []string{"x"}, CreatedAt: created, TextHash: "h3"})
		}},
		{"delete agent", func(tx domain.VectorStateTx) error { return tx.DeleteAgent(ctx, "u", "a") }},
	}
	type seen struct {
		agent       domain.VectorAgent
		agentFound  bool
		memory      domain.VectorMemory
		memoryFound bool
	}
	read := func(tx domain.VectorStateTx) (s seen, err error) {
		if s.agent, s.agentFound, err = tx.Agent(ctx, "u", "a"); err != nil {
			return s, err
		}
		s.memory, s.memoryFound, err = tx.Memory(ctx, "m1")
		return s, err
	}
	for i, step := range steps {
		var inBatch seen
		err := store.ApplyVectors(ctx, []domain.Event{{Position: uint64(2*i + 1)}}, func(ctx context.Context, tx domain.VectorStateTx, e domain.Event) error {
			if _, err := read(tx); err != nil { // fills the cache before the write
				return err
			}
			if err := step.write(tx); err != nil {
				return err
			}
			var err error
			inBatch, err = read(tx)
			return err
		}, nil)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		var stored seen
		err = store.ApplyVectors(ctx, []domain.Event{{Position: uint64(2*i + 2)}}, func(ctx context.Context, tx domain.VectorStateTx, e domain.Event) error {
			var err error
			stored, err = read(tx)
			return err
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(inBatch, stored) {
			t.Errorf("after %s, the batch read %+v but the database holds %+v", step.name, inBatch, stored)
		}
	}
}
