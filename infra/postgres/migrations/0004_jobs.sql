-- The jobs read model (projection "jobs"), as in the SQLite store
-- (infra/sqlite/migrations/0006_jobs.sql): bulk re-embedding jobs with
-- their progress. cursor is compared by byte order ("C" collation), as
-- memory ids only grow within a job.

CREATE TABLE jobs (
    job_id             TEXT COLLATE "C" PRIMARY KEY,
    user_id            TEXT NOT NULL,
    agent_id           TEXT NOT NULL,
    types              TEXT NOT NULL, -- JSON array of singular type names
    model              TEXT NOT NULL,
    dimensions         INTEGER NOT NULL,
    status             TEXT NOT NULL,
    runner_id          TEXT NOT NULL DEFAULT '',
    finishing          BOOLEAN NOT NULL DEFAULT FALSE,
    estimated_memories INTEGER NOT NULL,
    memories_total     INTEGER NOT NULL,
    memories_processed INTEGER NOT NULL DEFAULT 0,
    memories_skipped   INTEGER NOT NULL DEFAULT 0,
    cursor             TEXT COLLATE "C" NOT NULL DEFAULT '',
    reason             TEXT NOT NULL DEFAULT '',
    queued_at          TIMESTAMPTZ NOT NULL,
    started_at         TIMESTAMPTZ,
    completed_at       TIMESTAMPTZ,
    ended_at           TIMESTAMPTZ,
    last_activity_at   TIMESTAMPTZ NOT NULL
);

-- The runner polls for work; finished jobs are the vast majority.
CREATE INDEX jobs_active ON jobs (queued_at, job_id) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_by_agent ON jobs (user_id, agent_id);

CREATE TABLE job_errors (
    job_id    TEXT NOT NULL,
    position  BIGINT NOT NULL, -- log position of the event: unique and ordered
    at        TIMESTAMPTZ NOT NULL,
    memory_id TEXT NOT NULL DEFAULT '',
    message   TEXT NOT NULL,
    PRIMARY KEY (job_id, position)
);
