//go:build unix

package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/sqlite"
)

// The database and its -wal and -shm files are private to the owner
// whatever the umask, in a new database and in one whose files were made
// readable by others (an older version created them 0644).
func TestDatabaseFilesAreOwnerOnly(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0o022))
	files := []string{sqlite.FileName, sqlite.FileName + "-wal", sqlite.FileName + "-shm"}
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir string)
	}{
		{"new database in a new dir", func(*testing.T, string) {}},
		{"existing database with 0644 files", func(t *testing.T, dir string) {
			openAppendClose(t, dir)
			for _, f := range files {
				if err := os.Chmod(filepath.Join(dir, f), 0o644); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			tc.prepare(t, dir)
			ctx := context.Background()
			db, err := sqlite.Open(ctx, dir, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := sqlite.NewEventStore(db, time.Second).Append(ctx, "s", domain.ExpectAny, []domain.NewEvent{{Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}}); err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				fi, err := os.Stat(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if mode := fi.Mode().Perm(); mode != 0o600 {
					t.Errorf("%s has mode %o, want 600", f, mode)
				}
			}
			if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("data dir: %v, mode %o, want 700", err, fi.Mode().Perm())
			}
		})
	}
}

func openAppendClose(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := sqlite.NewEventStore(db, time.Second).Append(ctx, "s", domain.ExpectAny, []domain.NewEvent{{Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
}
