-- The interface each event's command came in through (domain.Source: api,
-- mcp, cli, system), and the audit entry that shows it. Events and entries
-- stored before have none ('').
ALTER TABLE events ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_entries ADD COLUMN source TEXT NOT NULL DEFAULT '';
