package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/sqlite"
)

// The read pool maps the database file (see Open): without the mapping
// every page a search reads is a pread into a private page cache.
func TestReadersMapTheFile(t *testing.T) {
	db := openDB(t)
	var size int64
	if err := db.Reader().QueryRowContext(context.Background(), `PRAGMA mmap_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if size <= 0 {
		t.Fatalf("mmap_size of a reader = %d", size)
	}
}

// Close leaves an empty WAL beside its index: the writer copies the WAL
// into the database, so the next open (every command line command is one)
// does not rebuild the WAL's index from all of it and read pages from it;
// and the files stay, so a restart on a full disk need not create them
// (TestFullDiskRefusesWritesClearlyAndRecoversWithoutRestart).
func TestCloseLeavesAnEmptyWAL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tables int
	if err := db.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema`).Scan(&tables); err != nil || tables == 0 {
		t.Fatalf("the migrated schema through a reader: %d tables, %v", tables, err)
	}
	wal := filepath.Join(dir, sqlite.FileName+"-wal")
	if info, err := os.Stat(wal); err != nil || info.Size() == 0 {
		t.Fatalf("before Close the migrations should be in the WAL: %v, %v", info, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(wal); err != nil || info.Size() != 0 {
		t.Fatalf("after Close the WAL should be there and empty: %v, %v", info, err)
	}
	if _, err := os.Stat(filepath.Join(dir, sqlite.FileName+"-shm")); err != nil {
		t.Fatalf("after Close the WAL's index should stay: %v", err)
	}
	reopened, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if err := reopened.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema`).Scan(&tables); err != nil || tables == 0 {
		t.Fatalf("reopened: %d tables, %v", tables, err)
	}
}

// A read-only opener cannot migrate, so it refuses a database whose
// schema an older engram wrote, naming what is missing and how to
// upgrade, instead of failing later on a missing column.
func TestReadOnlyOpenRefusesAnOlderSchema(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		older   func(t *testing.T, dir string)
		wantErr string
	}{
		{name: "current schema", older: func(*testing.T, string) {}},
		{name: "a migration not applied", older: func(t *testing.T, dir string) {
			execSQL(t, dir, `DELETE FROM migrations WHERE name = 'migrations/0013_agent_forgotten_count.sql'`)
			execSQL(t, dir, olderSchemaVersion)
		}, wantErr: "(not applied: 0013_agent_forgotten_count.sql); any engram command that writes to it"},
		{name: "no migrations at all", older: func(t *testing.T, dir string) {
			execSQL(t, dir, `DROP TABLE migrations`)
			execSQL(t, dir, olderSchemaVersion)
		}, wantErr: "not applied: 0001_"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := sqlite.Open(ctx, dir, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			tc.older(t, dir)
			ro, err := sqlite.Open(ctx, dir, sqlite.Options{ReadOnly: true})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("read-only open of a current database: %v", err)
				}
				_ = ro.Close()
				return
			}
			if err == nil {
				_ = ro.Close()
				t.Fatalf("read-only open succeeded; want an error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

// olderSchemaVersion sets the schema version an engram before it was kept
// left in every database.
const olderSchemaVersion = `PRAGMA user_version = 0`

// execSQL runs one statement on the database in dir with a plain
// connection, as an older engram (or another tool) would have left it.
func execSQL(t *testing.T, dir, stmt string) {
	t.Helper()
	conn, err := sql.Open("sqlite", filepath.Join(dir, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}
