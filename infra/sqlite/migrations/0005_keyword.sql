-- Keyword projection ("keyword"): the durable side of the in-process BM25
-- index (infra/textindex), which is loaded from here at start. SQLite FTS5
-- was measured first and dropped: bm25() costs ~2.5 µs per matching row
-- (12 ms median, 230 ms p99 for hybrid search at 100k memories) and its
-- statistics span every agent in the file.

-- Agents that exist: memory events of a deleted agent are ignored, as in
-- the memories read model.
CREATE TABLE keyword_agents (
    user_id  TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    PRIMARY KEY (user_id, agent_id)
) WITHOUT ROWID;

-- One row per searchable, not forgotten memory. seq is insertion order, so
-- a load indexes documents in the order the log did. tags is a JSON array.
CREATE TABLE keyword_docs (
    seq        INTEGER PRIMARY KEY,
    memory_id  TEXT    NOT NULL UNIQUE,
    user_id    TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    tags       TEXT    NOT NULL,
    created_ns INTEGER NOT NULL,
    body       TEXT    NOT NULL
);
CREATE INDEX keyword_docs_agent ON keyword_docs (user_id, agent_id);
