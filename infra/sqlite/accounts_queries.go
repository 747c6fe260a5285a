package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/engram-memory/engram/domain/account"
)

// The queries of the accounts read model. A missing row is (zero, false,
// nil); only real failures are errors.

const userColumns = `u.user_id, u.email, u.stream, u.verified, u.created_at`

// UserByID returns the user with the given id.
func (a *Accounts) UserByID(ctx context.Context, userID string) (account.UserView, bool, error) {
	return a.user(ctx, `SELECT `+userColumns+` FROM account_users u WHERE u.user_id = ?`, userID)
}

// UserByEmail returns the user with the given normalised address.
func (a *Accounts) UserByEmail(ctx context.Context, email string) (account.UserView, bool, error) {
	return a.user(ctx, `SELECT `+userColumns+` FROM account_users u WHERE u.email = ?`, email)
}

// UserByVerificationToken returns the user a verification token (by hash)
// was issued to, whatever the token's state.
func (a *Accounts) UserByVerificationToken(ctx context.Context, tokenHash string) (account.UserView, bool, error) {
	return a.user(ctx, `SELECT `+userColumns+` FROM account_verification_tokens t JOIN account_users u ON u.user_id = t.user_id WHERE t.token_hash = ?`, tokenHash)
}

func (a *Accounts) user(ctx context.Context, query string, arg any) (account.UserView, bool, error) {
	var u account.UserView
	var created sql.NullString
	err := a.db.read.QueryRowContext(ctx, query, arg).Scan(&u.ID, &u.Email, &u.Stream, &u.Verified, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return account.UserView{}, false, nil
	}
	if err != nil {
		return account.UserView{}, false, fmt.Errorf("sqlite: accounts: user: %w", err)
	}
	if u.CreatedAt, err = parseDBTime(created); err != nil {
		return account.UserView{}, false, err
	}
	return u, true, nil
}

const keyColumns = `key_id, user_id, name, prefix, key_hash, created_at, revoked_at, last_used_at`

// KeyByHash returns the key whose secret hashes to hash.
// Every authenticated request asks, so found keys are cached (credCache).
func (a *Accounts) KeyByHash(ctx context.Context, hash string) (account.KeyView, bool, error) {
	k, ok, gen := a.creds.key(hash)
	if ok {
		return k, true, nil
	}
	rows, err := a.db.queryHot(ctx, `SELECT `+keyColumns+` FROM account_keys WHERE key_hash = ?`, hash)
	if err != nil {
		return account.KeyView{}, false, fmt.Errorf("sqlite: accounts: key by hash: %w", err)
	}
	keys, err := scanKeys(rows)
	if err != nil || len(keys) == 0 {
		return account.KeyView{}, false, err
	}
	a.creds.putKey(gen, hash, keys[0])
	return keys[0], true, nil
}

// KeysByUser returns all keys of a user, active and revoked, oldest first.
func (a *Accounts) KeysByUser(ctx context.Context, userID string) ([]account.KeyView, error) {
	rows, err := a.db.read.QueryContext(ctx, `SELECT `+keyColumns+` FROM account_keys WHERE user_id = ? ORDER BY created_at, key_id`, userID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: accounts: keys of user: %w", err)
	}
	return scanKeys(rows)
}

func scanKeys(rows *sql.Rows) ([]account.KeyView, error) {
	defer rows.Close()
	var out []account.KeyView
	for rows.Next() {
		var k account.KeyView
		var created, revoked, used sql.NullString
		if err := rows.Scan(&k.ID, &k.UserID, &k.Name, &k.Prefix, &k.Hash, &created, &revoked, &used); err != nil {
			return nil, fmt.Errorf("sqlite: accounts: scan key: %w", err)
		}
		var err error
		if k.CreatedAt, err = parseDBTime(created); err != nil {
			return nil, err
		}
		if k.RevokedAt, err = parseDBTime(revoked); err != nil {
			return nil, err
		}
		if k.LastUsedAt, err = parseDBTime(used); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: accounts: read keys: %w", err)
	}
	return out, nil
}

// SessionByHash returns the session whose token hashes to hash.
// Found sessions are cached like keys; expiry is a matter of time, which
// the caller checks (SessionView.ValidAt), so a cached session expires too.
func (a *Accounts) SessionByHash(ctx context.Context, hash string) (account.SessionView, bool, error) {
	s, ok, gen := a.creds.session(hash)
	if ok {
		return s, true, nil
	}
	s, found, err := a.sessionByHash(ctx, hash)
	if err == nil && found {
		a.creds.putSession(gen, hash, s)
	}
	return s, found, err
}

func (a *Accounts) sessionByHash(ctx context.Context, hash string) (account.SessionView, bool, error) {
	var s account.SessionView
	var expires, ended sql.NullString
	rows, err := a.db.queryHot(ctx, `SELECT session_id, user_id, key_id, token_hash, expires_at, ended_at FROM account_sessions WHERE token_hash = ?`, hash)
	if err != nil {
		return account.SessionView{}, false, fmt.Errorf("sqlite: accounts: session by hash: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return account.SessionView{}, false, fmt.Errorf("sqlite: accounts: session by hash: %w", err)
		}
		return account.SessionView{}, false, nil
	}
	if err := rows.Scan(&s.ID, &s.UserID, &s.KeyID, &s.Hash, &expires, &ended); err != nil {
		return account.SessionView{}, false, fmt.Errorf("sqlite: accounts: session by hash: %w", err)
	}
	if s.ExpiresAt, err = parseDBTime(expires); err != nil {
		return account.SessionView{}, false, err
	}
	s.Ended = ended.Valid
	return s, true, nil
}
