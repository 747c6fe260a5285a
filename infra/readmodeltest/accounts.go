package readmodeltest

import (
	"context"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
)

// Accounts is an accounts read model store with the queries the account
// commands read it by (commands.AccountReader).
type Accounts interface {
	account.ReadModel
	UserByID(ctx context.Context, userID string) (account.UserView, bool, error)
	UserByVerificationToken(ctx context.Context, tokenHash string) (account.UserView, bool, error)
	KeyByHash(ctx context.Context, hash string) (account.KeyView, bool, error)
	KeysByUser(ctx context.Context, userID string) ([]account.KeyView, error)
	SessionByHash(ctx context.Context, hash string) (account.SessionView, bool, error)
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
}
