-- Projection leases (infra/postgres/leases.go): one row per leased
-- projection. id is the key of the session-level advisory lock that IS the
-- lease (random, so deployments in different schemas of one database do
-- not share keys); holder and acquired_at name the node that took it last,
-- which holds it only while that lock is granted (pg_locks).
CREATE TABLE projection_leases (
    name        TEXT PRIMARY KEY,
    id          BIGINT      NOT NULL UNIQUE DEFAULT (floor(random() * 4611686018427387903)::BIGINT + 1),
    holder      TEXT        NOT NULL DEFAULT '',
    acquired_at TIMESTAMPTZ
);
