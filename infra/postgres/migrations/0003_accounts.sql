-- The accounts read model (projection "accounts"), as in the SQLite store
-- (infra/sqlite/migrations/0002_accounts.sql). Secrets appear only as
-- SHA-256 hex hashes. Identifiers compared or ordered by value use the "C"
-- collation, so their order is byte order on every node, as in SQLite.

CREATE TABLE account_users (
    user_id     TEXT COLLATE "C" PRIMARY KEY,
    email       TEXT NOT NULL UNIQUE,
    stream      TEXT NOT NULL UNIQUE,
    verified    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMPTZ NOT NULL,
    verified_at TIMESTAMPTZ
);

-- Every verification token ever issued, so /auth/verify can find the user
-- stream; whether a token is still usable is decided by the aggregate.
CREATE TABLE account_verification_tokens (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    issued_at  TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ
);

CREATE TABLE account_keys (
    key_id       TEXT COLLATE "C" PRIMARY KEY,
    user_id      TEXT NOT NULL,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL,
    revoked_at   TIMESTAMPTZ,
    last_used_at TIMESTAMPTZ
);
CREATE INDEX account_keys_by_user ON account_keys (user_id, created_at);

CREATE TABLE account_sessions (
    session_id TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    started_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    ended_at   TIMESTAMPTZ
);
CREATE INDEX account_sessions_by_key ON account_sessions (key_id);
