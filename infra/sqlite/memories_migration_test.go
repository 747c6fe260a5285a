package sqlite

import (
	"context"
	"testing"
)

// A database written before agents counted their forgotten memories gets
// the count from its rows, so memory_count is the same before and after
// the upgrade.
func TestForgottenCountMigrationCountsExistingRows(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	memoryRow := func(id, user, agent, forgotten string) string {
		return `INSERT INTO memories (id, user_id, agent_id, type, searchable, content, tags, derived_from, created_at, updated_at, forgotten_at, text_hash, embed_pending)
			VALUES ('` + id + `', '` + user + `', '` + agent + `', 'note', 1, '{}', '[]', '[]', 't', 't', ` + forgotten + `, 'h', 0)`
	}
	for _, stmt := range []string{
		`ALTER TABLE agents DROP COLUMN forgotten_memories`,
		`DELETE FROM migrations WHERE name LIKE '%0013_agent_forgotten_count.sql'`,
		`PRAGMA user_version = 0`, // as an engram before the schema version left it
		`INSERT INTO agents (user_id, agent_id, embedding_model, dimensions, created_at, stored_memories) VALUES ('u', 'a', 'm', 4, '2026-01-01T00:00:00.000000000Z', 3), ('u', 'b', 'm', 4, '2026-01-01T00:00:00.000000000Z', 1)`,
		memoryRow("m1", "u", "a", "NULL"),
		memoryRow("m2", "u", "a", "'t'"),
		memoryRow("m3", "u", "a", "'t'"),
		memoryRow("m4", "u", "b", "NULL"),
	} {
		if _, err := db.write.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	if db, err = Open(ctx, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for agent, want := range map[string]int{"a": 1, "b": 1} {
		a, found, err := NewMemories(db).Agent(ctx, "u", agent)
		if err != nil || !found || a.MemoryCount != want {
			t.Errorf("agent %s after the migration: memory_count %d (found %v, %v), want %d", agent, a.MemoryCount, found, err, want)
		}
	}
}
