package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/sqlite"
)

// A log written before appends claimed memory ids (migration 0014) gets
// the claims of its memories: a memory created before the upgrade keeps
// its id from a push after it.
func TestClaimsMigrationClaimsTheLogsMemories(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	created := func(id string) domain.NewEvent {
		raw, _ := json.Marshal(map[string]string{"memory_id": id})
		return domain.NewEvent{Type: "MemoryCreated", SchemaVersion: 1, Payload: raw}
	}
	// Written as before 0014: no claims (the same id twice, as the race
	// this migration closes could leave it).
	store := sqlite.NewEventStore(db, 50*time.Millisecond)
	for stream, events := range map[string][]domain.NewEvent{"agent-u-a": {created("m1"), created("m2")}, "agent-v-b": {created("m2")}} {
		if _, err := store.Append(ctx, stream, domain.ExpectAny, events); err != nil {
			t.Fatal(err)
		}
	}
	err = db.WriteTx(ctx, func(tx *sql.Tx) error {
		// An engram before the schema version left it at 0.
		for _, stmt := range []string{`DROP TABLE claims`, `DELETE FROM migrations WHERE name LIKE '%0014_claims.sql'`, `PRAGMA user_version = 0`} {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	upgraded, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer upgraded.Close()
	store = sqlite.NewEventStore(upgraded, 50*time.Millisecond)
	for _, c := range []struct {
		memoryID string
		taken    bool
	}{{"m1", true}, {"m2", true}, {"m3", false}} {
		e := created(c.memoryID)
		e.Claims = []string{domain.MemoryClaim(c.memoryID)}
		_, err := store.Append(ctx, "agent-w-c", domain.ExpectAny, []domain.NewEvent{e})
		if taken := errors.Is(err, domain.ErrClaimTaken); taken != c.taken || (err != nil && !taken) {
			t.Errorf("memory %s after the migration: append error %v, want taken %v", c.memoryID, err, c.taken)
		}
	}
}
