// Package sqlitetest gives tests a data directory that already holds the
// migrated empty SQLite database, so that a test opening a new database
// does not run every migration itself. Under the race detector migrating
// a new database is about a fifth of a CPU second (SQLite parses every
// statement of every migration); a package that opens a database per test
// spent most of its preparing there. The migration tests themselves open
// a plain t.TempDir() and migrate from scratch.
package sqlitetest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/engram-memory/engram/infra/sqlite"
)

// Dir returns a new temporary directory (removed when t ends) holding the
// migrated empty database: what sqlite.Open would leave in an empty
// directory, with nothing written.
func Dir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	Fill(t, dir)
	return dir
}

// Fill writes the migrated empty database into dir (created if needed),
// replacing any database there.
func Fill(t testing.TB, dir string) {
	t.Helper()
	files, err := template()
	if err != nil {
		t.Fatalf("migrate the template database: %v", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// template is the migrated empty database by file name (the database and
// its write-ahead log, if a closed database keeps one), made once per test
// binary.
var template = sync.OnceValues(func() (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "engram-sqlite-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(context.Background(), dir, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, name := range []string{sqlite.FileName, sqlite.FileName + "-wal"} {
		content, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) && name != sqlite.FileName {
			continue
		}
		if err != nil {
			return nil, err
		}
		files[name] = content
	}
	return files, nil
})
