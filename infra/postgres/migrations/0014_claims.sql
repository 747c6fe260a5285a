-- Keys that events take for good across the whole log (domain.NewEvent.Claims;
-- today a memory's id, "memory/<id>": memory ids are global while memories
-- live in their agents' streams). An append inserts its claims in its own
-- transaction, so of two nodes appending one key at once exactly one commits.
-- position is the claiming event's place in the log.
CREATE TABLE claims (
    key      TEXT PRIMARY KEY,
    position BIGINT NOT NULL
);

-- The memories of the log so far, each claimed by its first creation.
INSERT INTO claims (key, position)
SELECT 'memory/' || (convert_from(payload, 'UTF8')::jsonb ->> 'memory_id'), min(position)
FROM events
WHERE type = 'MemoryCreated' AND (convert_from(payload, 'UTF8')::jsonb ->> 'memory_id') IS NOT NULL
GROUP BY 1;
