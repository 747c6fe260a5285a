-- Keys that events take for good across the whole log (domain.NewEvent.Claims;
-- today a memory's id, "memory/<id>": memory ids are global while memories
-- live in their agents' streams). An append inserts its claims in its own
-- savepoint, so a claimed key refuses the whole append. position is the
-- claiming event's place in the log.
CREATE TABLE claims (
    key      TEXT PRIMARY KEY,
    position INTEGER NOT NULL
) WITHOUT ROWID;

-- The memories of the log so far, each claimed by its first creation.
INSERT INTO claims (key, position)
SELECT 'memory/' || json_extract(CAST(payload AS TEXT), '$.memory_id'), min(position)
FROM events
WHERE type = 'MemoryCreated' AND json_extract(CAST(payload AS TEXT), '$.memory_id') IS NOT NULL
GROUP BY 1;
