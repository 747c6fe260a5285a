package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/sqlite"
)

// unsyncedPages counts the pages of path that the kernel holds dirty or
// under writeback (cachestat(2)): a file that was fsynced and not written
// since has none.
func unsyncedPages(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stat unix.Cachestat_t
	if err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{}, &stat, 0); err != nil {
		t.Fatalf("cachestat %s: %v", path, err)
	}
	return stat.Dirty + stat.Writeback
}

// diskTempDir is a temporary directory on a file system with a disk
// behind it: on tmpfs fsync writes nothing back and pages stay dirty, so a
// TMPDIR on tmpfs gives way to a directory beside the test's sources.
func diskTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type != unix.TMPFS_MAGIC && fs.Type != unix.RAMFS_MAGIC {
		return dir
	}
	dir, err := os.MkdirTemp(".", ".durability-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// The proof without strace that a durable append is on disk when Append
// returns: the page cache holds no unsynced page of the log. A relaxed
// append leaves its pages dirty for the kernel to write back later (after
// dirty_expire_centisecs, 30 s by default), which shows the check can see
// an unsynced write.
func TestDurableAppendLeavesNoUnsyncedPageOfTheLog(t *testing.T) {
	for _, tc := range []struct {
		durability sqlite.Durability
		synced     bool
	}{
		{sqlite.Durable, true},
		{sqlite.Relaxed, false},
	} {
		t.Run(string(tc.durability), func(t *testing.T) {
			ctx := context.Background()
			dir := diskTempDir(t)
			db, err := sqlite.Open(ctx, dir, sqlite.Options{Durability: tc.durability})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			store := sqlite.NewEventStore(db, time.Second)
			payload := []byte(`{"statement":"the deploy pipeline needs a manual approval step"}`)
			for i := range 20 {
				if _, err := store.Append(ctx, "agent", domain.ExpectAny, []domain.NewEvent{{Type: "MemoryCreated", SchemaVersion: 1, Payload: payload}}); err != nil {
					t.Fatal(err)
				}
				unsynced := unsyncedPages(t, filepath.Join(dir, sqlite.FileName+"-wal"))
				if tc.synced && unsynced != 0 {
					t.Fatalf("after acknowledged append %d the WAL has %d unsynced pages", i, unsynced)
				}
				if !tc.synced && unsynced == 0 && i == 19 {
					t.Fatal("relaxed appends left no unsynced page: the check cannot tell synced from unsynced")
				}
			}
		})
	}
}
