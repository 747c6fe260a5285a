-- Live rebuilds of leased projections (infra/postgres/rebuilds.go): one row
-- per projection, its latest rebuild. Any node opens one (state
-- 'requested'); the node holding the projection's lease starts it
-- ('running', node) and closes it ('done' with the events replayed, or
-- 'failed' with the error). A row left 'running' by a node that lost its
-- lease is started again by the next holder. Followers read 'running' to
-- leave the projection out of their visibility waits.
CREATE TABLE projection_rebuilds (
    name         TEXT PRIMARY KEY,
    id           TEXT        NOT NULL,
    state        TEXT        NOT NULL CHECK (state IN ('requested', 'running', 'done', 'failed')),
    requested_by TEXT        NOT NULL,
    requested_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    node         TEXT        NOT NULL DEFAULT '',
    started_at   TIMESTAMPTZ,
    finished_at  TIMESTAMPTZ,
    events       BIGINT      NOT NULL DEFAULT 0,
    error        TEXT        NOT NULL DEFAULT ''
);
