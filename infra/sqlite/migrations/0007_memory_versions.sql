-- Optimistic concurrency and quotas (memories projection), and field-level
-- patches (keyword projection):
--   memories.version       counts the changes of a memory: its ETag;
--   agents.stored_memories memories the agent keeps, forgotten included;
--   agents.content_bytes   bytes of their canonical content JSON;
--   agent_streams.version  the last applied version of each agent stream,
--                          which commands append at (kept after an agent
--                          delete: the stream goes on);
--   keyword_docs.content   a memory's content, to which a MemoryPatched's
--                          changed fields apply.
-- None of these can be derived from the rows alone, so both projections
-- are emptied here and rebuilt from the log at the next start.
ALTER TABLE memories ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE agents ADD COLUMN stored_memories INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN content_bytes INTEGER NOT NULL DEFAULT 0;
CREATE TABLE agent_streams (
    stream  TEXT    PRIMARY KEY,
    version INTEGER NOT NULL
) WITHOUT ROWID;
ALTER TABLE keyword_docs ADD COLUMN content TEXT NOT NULL DEFAULT '';

DELETE FROM memory_embeddings;
DELETE FROM memories;
DELETE FROM agents;
DELETE FROM keyword_docs;
DELETE FROM keyword_agents;
DELETE FROM projection_checkpoints WHERE name IN ('memories', 'keyword');
