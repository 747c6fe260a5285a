-- The jobs read model (projection "jobs"): bulk re-embedding jobs, folded
-- from the job streams, with progress derived from the MemoryEmbedded
-- events the jobs appended to agent streams. Times as in 0002.

CREATE TABLE jobs (
    job_id             TEXT PRIMARY KEY,
    user_id            TEXT NOT NULL,
    agent_id           TEXT NOT NULL,
    types              TEXT NOT NULL, -- JSON array of singular type names
    model              TEXT NOT NULL,
    dimensions         INTEGER NOT NULL,
    status             TEXT NOT NULL,
    runner_id          TEXT NOT NULL DEFAULT '',
    finishing          INTEGER NOT NULL DEFAULT 0,
    estimated_memories INTEGER NOT NULL,
    memories_total     INTEGER NOT NULL,
    memories_processed INTEGER NOT NULL DEFAULT 0,
    memories_skipped   INTEGER NOT NULL DEFAULT 0,
    -- The largest memory id done; ids only grow within a job, so an event
    -- at or below the cursor is a repeat and is not counted again.
    cursor             TEXT NOT NULL DEFAULT '',
    reason             TEXT NOT NULL DEFAULT '',
    queued_at          TEXT NOT NULL,
    started_at         TEXT,
    completed_at       TEXT,
    ended_at           TEXT,
    last_activity_at   TEXT NOT NULL
) WITHOUT ROWID;

-- The runner polls for work; finished jobs are the vast majority.
CREATE INDEX jobs_active ON jobs (queued_at, job_id) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_by_agent ON jobs (user_id, agent_id);

CREATE TABLE job_errors (
    job_id    TEXT NOT NULL,
    position  INTEGER NOT NULL, -- log position of the event: unique and ordered
    at        TEXT NOT NULL,
    memory_id TEXT NOT NULL DEFAULT '',
    message   TEXT NOT NULL,
    PRIMARY KEY (job_id, position)
) WITHOUT ROWID;
