-- The webhooks read model (projection "webhooks"), as in the SQLite store
-- (infra/sqlite/migrations/0016_webhooks.sql): the users' webhooks and the
-- outbox of their deliveries. The outbox is shared by every node; a
-- dispatcher claims a delivery (claimed_until) before it attempts it.

CREATE TABLE webhooks (
    webhook_id TEXT COLLATE "C" PRIMARY KEY,
    user_id    TEXT NOT NULL,
    url        TEXT NOT NULL,
    events     TEXT NOT NULL, -- JSON array of event names, sorted
    secret     TEXT NOT NULL, -- the HMAC key deliveries are signed with
    created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX webhooks_by_user ON webhooks (user_id, created_at);

-- Not emptied by a reset: a rebuild enqueues each delivery again by its
-- id, which changes nothing, rather than sending the history again.
CREATE TABLE webhook_deliveries (
    delivery_id      TEXT COLLATE "C" PRIMARY KEY, -- webhook id "." event id
    webhook_id       TEXT NOT NULL,
    user_id          TEXT NOT NULL,
    event            TEXT NOT NULL,
    event_id         TEXT NOT NULL,
    position         BIGINT NOT NULL, -- of the event in the log
    body             TEXT NOT NULL,
    status           TEXT NOT NULL,   -- pending, delivered, failed
    attempts         INTEGER NOT NULL DEFAULT 0,
    created_at       TIMESTAMPTZ NOT NULL,
    next_attempt_at  TIMESTAMPTZ,     -- NULL once delivered or failed
    claimed_until    TIMESTAMPTZ NOT NULL DEFAULT '-infinity',
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    delivered_at     TIMESTAMPTZ
);

CREATE UNIQUE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, position);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
