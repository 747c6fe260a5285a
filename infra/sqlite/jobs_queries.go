package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain/job"
)

// The queries of the jobs read model. A missing row is (zero, false, nil).

const jobColumns = `job_id, user_id, agent_id, types, model, dimensions, status, runner_id, finishing,
	estimated_memories, memories_total, memories_processed, memories_skipped, cursor, reason,
	queued_at, started_at, completed_at, ended_at, last_activity_at`

// MaxJobErrors bounds the errors a job view lists: the latest are kept.
const MaxJobErrors = 100

// Job returns the user's job with its latest errors. Another user's job is
// missing, never forbidden.
func (j *Jobs) Job(ctx context.Context, userID, jobID string) (job.View, bool, error) {
	views, err := j.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE job_id = ? AND user_id = ?`, jobID, userID)
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
	return j.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE status IN ('queued', 'running') ORDER BY queued_at, job_id LIMIT ?`, limit)
}

// CountByStatus counts the jobs in each status (a status no job is in
// is left out).
func (j *Jobs) CountByStatus(ctx context.Context) (map[string]int, error) {
	rows, err := j.db.read.QueryContext(ctx, `SELECT status, COUNT(*) FROM jobs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count jobs: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return nil, fmt.Errorf("sqlite: count jobs: %w", err)
		}
		out[status] = n
	}
	return out, rows.Err()
}

// ActiveJobForAgent returns a queued or running job of the agent, if any.
func (j *Jobs) ActiveJobForAgent(ctx context.Context, userID, agentID string) (job.View, bool, error) {
	views, err := j.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE user_id = ? AND agent_id = ? AND status IN ('queued', 'running') ORDER BY queued_at, job_id LIMIT 1`, userID, agentID)
	if err != nil || len(views) == 0 {
		return job.View{}, false, err
	}
	return views[0], true, nil
}

func (j *Jobs) query(ctx context.Context, query string, args ...any) ([]job.View, error) {
	rows, err := j.db.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: jobs: %w", err)
	}
	defer rows.Close()
	var out []job.View
	for rows.Next() {
		v, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: jobs: %w", err)
	}
	return out, nil
}

func scanJob(rows *sql.Rows) (job.View, error) {
	var v job.View
	var types string
	var raw [5]sql.NullString
	if err := rows.Scan(&v.JobID, &v.UserID, &v.AgentID, &types, &v.Model, &v.Dimensions, &v.Status, &v.RunnerID, &v.Finishing,
		&v.EstimatedMemories, &v.MemoriesTotal, &v.MemoriesProcessed, &v.MemoriesSkipped, &v.Cursor, &v.Reason,
		&raw[0], &raw[1], &raw[2], &raw[3], &raw[4]); err != nil {
		return job.View{}, fmt.Errorf("sqlite: jobs: %w", err)
	}
	if err := json.Unmarshal([]byte(types), &v.Types); err != nil {
		return job.View{}, fmt.Errorf("sqlite: jobs: types of %s: %w", v.JobID, err)
	}
	for i, dst := range []*time.Time{&v.QueuedAt, &v.StartedAt, &v.CompletedAt, &v.EndedAt, &v.LastActivityAt} {
		t, err := parseDBTime(raw[i])
		if err != nil {
			return job.View{}, err
		}
		*dst = t
	}
	return v, nil
}

// errors lists the job's latest errors, oldest first.
func (j *Jobs) errors(ctx context.Context, jobID string) ([]job.ErrorEntry, error) {
	rows, err := j.db.read.QueryContext(ctx, `SELECT at, memory_id, message FROM
		(SELECT position, at, memory_id, message FROM job_errors WHERE job_id = ? ORDER BY position DESC LIMIT ?) ORDER BY position`, jobID, MaxJobErrors)
	if err != nil {
		return nil, fmt.Errorf("sqlite: jobs: errors: %w", err)
	}
	defer rows.Close()
	out := []job.ErrorEntry{}
	for rows.Next() {
		var e job.ErrorEntry
		var at sql.NullString
		if err := rows.Scan(&at, &e.MemoryID, &e.Message); err != nil {
			return nil, fmt.Errorf("sqlite: jobs: errors: %w", err)
		}
		if e.At, err = parseDBTime(at); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: jobs: errors: %w", err)
	}
	return out, nil
}
