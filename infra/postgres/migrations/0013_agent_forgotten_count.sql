-- Memories projection: an agent's memory_count (its memories that are not
-- forgotten) was a COUNT over its memories on every read of the agent, as
-- it was in SQLite before its migration 0013. The agent row now counts its
-- forgotten memories as they are forgotten, recovered and purged, so
-- memory_count is stored_memories - forgotten_memories and a read of the
-- agent costs the same at 10 memories and at a million.
ALTER TABLE agents ADD COLUMN forgotten_memories INTEGER NOT NULL DEFAULT 0;
UPDATE agents SET forgotten_memories = (SELECT count(*) FROM memories m
    WHERE m.user_id = agents.user_id AND m.agent_id = agents.agent_id AND m.forgotten_at IS NOT NULL);
