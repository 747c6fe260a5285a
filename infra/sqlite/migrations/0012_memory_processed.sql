-- Memories projection: memories.processed is 1 once a processing pass
-- consumed the memory (ProcessingPassRecorded.consumed on the agent's
-- cognition stream), which the stats count and the raw listing filters
-- by. It cannot be derived from the rows, so the projection is emptied
-- here and rebuilt from the log at the next start.
ALTER TABLE memories ADD COLUMN processed INTEGER NOT NULL DEFAULT 0;
CREATE INDEX memories_by_agent_type_processed ON memories (user_id, agent_id, type, processed, created_at, id);

DELETE FROM memory_embeddings;
DELETE FROM memories;
DELETE FROM agents;
DELETE FROM agent_settings;
DELETE FROM agent_streams;
DELETE FROM projection_checkpoints WHERE name = 'memories';
