-- The accounts read model (projection "accounts"). Secrets appear only as
-- SHA-256 hex hashes. Times are UTC text of fixed width
-- (2006-01-02T15:04:05.000000000Z), so text order is time order.

CREATE TABLE account_users (
    user_id     TEXT PRIMARY KEY,
    email       TEXT NOT NULL UNIQUE,
    stream      TEXT NOT NULL UNIQUE,
    verified    INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    verified_at TEXT
) WITHOUT ROWID;

-- Every verification token ever issued, so /auth/verify can find the user
-- stream; whether a token is still usable is decided by the aggregate.
CREATE TABLE account_verification_tokens (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    issued_at  TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT
) WITHOUT ROWID;

CREATE TABLE account_keys (
    key_id       TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    revoked_at   TEXT,
    last_used_at TEXT
) WITHOUT ROWID;
CREATE INDEX account_keys_by_user ON account_keys (user_id, created_at);

CREATE TABLE account_sessions (
    session_id TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    started_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    ended_at   TEXT
) WITHOUT ROWID;
CREATE INDEX account_sessions_by_key ON account_sessions (key_id);
