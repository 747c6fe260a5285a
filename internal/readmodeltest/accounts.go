package readmodeltest

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/projections"
)

// Accounts is an accounts read model store with the queries the account
// commands read it by (commands.AccountReadModel).
type Accounts interface {
	account.ReadModel
	UserByID(ctx context.Context, userID string) (account.UserView, bool, error)
	UserByVerificationToken(ctx context.Context, tokenHash string) (account.UserView, bool, error)
	KeyByHash(ctx context.Context, hash string) (account.KeyView, bool, error)
	KeysByUser(ctx context.Context, userID string) ([]account.KeyView, error)
	SessionByHash(ctx context.Context, hash string) (account.SessionView, bool, error)
	UserByEmail(ctx context.Context, email string) (account.UserView, bool, error)
	Export(ctx context.Context, w io.Writer) error
}

type accountOp = op[account.ReadModelTx]

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// RunAccounts runs the suite against the stores open returns.
func RunAccounts(t *testing.T, open func(t *testing.T) Accounts) {
	ctx := context.Background()
	t.Run("UnitOfWork", unitOfWork[account.ReadModelTx]{
		open: func(t *testing.T) domain.ReadModelStore[account.ReadModelTx] { return open(t) },
		put: func(ctx context.Context, tx account.ReadModelTx, i int) error {
			return tx.AddUser(ctx, "user-"+id("u", i), account.UserRegistered{UserID: id("u", i), Email: id("u", i) + "@example.com", RegisteredAt: t0})
		},
		seen: func(t *testing.T, s domain.ReadModelStore[account.ReadModelTx], i int) bool {
			_, found, err := s.(Accounts).UserByID(ctx, id("u", i))
			if err != nil {
				t.Fatal(err)
			}
			return found
		},
	}.run)

	t.Run("RegisterVerifyAndKeys", func(t *testing.T) {
		s := open(t)
		k1 := account.KeyRecord{KeyID: "k1", Name: "default", Prefix: "eng_aaaaaaaa", KeyHash: "h1", CreatedAt: t0}
		mustApply(t, s, 1,
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.AddUser(ctx, "user-u1", account.UserRegistered{UserID: "u1", Email: "a@example.com", RegisteredAt: t0})
			},
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.AddVerificationToken(ctx, account.VerificationIssued{UserID: "u1", TokenHash: "t1", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)})
			},
		)
		u, found, err := s.UserByVerificationToken(ctx, "t1")
		if err != nil || !found || u.ID != "u1" || u.Verified || u.Stream != "user-u1" || u.Email != "a@example.com" || !u.CreatedAt.Equal(t0) {
			t.Fatalf("by token before verification: %+v %v %v", u, found, err)
		}
		mustApply(t, s, 3,
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.MarkVerified(ctx, "u1", "t1", t0.Add(time.Minute))
			},
			func(ctx context.Context, tx account.ReadModelTx) error { return tx.AddKey(ctx, "u1", k1) },
		)
		if u, _, _ := s.UserByID(ctx, "u1"); !u.Verified {
			t.Fatalf("not verified: %+v", u)
		}
		k, found, err := s.KeyByHash(ctx, "h1")
		if err != nil || !found || k.ID != "k1" || k.UserID != "u1" || k.Name != "default" || k.Prefix != "eng_aaaaaaaa" || !k.Active() || !k.CreatedAt.Equal(t0) {
			t.Fatalf("key: %+v %v %v", k, found, err)
		}
	})

	t.Run("RevokeKeyEndsItsSessionsOnly", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1,
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.AddUser(ctx, "user-u1", account.UserRegistered{UserID: "u1", Email: "a@example.com", RegisteredAt: t0})
			},
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.AddKey(ctx, "u1", account.KeyRecord{KeyID: "k1", Name: "a", Prefix: "eng_1", KeyHash: "h1", CreatedAt: t0})
			},
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.AddKey(ctx, "u1", account.KeyRecord{KeyID: "k2", Name: "b", Prefix: "eng_2", KeyHash: "h2", CreatedAt: t0})
			},
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.AddSession(ctx, account.SessionStarted{UserID: "u1", SessionID: "s1", KeyID: "k1", TokenHash: "sh1", StartedAt: t0, ExpiresAt: t0.Add(time.Hour)})
			},
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.AddSession(ctx, account.SessionStarted{UserID: "u1", SessionID: "s2", KeyID: "k2", TokenHash: "sh2", StartedAt: t0, ExpiresAt: t0.Add(time.Hour)})
			},
		)
		if sess, found, err := s.SessionByHash(ctx, "sh1"); err != nil || !found || !sess.ValidAt(t0) || sess.KeyID != "k1" || sess.UserID != "u1" {
			t.Fatalf("session before revoke: %+v %v %v", sess, found, err)
		}
		mustApply(t, s, 6, func(ctx context.Context, tx account.ReadModelTx) error {
			return tx.RevokeKey(ctx, "k1", t0.Add(time.Minute))
		})
		if k, _, _ := s.KeyByHash(ctx, "h1"); k.Active() || !k.RevokedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("revoked key: %+v", k)
		}
		if sess, _, _ := s.SessionByHash(ctx, "sh1"); !sess.Ended {
			t.Fatalf("session of the revoked key: %+v", sess)
		}
		if sess, _, _ := s.SessionByHash(ctx, "sh2"); sess.Ended {
			t.Fatalf("session of another key ended: %+v", sess)
		}
		if k, _, _ := s.KeyByHash(ctx, "h2"); !k.Active() {
			t.Fatalf("other key revoked: %+v", k)
		}
	})

	t.Run("KeyUsedKeepsTheLatestUseOfTheOwnersKey", func(t *testing.T) {
		s := open(t)
		used := func(userID string, at time.Time) accountOp {
			return func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.KeyUsed(ctx, userID, account.KeyUse{KeyID: "k1", LastUsedAt: at})
			}
		}
		mustApply(t, s, 1,
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.AddKey(ctx, "u1", account.KeyRecord{KeyID: "k1", Name: "a", Prefix: "eng_1", KeyHash: "h1", CreatedAt: t0})
			},
			used("u1", t0.Add(2*time.Minute)),
			used("u1", t0.Add(time.Minute)), // older, from another node: ignored
			used("u2", t0.Add(time.Hour)),   // not the owner: ignored
		)
		if k, _, _ := s.KeyByHash(ctx, "h1"); !k.LastUsedAt.Equal(t0.Add(2 * time.Minute)) {
			t.Fatalf("last used = %v, want %v", k.LastUsedAt, t0.Add(2*time.Minute))
		}
	})

	t.Run("KeysAreListedPerUser", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1,
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.AddKey(ctx, "u1", account.KeyRecord{KeyID: "k1", Name: "a", Prefix: "eng_1", KeyHash: "h1", CreatedAt: t0})
			},
			func(ctx context.Context, tx account.ReadModelTx) error {
				return tx.AddKey(ctx, "u2", account.KeyRecord{KeyID: "k2", Name: "b", Prefix: "eng_2", KeyHash: "h2", CreatedAt: t0})
			},
		)
		for user, want := range map[string]string{"u1": "k1", "u2": "k2"} {
			keys, err := s.KeysByUser(ctx, user)
			if err != nil || len(keys) != 1 || keys[0].ID != want {
				t.Fatalf("keys of %s: %+v %v; want only %s", user, keys, err, want)
			}
		}
		if keys, err := s.KeysByUser(ctx, "u3"); err != nil || len(keys) != 0 {
			t.Fatalf("keys of a user without any: %+v %v", keys, err)
		}
	})

	// The queries over a state the projection built from a user stream,
	// redelivered in parts, and that state rebuilt after a Reset.
	t.Run("ProjectionFedQueriesAndReplay", func(t *testing.T) {
		m := open(t)
		p := projections.NewAccounts(m)
		// The accounts stores keep times to the microsecond (PostgreSQL's
		// TIMESTAMPTZ); only the memories read model keeps nanoseconds.
		t0 := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
		k1 := account.KeyRecord{KeyID: "k1", Name: "default", Prefix: "eng_aaaaaaaa", KeyHash: "h1", CreatedAt: t0}
		k2 := account.KeyRecord{KeyID: "k2", Name: "laptop", Prefix: "eng_bbbbbbbb", KeyHash: "h2", CreatedAt: t0.Add(time.Second)}
		var log eventLog
		events := log.record(t, "user-1",
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
	})
}
