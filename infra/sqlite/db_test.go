package sqlite_test

import (
	"context"
	"testing"
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
