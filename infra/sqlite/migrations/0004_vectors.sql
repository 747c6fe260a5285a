-- Vector projection ("vectors"): the durable side of the in-process vector
-- index. The index is loaded from these tables at start and never
-- re-embedded.

-- The model an agent's searches use (AgentCreated, AgentModelSwitched).
CREATE TABLE vector_agents (
    user_id    TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    dimensions INTEGER NOT NULL,
    PRIMARY KEY (user_id, agent_id)
) WITHOUT ROWID;

-- What the index filters on, and which text a vector must be of to count.
-- tags is a JSON array.
CREATE TABLE vector_memories (
    memory_id  TEXT    PRIMARY KEY,
    user_id    TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    tags       TEXT    NOT NULL,
    created_ns INTEGER NOT NULL,
    text_hash  TEXT    NOT NULL,
    forgotten  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX vector_memories_agent ON vector_memories (user_id, agent_id);

-- Vectors as little-endian float32 BLOBs, one per (memory, model,
-- dimensions, text). seq is insertion order, so a load inserts in the
-- order the log did.
CREATE TABLE vector_vectors (
    seq        INTEGER PRIMARY KEY,
    memory_id  TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    dimensions INTEGER NOT NULL,
    text_hash  TEXT    NOT NULL,
    vector     BLOB    NOT NULL,
    UNIQUE (memory_id, model, dimensions, text_hash)
);
