-- Keyword projection: forgotten memories stay in the index, flagged, so a
-- search that asks for them finds them. Rows written before it left
-- forgotten memories out, so the projection is emptied and its checkpoint
-- dropped: it replays the event log at start.
ALTER TABLE keyword_docs ADD COLUMN forgotten INTEGER NOT NULL DEFAULT 0;
DELETE FROM keyword_docs;
DELETE FROM keyword_agents;
DELETE FROM projection_checkpoints WHERE name = 'keyword';
