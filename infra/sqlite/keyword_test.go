package sqlite

import (
	"context"
	"testing"
)

// A database whose keyword projection was written before the metadata
// column existed is emptied by the migration, so the projection replays
// the log (and indexes metadata) at start.
func TestKeywordMetaMigrationReplays(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, stmt := range []string{
		`ALTER TABLE keyword_docs DROP COLUMN meta`,
		`DELETE FROM migrations WHERE name LIKE '%0008_keyword_meta.sql'`,
		`PRAGMA user_version = 0`, // as an engram before the schema version left it
		`INSERT INTO keyword_agents (user_id, agent_id) VALUES ('u', 'a')`,
		`INSERT INTO keyword_docs (memory_id, user_id, agent_id, type, tags, created_ns, body) VALUES ('m1', 'u', 'a', 'note', '["x"]', 0, 'old')`,
		`INSERT INTO projection_checkpoints (name, position) VALUES ('keyword', 42)`,
	} {
		if _, err := db.write.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	db, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if pos, err := NewKeywordStore(db).KeywordCheckpoint(ctx); err != nil || pos != 0 {
		t.Fatalf("keyword position after the migration: %d %v, want 0 (replay)", pos, err)
	}
	var n int
	if err := db.write.QueryRowContext(ctx, `SELECT COUNT(*) FROM keyword_docs`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("keyword_docs rows after the migration: %d %v", n, err)
	}
}
