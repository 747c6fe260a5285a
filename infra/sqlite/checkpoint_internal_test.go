package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"testing"
	"time"
)

// walState reads from the WAL index (the -shm file, SQLite's wal.c
// layout, native byte order) how many frames the WAL holds (mxFrame of
// the index header) and how many of them are copied into the database
// (nBackfill of the checkpoint info that follows the two header copies).
func walState(t *testing.T, db *DB) (frames, backfilled uint32) {
	t.Helper()
	shm, err := os.ReadFile(db.path + "-shm")
	if err != nil || len(shm) < 100 {
		t.Fatalf("read WAL index: %d bytes, %v", len(shm), err)
	}
	return binary.NativeEndian.Uint32(shm[16:]), binary.NativeEndian.Uint32(shm[96:])
}

// Once writes pause, the whole WAL is checkpointed, so readers read the
// mapped database file instead of WAL frames: well before the automatic
// checkpoint's size is reached.
func TestWALIsCheckpointedWhenWritesPause(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 20 {
		err := db.WriteTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO projection_checkpoints (name, position) VALUES (?, ?)
				ON CONFLICT (name) DO UPDATE SET position = excluded.position`, "test", i)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if frames, backfilled := walState(t, db); frames == 0 || frames >= walCheckpointPages || backfilled == frames {
		t.Fatalf("after the writes the WAL holds %d frames, %d checkpointed; want some, fewer than %d, not all checkpointed",
			frames, backfilled, walCheckpointPages)
	}
	deadline := time.Now().Add(10 * walIdleCheckpointAfter)
	for {
		frames, backfilled := walState(t, db)
		if backfilled == frames {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the last write the WAL holds %d frames, %d checkpointed", 10*walIdleCheckpointAfter, frames, backfilled)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
