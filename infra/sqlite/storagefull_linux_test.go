package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/engram-memory/engram/infra/sqlite"
)

// On a full disk a write fails with an error IsStorageFull recognises;
// once space is freed, Reclaim gives back the WAL's space and writes
// succeed again.
func TestFullDiskIsRecognisedAndReclaimed(t *testing.T) {
	disk := t.TempDir()
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, fmt.Sprintf("size=%d", 8<<20)); err != nil {
		t.Fatalf("this test fills a small tmpfs of its own and must mount one (run it as root): mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(disk, syscall.MNT_DETACH) })
	ctx := context.Background()
	dataDir := filepath.Join(disk, "data")
	db, err := sqlite.Open(ctx, dataDir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := 0
	write := func() error { // a new row of 256 KiB
		rows++
		return db.WriteTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO projection_checkpoints (name, position) VALUES (?, 1)`, fmt.Sprint(rows, strings.Repeat("x", 256<<10)))
			return err
		})
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}

	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	f.Close()
	var werr error
	for range 64 { // until the WAL's slack is used up
		if werr = write(); werr != nil {
			break
		}
	}
	if !sqlite.IsStorageFull(werr) {
		t.Fatalf("write on a full disk: %v, want an error IsStorageFull recognises", werr)
	}
	if sqlite.IsStorageFull(errors.New("database or disk is full")) {
		t.Error("IsStorageFull recognises an error by its text")
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := db.Reclaim(ctx); err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dataDir, sqlite.FileName+"-wal")); err != nil || fi.Size() != 0 {
		t.Errorf("WAL after Reclaim: %v, %v; want it empty", fi.Size(), err)
	}
	if err := write(); err != nil {
		t.Fatalf("write once space was freed: %v", err)
	}
}
