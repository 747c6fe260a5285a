-- Keyword projection: searchable metadata (tags, a note's speaker, a
-- relationship's entity, see memory.IndexedMetadata), the BM25F field next
-- to body. Rows written before it have no metadata, so the projection is
-- emptied and its checkpoint dropped: it replays the event log at start.
ALTER TABLE keyword_docs ADD COLUMN meta TEXT NOT NULL DEFAULT '';
DELETE FROM keyword_docs;
DELETE FROM keyword_agents;
DELETE FROM projection_checkpoints WHERE name = 'keyword';
