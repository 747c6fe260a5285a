package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
)

// Accounts is the accounts read model (account.ReadModel) in PostgreSQL:
// users, verification tokens, API keys and sessions. It answers the
// queries of commands (commands.AccountReadModel).
//
// Unlike the SQLite store it keeps no credential cache: with several nodes
// sharing the read model, a node's cache would not see a key revoked
// through another node's projection.
type Accounts struct {
	tableModel
}

var _ account.ReadModel = (*Accounts)(nil)

// NewAccounts returns the accounts read model stored in db.
func NewAccounts(db *DB) *Accounts {
	return &Accounts{tableModel{db: db, name: "accounts",
		tables: []string{"account_users", "account_verification_tokens", "account_keys", "account_sessions"}}}
}

// Apply implements account.ReadModel.
func (a *Accounts) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, account.ReadModelTx, domain.Event) error) error {
	return applyBatch(ctx, a.db, a.name, events, func(b batchTx) account.ReadModelTx { return accountsTx{b} }, apply)
}

// accountsTx is account.ReadModelTx over one batch's transaction.
type accountsTx struct{ batchTx }

func (t accountsTx) AddUser(ctx context.Context, stream string, u account.UserRegistered) error {
	return t.run(ctx, `INSERT INTO account_users (user_id, email, stream, created_at) VALUES ($1, $2, $3, $4)`,
		u.UserID, u.Email, stream, u.RegisteredAt.UTC())
}

func (t accountsTx) AddVerificationToken(ctx context.Context, v account.VerificationIssued) error {
	return t.run(ctx, `INSERT INTO account_verification_tokens (token_hash, user_id, issued_at, expires_at) VALUES ($1, $2, $3, $4)`,
		v.TokenHash, v.UserID, v.IssuedAt.UTC(), v.ExpiresAt.UTC())
}

func (t accountsTx) MarkVerified(ctx context.Context, userID, tokenHash string, at time.Time) error {
	if err := t.run(ctx, `UPDATE account_users SET verified = TRUE, verified_at = $1 WHERE user_id = $2`, at.UTC(), userID); err != nil {
		return err
	}
	return t.run(ctx, `UPDATE account_verification_tokens SET used_at = $1 WHERE token_hash = $2`, at.UTC(), tokenHash)
}

func (t accountsTx) AddKey(ctx context.Context, userID string, k account.KeyRecord) error {
	return t.run(ctx, `INSERT INTO account_keys (key_id, user_id, name, prefix, key_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.KeyID, userID, k.Name, k.Prefix, k.KeyHash, k.CreatedAt.UTC())
}

func (t accountsTx) RevokeKey(ctx context.Context, keyID string, at time.Time) error {
	if err := t.run(ctx, `UPDATE account_keys SET revoked_at = $1 WHERE key_id = $2`, at.UTC(), keyID); err != nil {
		return err
	}
	return t.run(ctx, `UPDATE account_sessions SET ended_at = $1 WHERE key_id = $2 AND ended_at IS NULL`, at.UTC(), keyID)
}

func (t accountsTx) AddSession(ctx context.Context, s account.SessionStarted) error {
	return t.run(ctx, `INSERT INTO account_sessions (session_id, user_id, key_id, token_hash, started_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		s.SessionID, s.UserID, s.KeyID, s.TokenHash, s.StartedAt.UTC(), s.ExpiresAt.UTC())
}

func (t accountsTx) KeyUsed(ctx context.Context, userID string, u account.KeyUse) error {
	return t.run(ctx, `UPDATE account_keys SET last_used_at = $1 WHERE key_id = $2 AND user_id = $3 AND (last_used_at IS NULL OR last_used_at < $1)`,
		u.LastUsedAt.UTC(), u.KeyID, userID)
}

// The queries. A missing row is (zero, false, nil); only real failures are
// errors.

const userColumns = `u.user_id, u.email, u.stream, u.verified, u.created_at`

// UserByID returns the user with the given id.
func (a *Accounts) UserByID(ctx context.Context, userID string) (account.UserView, bool, error) {
	return a.user(ctx, `SELECT `+userColumns+` FROM account_users u WHERE u.user_id = $1`, userID)
}

// UserByEmail returns the user with the given normalised address.
func (a *Accounts) UserByEmail(ctx context.Context, email string) (account.UserView, bool, error) {
	return a.user(ctx, `SELECT `+userColumns+` FROM account_users u WHERE u.email = $1`, email)
}

// UserByVerificationToken returns the user a verification token (by hash)
// was issued to, whatever the token's state.
func (a *Accounts) UserByVerificationToken(ctx context.Context, tokenHash string) (account.UserView, bool, error) {
	return a.user(ctx, `SELECT `+userColumns+` FROM account_verification_tokens t JOIN account_users u ON u.user_id = t.user_id WHERE t.token_hash = $1`, tokenHash)
}

func (a *Accounts) user(ctx context.Context, query string, arg any) (account.UserView, bool, error) {
	var u account.UserView
	err := a.db.Pool.QueryRow(ctx, query, arg).Scan(&u.ID, &u.Email, &u.Stream, &u.Verified, &u.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return account.UserView{}, false, nil
	}
	if err != nil {
		return account.UserView{}, false, fmt.Errorf("postgres: accounts: user: %w", err)
	}
	u.CreatedAt = u.CreatedAt.UTC()
	return u, true, nil
}

const keyColumns = `key_id, user_id, name, prefix, key_hash, created_at, revoked_at, last_used_at`

// KeyByHash returns the key whose secret hashes to hash.
func (a *Accounts) KeyByHash(ctx context.Context, hash string) (account.KeyView, bool, error) {
	keys, err := a.keys(ctx, `SELECT `+keyColumns+` FROM account_keys WHERE key_hash = $1`, hash)
	if err != nil || len(keys) == 0 {
		return account.KeyView{}, false, err
	}
	return keys[0], true, nil
}

// KeysByUser returns all keys of a user, active and revoked, oldest first.
func (a *Accounts) KeysByUser(ctx context.Context, userID string) ([]account.KeyView, error) {
	return a.keys(ctx, `SELECT `+keyColumns+` FROM account_keys WHERE user_id = $1 ORDER BY created_at, key_id`, userID)
}

func (a *Accounts) keys(ctx context.Context, query string, arg any) ([]account.KeyView, error) {
	rows, err := a.db.Pool.Query(ctx, query, arg)
	if err != nil {
		return nil, fmt.Errorf("postgres: accounts: keys: %w", err)
	}
	defer rows.Close()
	var out []account.KeyView
	for rows.Next() {
		var k account.KeyView
		var revoked, used *time.Time
		if err := rows.Scan(&k.ID, &k.UserID, &k.Name, &k.Prefix, &k.Hash, &k.CreatedAt, &revoked, &used); err != nil {
			return nil, fmt.Errorf("postgres: accounts: scan key: %w", err)
		}
		k.CreatedAt, k.RevokedAt, k.LastUsedAt = k.CreatedAt.UTC(), timeOrZero(revoked), timeOrZero(used)
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: accounts: read keys: %w", err)
	}
	return out, nil
}

// SessionByHash returns the session whose token hashes to hash; expiry is
// a matter of time, which the caller checks (SessionView.ValidAt).
func (a *Accounts) SessionByHash(ctx context.Context, hash string) (account.SessionView, bool, error) {
	var s account.SessionView
	var ended *time.Time
	err := a.db.Pool.QueryRow(ctx, `SELECT session_id, user_id, key_id, token_hash, expires_at, ended_at FROM account_sessions WHERE token_hash = $1`, hash).
		Scan(&s.ID, &s.UserID, &s.KeyID, &s.Hash, &s.ExpiresAt, &ended)
	if errors.Is(err, pgx.ErrNoRows) {
		return account.SessionView{}, false, nil
	}
	if err != nil {
		return account.SessionView{}, false, fmt.Errorf("postgres: accounts: session by hash: %w", err)
	}
	s.ExpiresAt, s.Ended = s.ExpiresAt.UTC(), ended != nil
	return s, true, nil
}
