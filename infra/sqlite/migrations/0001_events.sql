-- The event log: the only source of truth. Everything else is a projection.
CREATE TABLE events (
    position       INTEGER PRIMARY KEY AUTOINCREMENT,
    id             TEXT    NOT NULL UNIQUE,
    stream         TEXT    NOT NULL,
    version        INTEGER NOT NULL,
    type           TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    time_ns        INTEGER NOT NULL,
    actor_kind     TEXT    NOT NULL,
    actor_id       TEXT    NOT NULL,
    actor_user_id  TEXT    NOT NULL,
    request_id     TEXT    NOT NULL,
    payload        BLOB    NOT NULL,
    UNIQUE (stream, version)
);

CREATE TABLE streams (
    stream  TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) WITHOUT ROWID;

-- One row per projection: the last global position it has applied. Read
-- models update their row in the same transaction as their data.
CREATE TABLE projection_checkpoints (
    name     TEXT PRIMARY KEY,
    position INTEGER NOT NULL
) WITHOUT ROWID;
