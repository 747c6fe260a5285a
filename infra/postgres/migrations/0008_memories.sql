-- The memories read model (projection "memories"), as in the SQLite store
-- (infra/sqlite/migrations 0003, 0007 and 0009): agents, their memories,
-- and which texts have vectors in which model. The vectors themselves live
-- in the events and the vector projection, not here. Memory ids are
-- ordered by byte ("C" collation), as in SQLite.

CREATE TABLE agents (
    user_id         TEXT COLLATE "C" NOT NULL,
    agent_id        TEXT COLLATE "C" NOT NULL,
    embedding_model TEXT        NOT NULL,
    dimensions      INTEGER     NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    -- Quotas: memories the agent keeps (forgotten included) and the bytes
    -- of their canonical content JSON.
    stored_memories INTEGER     NOT NULL DEFAULT 0,
    content_bytes   BIGINT      NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, agent_id)
);

CREATE TABLE memories (
    id                 TEXT COLLATE "C" PRIMARY KEY,
    user_id            TEXT        NOT NULL,
    agent_id           TEXT        NOT NULL,
    type               TEXT        NOT NULL,
    searchable         BOOLEAN     NOT NULL,
    content            TEXT        NOT NULL,
    tags               TEXT        NOT NULL, -- JSON list
    derived_from       TEXT        NOT NULL, -- JSON list
    created_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL,
    forgotten_at       TIMESTAMPTZ,
    text_hash          TEXT        NOT NULL,
    -- TRUE when the memory is searchable, not forgotten, and its current
    -- text has no vector in the agent's active model: the embedding
    -- queue's work, read through a partial index.
    embed_pending      BOOLEAN     NOT NULL,
    -- Counts the changes of the memory: its ETag.
    version            BIGINT      NOT NULL DEFAULT 1,
    -- The strength basis (memory.Vitality) and verification.
    strength           DOUBLE PRECISION NOT NULL,
    strength_since     TIMESTAMPTZ NOT NULL,
    protected          BOOLEAN     NOT NULL,
    goal_type          TEXT        NOT NULL,
    weak_at            TIMESTAMPTZ,
    verification_count INTEGER     NOT NULL DEFAULT 0,
    last_verified_at   TIMESTAMPTZ,
    -- A raw entry is processed when a processing pass consumed it or its
    -- content says processed: true (the one definition; SQLite 0012).
    consumed           BOOLEAN     NOT NULL DEFAULT FALSE,
    processed          BOOLEAN     NOT NULL
        GENERATED ALWAYS AS (consumed OR COALESCE((content::jsonb -> 'processed') = 'true'::jsonb, FALSE)) STORED
);
CREATE INDEX memories_by_agent_time ON memories (user_id, agent_id, created_at, id);
CREATE INDEX memories_by_user_time ON memories (user_id, created_at, id);
CREATE INDEX memories_by_agent_id ON memories (user_id, agent_id, id);
CREATE INDEX memories_pending ON memories (id) WHERE embed_pending;

-- One row per (memory, model, dimensions) that has a vector, with the hash
-- of the text it was computed from.
CREATE TABLE memory_embeddings (
    memory_id  TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    dimensions INTEGER NOT NULL,
    text_hash  TEXT    NOT NULL,
    PRIMARY KEY (memory_id, model, dimensions)
);

CREATE TABLE agent_settings (
    user_id    TEXT        NOT NULL,
    agent_id   TEXT        NOT NULL,
    settings   TEXT        NOT NULL, -- stack.Settings as JSON
    lazy_decay BOOLEAN     NOT NULL, -- copied out of settings for listing filters
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, agent_id)
);

-- The last applied version of each agent stream, which commands append at
-- (kept after an agent delete: the stream goes on).
CREATE TABLE agent_streams (
    stream  TEXT   PRIMARY KEY,
    version BIGINT NOT NULL
);
