-- The provenance read model (projection "provenance"), as in the SQLite
-- store (infra/sqlite/migrations/0009_stack_cognition.sql): one edge per
-- derived_from reference (child derived from parent), indexed by child and
-- by parent. Ids are listed in byte order ("C" collation), as in SQLite.
CREATE TABLE provenance_edges (
    user_id     TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    child_id    TEXT COLLATE "C" NOT NULL,
    child_type  TEXT NOT NULL,
    parent_id   TEXT COLLATE "C" NOT NULL,
    parent_type TEXT NOT NULL,
    PRIMARY KEY (child_id, parent_id)
);
CREATE INDEX provenance_by_parent ON provenance_edges (parent_id, child_id);
CREATE INDEX provenance_by_agent ON provenance_edges (user_id, agent_id);
