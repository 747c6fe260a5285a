package sqlite

import (
	"context"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
)

// accountsCheckpoint keys the accounts read model's checkpoint.
const accountsCheckpoint = "accounts"

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

// Accounts is the accounts read model (account.ReadModel): users,
// verification tokens, API keys and sessions. It answers the queries of
// commands.
type Accounts struct {
	tableModel
	// creds caches KeyByHash and SessionByHash; Apply and Reset clear it.
	creds *credCache
}

var _ account.ReadModel = (*Accounts)(nil)

// NewAccounts returns the accounts read model stored in db.
func NewAccounts(db *DB) *Accounts {
	return &Accounts{tableModel: tableModel{db: db, name: accountsCheckpoint, tables: accountTables()}, creds: newCredCache()}
}

// Apply implements account.ReadModel. The credential cache is cleared
// once the batch is committed (and also when it fails: the clear is cheap
// and never wrong), before Apply returns and so before the engine lets
// anyone wait on the batch.
func (a *Accounts) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, account.ReadModelTx, domain.Event) error) error {
	defer a.creds.invalidate()
	return applyBatch(ctx, a.db, accountsCheckpoint, events, func(b *batchTx) account.ReadModelTx { return accountsTx{b} }, apply, nil)
}

// Reset implements account.ReadModel.
func (a *Accounts) Reset(ctx context.Context) error {
	defer a.creds.invalidate()
	return a.tableModel.Reset(ctx)
}

// accountsTx is account.ReadModelTx over one batch's transaction.
type accountsTx struct{ *batchTx }

func (t accountsTx) AddUser(ctx context.Context, stream string, u account.UserRegistered) error {
	return t.run(`INSERT INTO account_users (user_id, email, stream, created_at) VALUES (?, ?, ?, ?)`,
		u.UserID, u.Email, stream, dbTime(u.RegisteredAt))
}

func (t accountsTx) AddVerificationToken(ctx context.Context, v account.VerificationIssued) error {
	return t.run(`INSERT INTO account_verification_tokens (token_hash, user_id, issued_at, expires_at) VALUES (?, ?, ?, ?)`,
		v.TokenHash, v.UserID, dbTime(v.IssuedAt), dbTime(v.ExpiresAt))
}

func (t accountsTx) MarkVerified(ctx context.Context, userID, tokenHash string, at time.Time) error {
	if err := t.run(`UPDATE account_users SET verified = 1, verified_at = ? WHERE user_id = ?`, dbTime(at), userID); err != nil {
		return err
	}
	return t.run(`UPDATE account_verification_tokens SET used_at = ? WHERE token_hash = ?`, dbTime(at), tokenHash)
}

func (t accountsTx) AddKey(ctx context.Context, userID string, k account.KeyRecord) error {
	return t.run(`INSERT INTO account_keys (key_id, user_id, name, prefix, key_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		k.KeyID, userID, k.Name, k.Prefix, k.KeyHash, dbTime(k.CreatedAt))
}

func (t accountsTx) RevokeKey(ctx context.Context, keyID string, at time.Time) error {
	if err := t.run(`UPDATE account_keys SET revoked_at = ? WHERE key_id = ?`, dbTime(at), keyID); err != nil {
		return err
	}
	return t.run(`UPDATE account_sessions SET ended_at = ? WHERE key_id = ? AND ended_at IS NULL`, dbTime(at), keyID)
}

func (t accountsTx) AddSession(ctx context.Context, s account.SessionStarted) error {
	return t.run(`INSERT INTO account_sessions (session_id, user_id, key_id, token_hash, started_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
		s.SessionID, s.UserID, s.KeyID, s.TokenHash, dbTime(s.StartedAt), dbTime(s.ExpiresAt))
}

func (t accountsTx) KeyUsed(ctx context.Context, userID string, u account.KeyUse) error {
	return t.run(`UPDATE account_keys SET last_used_at = ? WHERE key_id = ? AND user_id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
		dbTime(u.LastUsedAt), u.KeyID, userID, dbTime(u.LastUsedAt))
}
