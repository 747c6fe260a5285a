-- The suggestions read model (projection "suggestions"), as in the SQLite
-- store (infra/sqlite/migrations/0010_suggestions.sql): what processing
-- passes proposed, per agent, and what became of it. A pending suggestion
-- past expires_at reads as expired without being rewritten. content and
-- sources are TEXT (JSON), not JSONB, so reads return the bytes written.
CREATE TABLE suggestions (
    id          TEXT COLLATE "C" PRIMARY KEY,
    user_id     TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    transition  TEXT NOT NULL,
    memory_type TEXT NOT NULL,
    content     TEXT NOT NULL,
    confidence  DOUBLE PRECISION NOT NULL,
    sources     TEXT NOT NULL,
    status      TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    resolved_at TIMESTAMPTZ,
    reason      TEXT NOT NULL,
    promoted_to TEXT NOT NULL
);
CREATE INDEX suggestions_by_agent ON suggestions (user_id, agent_id, created_at, id);
