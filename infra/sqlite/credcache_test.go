package sqlite_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/projections"
)

// TestAccountsCredentialCache: KeyByHash and SessionByHash are cached, and
// every applied batch (and a reset) is seen by the next lookup: a revoked
// key, its ended sessions, a cycled key and a new last_used_at.
func TestAccountsCredentialCache(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := sqlite.NewAccounts(db)
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	k1 := account.KeyRecord{KeyID: "k1", Name: "default", Prefix: "eng_aaaaaaaa", KeyHash: "h1", CreatedAt: t0}
	k2 := account.KeyRecord{KeyID: "k2", Name: "laptop", Prefix: "eng_bbbbbbbb", KeyHash: "h2", CreatedAt: t0}
	k3 := account.KeyRecord{KeyID: "k3", Name: "laptop", Prefix: "eng_cccccccc", KeyHash: "h3", CreatedAt: t0}
	events := userStreamEvents(t, "user-1",
		&account.UserRegistered{UserID: "u1", Email: "a@example.com", RegisteredAt: t0},
		&account.VerificationIssued{UserID: "u1", TokenHash: "t1", IssuedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)},
		&account.UserVerified{UserID: "u1", TokenHash: "t1", VerifiedAt: t0, InitialKey: k1},
		&account.APIKeyCreated{UserID: "u1", Key: k2},
		&account.SessionStarted{UserID: "u1", SessionID: "s1", KeyID: "k1", TokenHash: "sh1", StartedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		// applied one at a time below
		&account.APIKeysUsed{UserID: "u1", Uses: []account.KeyUse{{KeyID: "k1", LastUsedAt: t0.Add(time.Minute)}}},
		&account.APIKeyRevoked{UserID: "u1", KeyID: "k1", RevokedAt: t0.Add(time.Hour)},
		&account.APIKeyCycled{UserID: "u1", OldKeyID: "k2", NewKey: k3, RevokedAt: t0.Add(time.Hour)},
	)
	apply := func(batch ...domain.Event) {
		t.Helper()
		if err := projections.NewAccounts(m).Apply(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	key := func(hash string) (account.KeyView, bool) {
		t.Helper()
		k, ok, err := m.KeyByHash(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		return k, ok
	}
	session := func(hash string) (account.SessionView, bool) {
		t.Helper()
		s, ok, err := m.SessionByHash(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		return s, ok
	}

	// Unknown credentials are not cached: one that appears later is found.
	if _, ok := key("h1"); ok {
		t.Fatal("key before it exists")
	}
	if _, ok := session("sh1"); ok {
		t.Fatal("session before it exists")
	}
	apply(events[:5]...)
	for range 3 { // the second and third lookups come from the cache
		if k, ok := key("h1"); !ok || !k.Active() || !k.LastUsedAt.IsZero() {
			t.Fatalf("key h1 %+v %v", k, ok)
		}
		if s, ok := session("sh1"); !ok || !s.ValidAt(t0) {
			t.Fatalf("session sh1 %+v %v", s, ok)
		}
	}
	if _, ok := key("h2"); !ok {
		t.Fatal("key h2 missing")
	}

	apply(events[5])
	if k, _ := key("h1"); !k.LastUsedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("last_used_at not updated through the cache: %+v", k)
	}
	apply(events[6])
	if k, _ := key("h1"); k.Active() {
		t.Fatalf("revoked key still active through the cache: %+v", k)
	}
	if s, _ := session("sh1"); s.ValidAt(t0) || !s.Ended {
		t.Fatalf("session of a revoked key still valid through the cache: %+v", s)
	}
	apply(events[7])
	if k, _ := key("h2"); k.Active() {
		t.Fatalf("cycled key still active through the cache: %+v", k)
	}
	if k, ok := key("h3"); !ok || !k.Active() {
		t.Fatalf("new key of the cycle %+v %v", k, ok)
	}

	// A reset empties the read model: nothing is found from the cache.
	if err := m.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := key("h3"); ok {
		t.Fatal("key found after reset")
	}
	if _, ok := session("sh1"); ok {
		t.Fatal("session found after reset")
	}
}

// userStreamEvents numbers payloads as one user stream at positions 1…n.
func userStreamEvents(t *testing.T, stream string, payloads ...domain.Payload) []domain.Event {
	t.Helper()
	out := make([]domain.Event, len(payloads))
	for i, p := range payloads {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = domain.Event{Stream: stream, Version: uint64(i), Position: uint64(i + 1), Type: p.EventType(), Payload: raw}
	}
	return out
}
