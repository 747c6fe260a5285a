-- The webhooks read model (projection "webhooks"): the users' webhooks,
-- folded from their "webhooks-<user>" streams, and the outbox of their
-- deliveries, enqueued by the same projection in the transaction that
-- advances its checkpoint. Times as in 0002 (fixed-width UTC text, so text
-- order is time order).

CREATE TABLE webhooks (
    webhook_id TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    url        TEXT NOT NULL,
    events     TEXT NOT NULL, -- JSON array of event names, sorted
    secret     TEXT NOT NULL, -- the HMAC key deliveries are signed with
    created_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX webhooks_by_user ON webhooks (user_id, created_at);

-- Not emptied by a reset: a rebuild enqueues each delivery again by its
-- id, which changes nothing, rather than sending the history again.
CREATE TABLE webhook_deliveries (
    delivery_id      TEXT PRIMARY KEY, -- webhook id "." event id
    webhook_id       TEXT NOT NULL,
    user_id          TEXT NOT NULL,
    event            TEXT NOT NULL,
    event_id         TEXT NOT NULL,
    position         INTEGER NOT NULL, -- of the event in the log
    body             TEXT NOT NULL,
    status           TEXT NOT NULL,    -- pending, delivered, failed
    attempts         INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL,
    next_attempt_at  TEXT,             -- NULL once delivered or failed
    claimed_until    TEXT NOT NULL DEFAULT '',
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    delivered_at     TEXT
) WITHOUT ROWID;

CREATE UNIQUE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, position);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
