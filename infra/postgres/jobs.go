package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
)

// MaxJobErrors bounds the errors a job view lists: the latest are kept (as
// in the SQLite store).
const MaxJobErrors = 100

// Jobs is the jobs read model (job.ReadModel) in PostgreSQL: re-embedding
// jobs with their progress. It answers the job runner's and the API's
// queries (commands.JobReadModel).
type Jobs struct {
	tableModel
}

var _ job.ReadModel = (*Jobs)(nil)

// NewJobs returns the jobs read model stored in db.
func NewJobs(db *DB) *Jobs {
	return &Jobs{tableModel{db: db, name: "jobs", tables: []string{"jobs", "job_errors"}}}
}

// Apply implements job.ReadModel.
func (j *Jobs) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, job.ReadModelTx, domain.Event) error) error {
	return applyBatch(ctx, j.db, j.name, events, func(b batchTx) job.ReadModelTx { return jobsTx{b} }, apply)
}

// jobsTx is job.ReadModelTx over one batch's transaction.
type jobsTx struct{ batchTx }

func (t jobsTx) AddJob(ctx context.Context, q job.Queued, at time.Time) error {
	types, err := json.Marshal(q.Types)
	if err != nil {
		return err
	}
	return t.run(ctx, `INSERT INTO jobs (job_id, user_id, agent_id, types, model, dimensions, status, estimated_memories, memories_total, queued_at, last_activity_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10)`,
		q.JobID, q.UserID, q.AgentID, string(types), q.Model, q.Dimensions, string(job.StatusQueued),
		q.EstimatedMemories, q.QueuedAt.UTC(), at.UTC())
}

func (t jobsTx) Start(ctx context.Context, s job.Started, at time.Time) error {
	return t.run(ctx, `UPDATE jobs SET status = $1, runner_id = $2, memories_total = $3, started_at = $4, last_activity_at = $5 WHERE job_id = $6`,
		string(job.StatusRunning), s.RunnerID, s.MemoriesTotal, s.StartedAt.UTC(), at.UTC(), s.JobID)
}

func (t jobsTx) Resume(ctx context.Context, r job.Resumed, at time.Time) error {
	return t.run(ctx, `UPDATE jobs SET runner_id = $1, last_activity_at = $2 WHERE job_id = $3`, r.RunnerID, at.UTC(), r.JobID)
}

func (t jobsTx) Touch(ctx context.Context, jobID string, at time.Time) error {
	return t.run(ctx, `UPDATE jobs SET last_activity_at = $1 WHERE job_id = $2`, at.UTC(), jobID)
}

func (t jobsTx) MarkFinishing(ctx context.Context, jobID string, at time.Time) error {
	return t.run(ctx, `UPDATE jobs SET finishing = TRUE, last_activity_at = $1 WHERE job_id = $2`, at.UTC(), jobID)
}

func (t jobsTx) CountEmbedded(ctx context.Context, userID, jobID, memoryID string, at time.Time) error {
	return t.run(ctx, `UPDATE jobs SET memories_processed = memories_processed + 1, cursor = $1, last_activity_at = $2
		WHERE job_id = $3 AND user_id = $4 AND status = 'running' AND cursor < $1`,
		memoryID, at.UTC(), jobID, userID)
}

func (t jobsTx) CountSkipped(ctx context.Context, jobID, memoryID string, at time.Time) error {
	return t.run(ctx, `UPDATE jobs SET memories_skipped = memories_skipped + 1, cursor = $1, last_activity_at = $2
		WHERE job_id = $3 AND status = 'running' AND cursor < $1`, memoryID, at.UTC(), jobID)
}

func (t jobsTx) AddError(ctx context.Context, jobID string, position uint64, e job.ErrorEntry) error {
	return t.run(ctx, `INSERT INTO job_errors (job_id, position, at, memory_id, message) SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM jobs WHERE job_id = $1)`,
		jobID, int64(position), e.At.UTC(), e.MemoryID, e.Message)
}

func (t jobsTx) Complete(ctx context.Context, jobID string, completedAt, at time.Time) error {
	return t.run(ctx, `UPDATE jobs SET status = $1, memories_total = memories_processed + memories_skipped, completed_at = $2, ended_at = $2, last_activity_at = $3 WHERE job_id = $4`,
		string(job.StatusCompleted), completedAt.UTC(), at.UTC(), jobID)
}

func (t jobsTx) End(ctx context.Context, jobID string, status job.Status, reason string, endedAt, at time.Time) error {
	return t.run(ctx, `UPDATE jobs SET status = $1, reason = $2, ended_at = $3, last_activity_at = $4 WHERE job_id = $5`,
		string(status), reason, endedAt.UTC(), at.UTC(), jobID)
}

func (t jobsTx) DeleteAgentJobs(ctx context.Context, userID, agentID string) error {
	if err := t.run(ctx, `DELETE FROM job_errors WHERE job_id IN (SELECT job_id FROM jobs WHERE user_id = $1 AND agent_id = $2)`, userID, agentID); err != nil {
		return err
	}
	return t.run(ctx, `DELETE FROM jobs WHERE user_id = $1 AND agent_id = $2`, userID, agentID)
}

// The queries. A missing row is (zero, false, nil).

const jobColumns = `job_id, user_id, agent_id, types, model, dimensions, status, runner_id, finishing,
	estimated_memories, memories_total, memories_processed, memories_skipped, cursor, reason,
	queued_at, started_at, completed_at, ended_at, last_activity_at`

// Job returns the user's job with its latest errors. Another user's job is
// missing, never forbidden.
func (j *Jobs) Job(ctx context.Context, userID, jobID string) (job.View, bool, error) {
	views, err := j.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE job_id = $1 AND user_id = $2`, jobID, userID)
	if err != nil || len(views) == 0 {
		return job.View{}, false, err
	}
	v := views[0]
	if v.Errors, err = j.errors(ctx, jobID); err != nil {
		return job.View{}, false, err
	}
	return v, true, nil
}

// ActiveJobs lists queued and running jobs, oldest first.
func (j *Jobs) ActiveJobs(ctx context.Context, limit int) ([]job.View, error) {
	return j.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE status IN ('queued', 'running') ORDER BY queued_at, job_id LIMIT $1`, limit)
}

// CountByStatus counts the jobs in each status (a status no job is in
// is left out).
func (j *Jobs) CountByStatus(ctx context.Context) (map[string]int, error) {
	rows, err := j.db.Pool.Query(ctx, `SELECT status, COUNT(*) FROM jobs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("postgres: count jobs: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return nil, fmt.Errorf("postgres: count jobs: %w", err)
		}
		out[status] = n
	}
	return out, rows.Err()
}

// ActiveJobForAgent returns a queued or running job of the agent, if any.
func (j *Jobs) ActiveJobForAgent(ctx context.Context, userID, agentID string) (job.View, bool, error) {
	views, err := j.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE user_id = $1 AND agent_id = $2 AND status IN ('queued', 'running') ORDER BY queued_at, job_id LIMIT 1`, userID, agentID)
	if err != nil || len(views) == 0 {
		return job.View{}, false, err
	}
	return views[0], true, nil
}

func (j *Jobs) query(ctx context.Context, query string, args ...any) ([]job.View, error) {
	rows, err := j.db.Pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: jobs: %w", err)
	}
	defer rows.Close()
	var out []job.View
	for rows.Next() {
		var v job.View
		var types, status string
		var started, completed, ended *time.Time
		if err := rows.Scan(&v.JobID, &v.UserID, &v.AgentID, &types, &v.Model, &v.Dimensions, &status, &v.RunnerID, &v.Finishing,
			&v.EstimatedMemories, &v.MemoriesTotal, &v.MemoriesProcessed, &v.MemoriesSkipped, &v.Cursor, &v.Reason,
			&v.QueuedAt, &started, &completed, &ended, &v.LastActivityAt); err != nil {
			return nil, fmt.Errorf("postgres: jobs: %w", err)
		}
		if err := json.Unmarshal([]byte(types), &v.Types); err != nil {
			return nil, fmt.Errorf("postgres: jobs: types of %s: %w", v.JobID, err)
		}
		v.Status = job.Status(status)
		v.QueuedAt, v.LastActivityAt = v.QueuedAt.UTC(), v.LastActivityAt.UTC()
		v.StartedAt, v.CompletedAt, v.EndedAt = timeOrZero(started), timeOrZero(completed), timeOrZero(ended)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: jobs: %w", err)
	}
	return out, nil
}

// errors lists the job's latest errors, oldest first.
func (j *Jobs) errors(ctx context.Context, jobID string) ([]job.ErrorEntry, error) {
	rows, err := j.db.Pool.Query(ctx, `SELECT at, memory_id, message FROM
		(SELECT position, at, memory_id, message FROM job_errors WHERE job_id = $1 ORDER BY position DESC LIMIT $2) latest ORDER BY position`, jobID, MaxJobErrors)
	if err != nil {
		return nil, fmt.Errorf("postgres: jobs: errors: %w", err)
	}
	defer rows.Close()
	out := []job.ErrorEntry{}
	for rows.Next() {
		var e job.ErrorEntry
		if err := rows.Scan(&e.At, &e.MemoryID, &e.Message); err != nil {
			return nil, fmt.Errorf("postgres: jobs: errors: %w", err)
		}
		e.At = e.At.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: jobs: errors: %w", err)
	}
	return out, nil
}
