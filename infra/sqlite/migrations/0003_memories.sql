-- The memories read model (projection "memories"): agents, their memories,
-- and which texts have vectors in which model. The vectors themselves live
-- in the events and the vector projection, not here. Times are UTC text of
-- fixed width (2006-01-02T15:04:05.000000000Z), so text order is time order.

CREATE TABLE agents (
    user_id         TEXT    NOT NULL,
    agent_id        TEXT    NOT NULL,
    embedding_model TEXT    NOT NULL,
    dimensions      INTEGER NOT NULL,
    created_at      TEXT    NOT NULL,
    PRIMARY KEY (user_id, agent_id)
) WITHOUT ROWID;

-- Content rows can be large, so this is a rowid table (WITHOUT ROWID suits
-- small rows only).
CREATE TABLE memories (
    id            TEXT    PRIMARY KEY,
    user_id       TEXT    NOT NULL,
    agent_id      TEXT    NOT NULL,
    type          TEXT    NOT NULL,
    searchable    INTEGER NOT NULL,
    content       TEXT    NOT NULL,
    tags          TEXT    NOT NULL,
    derived_from  TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL,
    forgotten_at  TEXT,
    text_hash     TEXT    NOT NULL,
    -- 1 when the memory is searchable, not forgotten, and its current text
    -- has no vector in the agent's active model: the embedding queue's work.
    -- Kept up to date on every event so the queue reads a partial index
    -- instead of scanning.
    embed_pending INTEGER NOT NULL
);
-- Listing, newest first, per agent and across a user's agents.
CREATE INDEX memories_by_agent_time ON memories (user_id, agent_id, created_at, id);
CREATE INDEX memories_by_user_time ON memories (user_id, created_at, id);
-- Re-embedding jobs walk an agent's memories in id order.
CREATE INDEX memories_by_agent_id ON memories (user_id, agent_id, id);
CREATE INDEX memories_pending ON memories (id) WHERE embed_pending = 1;

-- One row per (memory, model, dimensions) that has a vector, with the hash
-- of the text it was computed from. The same model name can serve several
-- sizes (text-embedding-3-* take "dimensions"), so the size is in the key.
CREATE TABLE memory_embeddings (
    memory_id  TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    dimensions INTEGER NOT NULL,
    text_hash  TEXT    NOT NULL,
    PRIMARY KEY (memory_id, model, dimensions)
) WITHOUT ROWID;
