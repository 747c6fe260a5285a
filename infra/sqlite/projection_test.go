package sqlite_test

import (
	"context"
	"database/sql"
	"maps"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/sqlite"
)

// Checkpoints reads the named checkpoints at once, each the value its
// Checkpoint reads; a projection that applied nothing is at 0.
func TestCheckpointsReadsEachNamedCheckpoint(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, at := range map[string]uint64{"memories": 7, "audit": 3, "not asked": 9} {
		err := db.ApplyEvents(ctx, name, []domain.Event{{Position: at}}, func(*sql.Tx, domain.Event) error { return nil }, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"memories", "audit", "never applied"}
	got, err := db.Checkpoints(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]uint64{"memories": 7, "audit": 3, "never applied": 0}; !maps.Equal(got, want) {
		t.Fatalf("Checkpoints = %v, want %v", got, want)
	}
	for _, name := range names {
		if one, err := db.Checkpoint(ctx, name); err != nil || one != got[name] {
			t.Errorf("Checkpoint(%s) = %d, %v; Checkpoints read %d", name, one, err, got[name])
		}
	}
}
