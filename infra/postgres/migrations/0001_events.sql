-- The event log: the only source of truth. Everything else is a projection.
-- payload is BYTEA, not JSONB: JSONB normalises (reorders keys, drops
-- whitespace and duplicate keys), and the log must keep the bytes it was given.
CREATE TABLE events (
    position       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id             TEXT        NOT NULL UNIQUE,
    stream         TEXT        NOT NULL,
    version        BIGINT      NOT NULL,
    type           TEXT        NOT NULL,
    schema_version INTEGER     NOT NULL,
    time           TIMESTAMPTZ NOT NULL,
    actor_kind     TEXT        NOT NULL,
    actor_id       TEXT        NOT NULL,
    actor_user_id  TEXT        NOT NULL,
    request_id     TEXT        NOT NULL,
    payload        BYTEA       NOT NULL,
    UNIQUE (stream, version)
);

CREATE TABLE streams (
    stream  TEXT PRIMARY KEY,
    version BIGINT NOT NULL
);

-- One row per projection: the last global position it has applied. Read
-- models update their row in the same transaction as their data.
CREATE TABLE projection_checkpoints (
    name     TEXT PRIMARY KEY,
    position BIGINT NOT NULL
);
