-- The suggestions read model (projection "suggestions"): what processing
-- passes proposed, per agent, and what became of it. A pending suggestion
-- past expires_at reads as expired without being rewritten.
CREATE TABLE suggestions (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    transition  TEXT NOT NULL,
    memory_type TEXT NOT NULL,
    content     TEXT NOT NULL,
    confidence  REAL NOT NULL,
    sources     TEXT NOT NULL,
    status      TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    resolved_at TEXT,
    reason      TEXT NOT NULL,
    promoted_to TEXT NOT NULL
);
CREATE INDEX suggestions_by_agent ON suggestions (user_id, agent_id, created_at, id);
