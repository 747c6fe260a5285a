-- The memories read model keeps its times as the SQLite store does: UTC
-- text at a fixed width with nanoseconds ("2006-01-02T15:04:05.000000000Z"),
-- so text order is time order and nothing of an event's time is lost.
-- TIMESTAMPTZ keeps microseconds, and an agent's creation time identifies
-- the agent in its cognition stream (processing.StackRef): a time cut to
-- the microsecond would not match the one written by a SQLite node.
-- The times cannot be recovered from the rows, so the projection is
-- emptied and rebuilt from the log at the next start.
DELETE FROM memory_embeddings;
DELETE FROM memories;
DELETE FROM agents;
DELETE FROM agent_settings;
DELETE FROM agent_streams;
DELETE FROM projection_checkpoints WHERE name = 'memories';

ALTER TABLE agents ALTER COLUMN created_at TYPE TEXT COLLATE "C";
ALTER TABLE memories
    ALTER COLUMN created_at       TYPE TEXT COLLATE "C",
    ALTER COLUMN updated_at       TYPE TEXT COLLATE "C",
    ALTER COLUMN forgotten_at     TYPE TEXT COLLATE "C",
    ALTER COLUMN strength_since   TYPE TEXT COLLATE "C",
    ALTER COLUMN weak_at          TYPE TEXT COLLATE "C",
    ALTER COLUMN last_verified_at TYPE TEXT COLLATE "C";
ALTER TABLE agent_settings ALTER COLUMN updated_at TYPE TEXT COLLATE "C";
