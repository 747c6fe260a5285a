-- Stack cognition (issue 11).
-- memories read model: each memory's strength basis (memory.Vitality: the
-- strength the last strength event set, when, protection, the goal_type
-- that sets a goal's half-life), its verifications, and weak_at, the
-- instant decay makes it weak (NULL: never), which listings filter on; per
-- agent its stack settings (no row: the defaults). The memories projection
-- is emptied and replays the log at the next start, which fills them.
ALTER TABLE memories ADD COLUMN strength REAL NOT NULL DEFAULT 1;
ALTER TABLE memories ADD COLUMN strength_since TEXT NOT NULL DEFAULT '';
ALTER TABLE memories ADD COLUMN protected INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memories ADD COLUMN goal_type TEXT NOT NULL DEFAULT '';
ALTER TABLE memories ADD COLUMN weak_at TEXT;
ALTER TABLE memories ADD COLUMN verification_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memories ADD COLUMN last_verified_at TEXT;

CREATE TABLE agent_settings (
    user_id    TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    settings   TEXT    NOT NULL, -- stack.Settings as JSON
    lazy_decay INTEGER NOT NULL, -- copied out of settings for listing filters
    updated_at TEXT    NOT NULL,
    PRIMARY KEY (user_id, agent_id)
) WITHOUT ROWID;

DELETE FROM memory_embeddings;
DELETE FROM memories;
DELETE FROM agents;
DELETE FROM agent_streams;
DELETE FROM projection_checkpoints WHERE name = 'memories';

-- provenance read model (projection "provenance"): one row per
-- derived_from edge, child derived from parent, indexed both ways so a
-- tree is one indexed query per level in either direction.
CREATE TABLE provenance_edges (
    user_id     TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    child_id    TEXT NOT NULL,
    child_type  TEXT NOT NULL,
    parent_id   TEXT NOT NULL,
    parent_type TEXT NOT NULL,
    PRIMARY KEY (child_id, parent_id)
) WITHOUT ROWID;
CREATE INDEX provenance_by_parent ON provenance_edges (parent_id, child_id);
CREATE INDEX provenance_by_agent ON provenance_edges (user_id, agent_id);

-- audit read model (projection "audit"): one entry per auditable event,
-- keyed by log position (newest first is position order). agent_id is ''
-- for account-level entries. audit_memories remembers each memory's type,
-- which most memory events do not carry.
CREATE TABLE audit_entries (
    position    INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    at          TEXT    NOT NULL,
    operation   TEXT    NOT NULL,
    memory_type TEXT    NOT NULL,
    memory_id   TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    details     TEXT    NOT NULL
);
CREATE INDEX audit_by_agent ON audit_entries (user_id, agent_id, position);
CREATE UNIQUE INDEX audit_by_id ON audit_entries (id);
CREATE TABLE audit_memories (
    memory_id TEXT PRIMARY KEY,
    type      TEXT NOT NULL
) WITHOUT ROWID;
