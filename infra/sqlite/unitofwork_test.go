package sqlite_test

import (
	"context"
	"errors"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
)

// Two read models of one database applied inside a unit of work keep
// their writes and checkpoints together: both when the unit succeeds,
// neither when any part of it fails.
func TestUnitOfWorkKeepsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	events := []domain.Event{{Position: 1, Type: "t"}, {Position: 2, Type: "t"}}
	remember := func(ctx context.Context, tx audit.ReadModelTx, e domain.Event) error {
		return tx.RememberMemoryType(ctx, "m", "note")
	}
	streamVersion := func(ctx context.Context, tx memory.ReadModelTx, e domain.Event) error {
		return tx.RecordStreamVersion(ctx, "agent-stream", e.Position)
	}
	failed := errors.New("the second store fails")
	for _, tc := range []struct {
		name        string
		secondFails bool
		want        uint64
	}{
		{name: "a unit that succeeds keeps both", want: 2},
		{name: "a unit that fails keeps neither", secondFails: true, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			auditStore, memories := sqlite.NewAudit(db), sqlite.NewMemories(db)
			if auditStore.UnitOfWork() != memories.UnitOfWork() {
				t.Fatal("two stores of one database offer different units of work")
			}
			err := auditStore.UnitOfWork().InUnitOfWork(ctx, func(ctx context.Context) error {
				if err := auditStore.Apply(ctx, events, remember); err != nil {
					return err
				}
				return memories.Apply(ctx, events, func(ctx context.Context, tx memory.ReadModelTx, e domain.Event) error {
					if tc.secondFails {
						return failed
					}
					return streamVersion(ctx, tx, e)
				})
			})
			if tc.secondFails != errors.Is(err, failed) {
				t.Fatalf("unit of work: %v", err)
			}
			for name, store := range map[string]interface {
				Checkpoint(context.Context) (uint64, error)
			}{"audit": auditStore, "memories": memories} {
				if got, err := store.Checkpoint(ctx); err != nil || got != tc.want {
					t.Errorf("%s checkpoint = %d, %v; want %d", name, got, err, tc.want)
				}
			}
			wantVersion := int64(domain.ExpectNoStream)
			if tc.want > 0 {
				wantVersion = int64(tc.want)
			}
			if got, err := memories.StreamVersion(ctx, "agent-stream"); err != nil || got != wantVersion {
				t.Errorf("stream version = %d, %v; want %d", got, err, wantVersion)
			}
		})
	}
}
