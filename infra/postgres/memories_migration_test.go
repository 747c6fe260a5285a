package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/postgres"
)

// A database written before agents counted their forgotten memories
// (migration 0013) gets the count from its rows, so memory_count is the
// same before and after the upgrade.
func TestForgottenCountMigrationCountsExistingRows(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	var schema string
	if err := db.Pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	a, b := memory.AgentRef{UserID: "u", AgentID: "a"}, memory.AgentRef{UserID: "u", AgentID: "b"}
	note := func(ref memory.AgentRef, id string) memory.NewMemory {
		content := json.RawMessage(`{"content":"` + id + `"}`)
		return memory.NewMemory{
			MemoryCreated: memory.MemoryCreated{AgentRef: ref, MemoryID: id, Type: memory.Note, Content: content,
				Tags: []string{}, DerivedFrom: []string{}, CreatedAt: t0, TextHash: memory.TextHash(id)},
			Vitality: memory.InitialVitality(memory.Note, content, t0),
		}
	}
	err := postgres.NewMemories(db).Apply(ctx, []domain.Event{{Position: 1}}, func(ctx context.Context, tx memory.ReadModelTx, _ domain.Event) error {
		for _, ref := range []memory.AgentRef{a, b} {
			if err := tx.AddAgent(ctx, memory.AgentCreated{AgentRef: ref, EmbeddingModel: "m", Dimensions: 4, CreatedAt: t0}); err != nil {
				return err
			}
		}
		for _, m := range []memory.NewMemory{note(a, "m1"), note(a, "m2"), note(a, "m3"), note(b, "m4")} {
			if err := tx.InsertMemory(ctx, m); err != nil {
				return err
			}
		}
		for _, id := range []string{"m2", "m3"} {
			if err := tx.Forget(ctx, a, id, t0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Back to the schema before 0013, rows kept; opening again migrates.
	for _, stmt := range []string{
		`ALTER TABLE agents DROP COLUMN forgotten_memories`,
		`DELETE FROM migrations WHERE name LIKE '%0013_agent_forgotten_count.sql'`,
	} {
		if _, err := db.Pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	upgraded, err := postgres.Open(ctx, withSearchPath(t, pg.URL(t), schema))
	if err != nil {
		t.Fatal(err)
	}
	defer upgraded.Close()
	for ref, want := range map[memory.AgentRef]int{a: 1, b: 1} {
		got, found, err := postgres.NewMemories(upgraded).Agent(ctx, ref.UserID, ref.AgentID)
		if err != nil || !found || got.MemoryCount != want || got.StoredMemories != map[memory.AgentRef]int{a: 3, b: 1}[ref] {
			t.Errorf("agent %s after the migration: memory_count %d of %d stored (found %v, %v), want %d", ref.AgentID, got.MemoryCount, got.StoredMemories, found, err, want)
		}
	}
}
