-- Memories projection: a raw entry is processed when a processing pass
-- consumed it (memories.consumed, from ProcessingPassRecorded.consumed on
-- the agent's cognition stream) or its content says processed: true (the
-- client processed it itself, e.g. an import). memories.processed is that
-- one definition, which the stats count and the raw listing filters by.
-- consumed cannot be derived from the rows, so the projection is emptied
-- here and rebuilt from the log at the next start.
ALTER TABLE memories ADD COLUMN consumed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memories ADD COLUMN processed INTEGER NOT NULL
    GENERATED ALWAYS AS (consumed = 1 OR json_extract(content, '$.processed') IS 1) VIRTUAL;
CREATE INDEX memories_by_agent_type_processed ON memories (user_id, agent_id, type, processed, created_at, id);

DELETE FROM memory_embeddings;
DELETE FROM memories;
DELETE FROM agents;
DELETE FROM agent_settings;
DELETE FROM agent_streams;
DELETE FROM projection_checkpoints WHERE name = 'memories';
