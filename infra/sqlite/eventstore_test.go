package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventstoretest"
	"github.com/engram-memory/engram/infra/sqlite"
)

func openDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestEventStoreConformance(t *testing.T) {
	eventstoretest.Run(t, func(t *testing.T) domain.EventStore {
		return sqlite.NewEventStore(openDB(t), 50*time.Millisecond)
	})
}
