package sqlitetest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
)

// TestDirHoldsACurrentDatabase: the copied database has the schema that
// migrating an empty directory gives, and sqlite.Open finds it current: it
// migrates nothing, so the file is byte for byte what it was.
func TestDirHoldsACurrentDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	copied := sqlitetest.Dir(t)
	before, err := os.ReadFile(filepath.Join(copied, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	got := schemaOf(ctx, t, copied)
	after, err := os.ReadFile(filepath.Join(copied, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("opening the copied database changed it: it was not current")
	}
	if want := schemaOf(ctx, t, t.TempDir()); !slices.Equal(got, want) {
		t.Errorf("copied schema:\n%q\nmigrated from scratch:\n%q", got, want)
	}
}

// schemaOf opens the database in dir (migrating it if needed) and returns
// its schema objects and version.
func schemaOf(ctx context.Context, t *testing.T, dir string) []string {
	t.Helper()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version string
	if err := db.Reader().QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Reader().QueryContext(ctx, `SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_schema ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	schema := []string{"user_version " + version}
	for rows.Next() {
		var object string
		if err := rows.Scan(&object); err != nil {
			t.Fatal(err)
		}
		schema = append(schema, object)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return schema
}
