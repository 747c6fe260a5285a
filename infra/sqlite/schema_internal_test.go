package sqlite

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// An Open of a database at this build's schema version reads the version
// on a reader and leaves the writer unconnected; any other database is
// brought to the version by the writer (migrations, a cut rebuild's
// deferred indexes) before the Open returns, and the next Open is the
// cheap one. A newer engram's version is never lowered.
func TestOpenChecksTheSchemaVersionAndMigratesOnlyWhenItIsNotCurrent(t *testing.T) {
	ctx := context.Background()
	names, err := migrationNames()
	if err != nil {
		t.Fatal(err)
	}
	current := len(names)
	cases := []struct {
		name string
		// leave changes the database as the writer that last closed it left it.
		leave func(t *testing.T, db *DB)
		// migrates: the Open runs the writer's schema work.
		migrates    bool
		wantVersion int
	}{
		{name: "current", leave: func(*testing.T, *DB) {}, wantVersion: current},
		{name: "written by an engram before the schema version", leave: func(t *testing.T, db *DB) {
			execWrite(t, db, `PRAGMA user_version = 0`)
		}, migrates: true, wantVersion: current},
		{name: "one migration behind", leave: func(t *testing.T, db *DB) {
			execWrite(t, db, `ALTER TABLE agents DROP COLUMN forgotten_memories`)
			execWrite(t, db, `DELETE FROM migrations WHERE name LIKE '%0013_agent_forgotten_count.sql'`)
			execWrite(t, db, fmt.Sprintf(`PRAGMA user_version = %d`, current-1))
		}, migrates: true, wantVersion: current},
		{name: "written by a newer engram", leave: func(t *testing.T, db *DB) {
			execWrite(t, db, fmt.Sprintf(`PRAGMA user_version = %d`, current+1))
		}, migrates: true, wantVersion: current + 1},
		{name: "a rebuild cut after deferring its indexes", leave: func(t *testing.T, db *DB) {
			if err := db.DeferIndexes(ctx, []string{memoriesCheckpoint}); err != nil {
				t.Fatal(err)
			}
		}, migrates: true, wantVersion: current},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := Open(ctx, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			indexes := indexNames(t, db)
			tc.leave(t, db)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			db, err = Open(ctx, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := db.write.Stats().OpenConnections > 0; got != tc.migrates {
				t.Errorf("writer connected by the Open: %v, want %v", got, tc.migrates)
			}
			state, err := readSchemaState(ctx, db.read)
			if err != nil {
				t.Fatal(err)
			}
			if state.version != tc.wantVersion || state.deferredIndexes {
				t.Errorf("after the Open: version %d, deferred indexes %v; want version %d, none deferred", state.version, state.deferredIndexes, tc.wantVersion)
			}
			if got := indexNames(t, db); got != indexes {
				t.Errorf("indexes after the Open:\n%s\nwant\n%s", got, indexes)
			}
			// A column of the last migration's: the schema is whole.
			if _, err := db.read.ExecContext(ctx, `SELECT forgotten_memories FROM agents`); err != nil {
				t.Errorf("the migrated schema: %v", err)
			}
			// The writer connects at its first write, and Close still
			// empties the WAL of what it wrote.
			execWrite(t, db, `INSERT INTO projection_checkpoints (name, position) VALUES ('test', 1)`)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if info, err := os.Stat(db.path + "-wal"); err != nil || info.Size() != 0 {
				t.Fatalf("after a write and Close the WAL should be empty: %v, %v", info, err)
			}

			again, err := Open(ctx, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if again.write.Stats().OpenConnections > 0 && tc.wantVersion == current {
				t.Error("the Open after the one that migrated connected the writer")
			}
		})
	}
}

// execWrite runs one statement on db's writer.
func execWrite(t *testing.T, db *DB, stmt string) {
	t.Helper()
	if _, err := db.write.ExecContext(context.Background(), stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// indexNames lists the database's indexes, one a line.
func indexNames(t *testing.T, db *DB) string {
	t.Helper()
	var names string
	err := db.read.QueryRowContext(context.Background(),
		`SELECT group_concat(name, char(10)) FROM (SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name)`).Scan(&names)
	if err != nil {
		t.Fatal(err)
	}
	return names
}
