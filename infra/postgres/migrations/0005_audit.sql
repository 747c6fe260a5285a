-- The audit read model (projection "audit"), as in the SQLite store
-- (infra/sqlite/migrations/0009_stack_cognition.sql): one entry per
-- auditable event, keyed by log position (newest first is position
-- order). agent_id is '' for account-level entries. audit_memories
-- remembers each memory's type, which most memory events do not carry.
-- details is TEXT, not JSONB, so the API returns the bytes the projection
-- wrote.
CREATE TABLE audit_entries (
    position    BIGINT      PRIMARY KEY,
    id          TEXT        NOT NULL UNIQUE,
    user_id     TEXT        NOT NULL,
    agent_id    TEXT        NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    operation   TEXT        NOT NULL,
    memory_type TEXT        NOT NULL,
    memory_id   TEXT        NOT NULL,
    actor       TEXT        NOT NULL,
    details     TEXT        NOT NULL
);
CREATE INDEX audit_by_agent ON audit_entries (user_id, agent_id, position);

CREATE TABLE audit_memories (
    memory_id TEXT PRIMARY KEY,
    type      TEXT NOT NULL
);
