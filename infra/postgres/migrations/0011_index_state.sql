-- The keyword and vector projections' state (domain.KeywordState and
-- domain.VectorState, infra/postgres/indexstate.go), as in the SQLite
-- store (infra/sqlite/migrations 0004, 0005, 0007, 0008, 0011): kept here
-- when the index is remote (Meilisearch, Qdrant) and shared by several
-- nodes, so the node holding the projection's lease and the node taking it
-- over work from one state and one checkpoint. seq is insertion order;
-- tags are JSON arrays; times are Unix nanoseconds; vectors float4
-- arrays (exact float32s).
CREATE TABLE keyword_agents (
    user_id  TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    PRIMARY KEY (user_id, agent_id)
);

CREATE TABLE keyword_docs (
    seq        BIGSERIAL PRIMARY KEY,
    memory_id  TEXT    NOT NULL UNIQUE,
    user_id    TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    tags       TEXT    NOT NULL,
    created_ns BIGINT  NOT NULL,
    body       TEXT    NOT NULL,
    meta       TEXT    NOT NULL,
    content    TEXT    NOT NULL,
    forgotten  BOOLEAN NOT NULL
);
CREATE INDEX keyword_docs_agent ON keyword_docs (user_id, agent_id);

CREATE TABLE vector_agents (
    user_id    TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    dimensions INTEGER NOT NULL,
    PRIMARY KEY (user_id, agent_id)
);

CREATE TABLE vector_memories (
    memory_id  TEXT    PRIMARY KEY,
    user_id    TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    tags       TEXT    NOT NULL,
    created_ns BIGINT  NOT NULL,
    text_hash  TEXT    NOT NULL,
    forgotten  BOOLEAN NOT NULL
);
CREATE INDEX vector_memories_agent ON vector_memories (user_id, agent_id);

CREATE TABLE vector_vectors (
    seq        BIGSERIAL PRIMARY KEY,
    memory_id  TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    dimensions INTEGER NOT NULL,
    text_hash  TEXT    NOT NULL,
    vector     REAL[]  NOT NULL,
    UNIQUE (memory_id, model, dimensions, text_hash)
);
