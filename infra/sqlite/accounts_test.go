package sqlite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

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

func TestAccountsReadModel(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := sqlite.NewAccounts(db)
	p := projections.NewAccounts(m)
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	k1 := account.KeyRecord{KeyID: "k1", Name: "default", Prefix: "eng_aaaaaaaa", KeyHash: "h1", CreatedAt: t0}
	k2 := account.KeyRecord{KeyID: "k2", Name: "laptop", Prefix: "eng_bbbbbbbb", KeyHash: "h2", CreatedAt: t0.Add(time.Second)}
	events := userStreamEvents(t, "user-1",
		&account.UserRegistered{UserID: "u1", Email: "a@example.com", RegisteredAt: t0},
		&account.VerificationIssued{UserID: "u1", TokenHash: "t1", IssuedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)},
		&account.UserVerified{UserID: "u1", TokenHash: "t1", VerifiedAt: t0, InitialKey: k1},
		&account.APIKeyCreated{UserID: "u1", Key: k2},
		&account.SessionStarted{UserID: "u1", SessionID: "s1", KeyID: "k1", TokenHash: "sh1", StartedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		&account.APIKeysUsed{UserID: "u1", Uses: []account.KeyUse{{KeyID: "k1", LastUsedAt: t0.Add(time.Minute)}}},
		&account.APIKeysUsed{UserID: "u1", Uses: []account.KeyUse{{KeyID: "k1", LastUsedAt: t0}}}, // older: ignored
		&account.APIKeyRevoked{UserID: "u1", KeyID: "k1", RevokedAt: t0.Add(time.Hour)},
	)
	// Redelivery of a batch, or of part of one, changes nothing.
	for _, batch := range [][]domain.Event{events[:3], events, events[2:], events} {
		if err := p.Apply(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if pos, _ := p.Position(ctx); pos != uint64(len(events)) {
		t.Fatalf("checkpoint %d", pos)
	}

	u, ok, err := m.UserByEmail(ctx, "a@example.com")
	if err != nil || !ok || u.ID != "u1" || u.Stream != "user-1" || !u.Verified || !u.CreatedAt.Equal(t0) {
		t.Fatalf("user %+v %v %v", u, ok, err)
	}
	if u2, ok, _ := m.UserByVerificationToken(ctx, "t1"); !ok || u2 != u {
		t.Fatalf("user by token %+v", u2)
	}
	if _, ok, _ := m.UserByID(ctx, "nobody"); ok {
		t.Fatal("found a user that does not exist")
	}
	key, ok, err := m.KeyByHash(ctx, "h1")
	if err != nil || !ok || key.Active() || !key.LastUsedAt.Equal(t0.Add(time.Minute)) || !key.RevokedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("key %+v %v %v", key, ok, err)
	}
	keys, err := m.KeysByUser(ctx, "u1")
	if err != nil || len(keys) != 2 || keys[0].ID != "k1" || keys[1].ID != "k2" || !keys[1].Active() || !keys[1].LastUsedAt.IsZero() {
		t.Fatalf("keys %+v %v", keys, err)
	}
	s, ok, err := m.SessionByHash(ctx, "sh1")
	if err != nil || !ok || !s.Ended || s.KeyID != "k1" || s.ValidAt(t0) {
		t.Fatalf("session of a revoked key %+v %v %v", s, ok, err)
	}

	var before, after bytes.Buffer
	if err := m.Export(ctx, &before); err != nil {
		t.Fatal(err)
	}
	if err := m.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := m.Export(ctx, &after); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) || before.Len() == 0 {
		t.Fatalf("export differs after reset and replay:\n%s\n%s", before.String(), after.String())
	}
}
