package sqlite

import (
	"context"
	"encoding/json"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
)

// jobsCheckpoint keys the jobs read model's checkpoint.
const jobsCheckpoint = "jobs"

func jobTables() []exportTable {
	return []exportTable{
		{name: "jobs", orderBy: "job_id"},
		{name: "job_errors", orderBy: "job_id, position"},
	}
}

// Jobs is the jobs read model (job.ReadModel): re-embedding jobs with
// their progress. It answers the job runner's and the API's queries.
type Jobs struct {
	tableModel
}

var _ job.ReadModel = (*Jobs)(nil)

// NewJobs returns the jobs read model stored in db.
func NewJobs(db *DB) *Jobs {
	return &Jobs{tableModel{db: db, name: jobsCheckpoint, tables: jobTables()}}
}

// Apply implements job.ReadModel.
func (j *Jobs) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, job.ReadModelTx, domain.Event) error) error {
	return applyBatch(ctx, j.db, jobsCheckpoint, events, func(b *batchTx) job.ReadModelTx { return jobsTx{b} }, apply, nil)
}

// jobsTx is job.ReadModelTx over one batch's transaction.
type jobsTx struct{ *batchTx }

func (t jobsTx) AddJob(ctx context.Context, q job.Queued, at time.Time) error {
	types, err := json.Marshal(q.Types)
	if err != nil {
		return err
	}
	return t.run(`INSERT INTO jobs (job_id, user_id, agent_id, types, model, dimensions, status, estimated_memories, memories_total, queued_at, last_activity_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		q.JobID, q.UserID, q.AgentID, string(types), q.Model, q.Dimensions, job.StatusQueued,
		q.EstimatedMemories, q.EstimatedMemories, dbTime(q.QueuedAt), dbTime(at))
}

func (t jobsTx) Start(ctx context.Context, s job.Started, at time.Time) error {
	return t.run(`UPDATE jobs SET status = ?, runner_id = ?, memories_total = ?, started_at = ?, last_activity_at = ? WHERE job_id = ?`,
		job.StatusRunning, s.RunnerID, s.MemoriesTotal, dbTime(s.StartedAt), dbTime(at), s.JobID)
}

func (t jobsTx) Resume(ctx context.Context, r job.Resumed, at time.Time) error {
	return t.run(`UPDATE jobs SET runner_id = ?, last_activity_at = ? WHERE job_id = ?`, r.RunnerID, dbTime(at), r.JobID)
}

func (t jobsTx) Touch(ctx context.Context, jobID string, at time.Time) error {
	return t.run(`UPDATE jobs SET last_activity_at = ? WHERE job_id = ?`, dbTime(at), jobID)
}

func (t jobsTx) MarkFinishing(ctx context.Context, jobID string, at time.Time) error {
	return t.run(`UPDATE jobs SET finishing = 1, last_activity_at = ? WHERE job_id = ?`, dbTime(at), jobID)
}

func (t jobsTx) CountEmbedded(ctx context.Context, userID, jobID, memoryID string, at time.Time) error {
	return t.run(`UPDATE jobs SET memories_processed = memories_processed + 1, cursor = ?, last_activity_at = ?
		WHERE job_id = ? AND user_id = ? AND status = 'running' AND cursor < ?`,
		memoryID, dbTime(at), jobID, userID, memoryID)
}

func (t jobsTx) CountSkipped(ctx context.Context, jobID, memoryID string, at time.Time) error {
	return t.run(`UPDATE jobs SET memories_skipped = memories_skipped + 1, cursor = ?, last_activity_at = ?
		WHERE job_id = ? AND status = 'running' AND cursor < ?`, memoryID, dbTime(at), jobID, memoryID)
}

func (t jobsTx) AddError(ctx context.Context, jobID string, position uint64, e job.ErrorEntry) error {
	return t.run(`INSERT INTO job_errors (job_id, position, at, memory_id, message) SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM jobs WHERE job_id = ?)`,
		jobID, position, dbTime(e.At), e.MemoryID, e.Message, jobID)
}

func (t jobsTx) Complete(ctx context.Context, jobID string, completedAt, at time.Time) error {
	return t.run(`UPDATE jobs SET status = ?, memories_total = memories_processed + memories_skipped, completed_at = ?, ended_at = ?, last_activity_at = ? WHERE job_id = ?`,
		job.StatusCompleted, dbTime(completedAt), dbTime(completedAt), dbTime(at), jobID)
}

func (t jobsTx) End(ctx context.Context, jobID string, status job.Status, reason string, endedAt, at time.Time) error {
	return t.run(`UPDATE jobs SET status = ?, reason = ?, ended_at = ?, last_activity_at = ? WHERE job_id = ?`,
		status, reason, dbTime(endedAt), dbTime(at), jobID)
}

func (t jobsTx) DeleteAgentJobs(ctx context.Context, userID, agentID string) error {
	if err := t.run(`DELETE FROM job_errors WHERE job_id IN (SELECT job_id FROM jobs WHERE user_id = ? AND agent_id = ?)`, userID, agentID); err != nil {
		return err
	}
	return t.run(`DELETE FROM jobs WHERE user_id = ? AND agent_id = ?`, userID, agentID)
}
