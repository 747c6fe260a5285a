package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
)

// AccountsProjection names the accounts read model (checkpoint key and
// `engram projections rebuild accounts`).
const AccountsProjection = "accounts"

// accountTables are the read model's tables with their primary keys, in
// export order.
func accountTables() []exportTable {
	return []exportTable{
		{name: "account_users", orderBy: "user_id"},
		{name: "account_verification_tokens", orderBy: "token_hash"},
		{name: "account_keys", orderBy: "key_id"},
		{name: "account_sessions", orderBy: "session_id"},
	}
}

// Accounts is the accounts read model: users, verification tokens, API keys
// and sessions, folded from the user streams. It implements
// projections.Projection and answers the queries of commands.
type Accounts struct {
	tableModel
	// creds caches KeyByHash and SessionByHash; Apply and Reset clear it.
	creds *credCache
}

// NewAccounts returns the accounts read model stored in db.
func NewAccounts(db *DB) *Accounts {
	return &Accounts{tableModel: tableModel{db: db, name: AccountsProjection, tables: accountTables()}, creds: newCredCache()}
}

// Apply implements projections.Projection. The credential cache is
// cleared once the batch is committed (and also when it fails: the clear
// is cheap and never wrong), before Apply returns and so before the
// engine lets anyone wait on the batch.
func (a *Accounts) Apply(ctx context.Context, events []domain.Event) error {
	defer a.creds.invalidate()
	return a.db.ApplyEvents(ctx, AccountsProjection, events, func(tx *sql.Tx, e domain.Event) error {
		p, err := account.Decode(e)
		if err != nil || p == nil {
			return err
		}
		return applyAccountEvent(ctx, tx, e.Stream, p)
	}, nil)
}

// Reset implements projections.Projection.
func (a *Accounts) Reset(ctx context.Context) error {
	defer a.creds.invalidate()
	return a.tableModel.Reset(ctx)
}

func applyAccountEvent(ctx context.Context, tx *sql.Tx, stream string, p domain.Payload) error {
	exec := func(query string, args ...any) error {
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("sqlite: accounts: %w", err)
		}
		return nil
	}
	switch e := p.(type) {
	case *account.UserRegistered:
		return exec(`INSERT INTO account_users (user_id, email, stream, created_at) VALUES (?, ?, ?, ?)`,
			e.UserID, e.Email, stream, dbTime(e.RegisteredAt))
	case *account.VerificationIssued:
		return exec(`INSERT INTO account_verification_tokens (token_hash, user_id, issued_at, expires_at) VALUES (?, ?, ?, ?)`,
			e.TokenHash, e.UserID, dbTime(e.IssuedAt), dbTime(e.ExpiresAt))
	case *account.UserVerified:
		if err := exec(`UPDATE account_users SET verified = 1, verified_at = ? WHERE user_id = ?`, dbTime(e.VerifiedAt), e.UserID); err != nil {
			return err
		}
		if err := exec(`UPDATE account_verification_tokens SET used_at = ? WHERE token_hash = ?`, dbTime(e.VerifiedAt), e.TokenHash); err != nil {
			return err
		}
		return insertKey(exec, e.UserID, e.InitialKey)
	case *account.APIKeyCreated:
		return insertKey(exec, e.UserID, e.Key)
	case *account.APIKeyRevoked:
		return revokeKey(exec, e.KeyID, e.RevokedAt)
	case *account.APIKeyCycled:
		if err := revokeKey(exec, e.OldKeyID, e.RevokedAt); err != nil {
			return err
		}
		return insertKey(exec, e.UserID, e.NewKey)
	case *account.SessionStarted:
		return exec(`INSERT INTO account_sessions (session_id, user_id, key_id, token_hash, started_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
			e.SessionID, e.UserID, e.KeyID, e.TokenHash, dbTime(e.StartedAt), dbTime(e.ExpiresAt))
	case *account.APIKeysUsed:
		for _, u := range e.Uses {
			// Keep the latest: batches from several nodes may interleave.
			if err := exec(`UPDATE account_keys SET last_used_at = ? WHERE key_id = ? AND user_id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
				dbTime(u.LastUsedAt), u.KeyID, e.UserID, dbTime(u.LastUsedAt)); err != nil {
				return err
			}
		}
	}
	return nil
}

func insertKey(exec func(string, ...any) error, userID string, k account.KeyRecord) error {
	return exec(`INSERT INTO account_keys (key_id, user_id, name, prefix, key_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		k.KeyID, userID, k.Name, k.Prefix, k.KeyHash, dbTime(k.CreatedAt))
}

// revokeKey deactivates the key and ends the sessions started from it.
func revokeKey(exec func(string, ...any) error, keyID string, at time.Time) error {
	if err := exec(`UPDATE account_keys SET revoked_at = ? WHERE key_id = ?`, dbTime(at), keyID); err != nil {
		return err
	}
	return exec(`UPDATE account_sessions SET ended_at = ? WHERE key_id = ? AND ended_at IS NULL`, dbTime(at), keyID)
}
