package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
)

// JobsProjection names the jobs read model (checkpoint key and
// `engram projections rebuild jobs`).
const JobsProjection = "jobs"

func jobTables() []exportTable {
	return []exportTable{
		{name: "jobs", orderBy: "job_id"},
		{name: "job_errors", orderBy: "job_id, position"},
	}
}

// Jobs is the jobs read model: re-embedding jobs with their progress. It
// implements projections.Projection and answers the job runner's and the
// API's queries.
type Jobs struct {
	tableModel
}

// NewJobs returns the jobs read model stored in db.
func NewJobs(db *DB) *Jobs {
	return &Jobs{tableModel{db: db, name: JobsProjection, tables: jobTables()}}
}

// Apply implements projections.Projection.
func (j *Jobs) Apply(ctx context.Context, events []domain.Event) error {
	return j.db.ApplyEvents(ctx, JobsProjection, events, func(tx *sql.Tx, e domain.Event) error {
		exec := func(query string, args ...any) error {
			if _, err := tx.ExecContext(ctx, query, args...); err != nil {
				return fmt.Errorf("sqlite: jobs: %w", err)
			}
			return nil
		}
		switch e.Type {
		case memory.MemoryEmbedded{}.EventType():
			return applyJobProgress(exec, e)
		case memory.AgentDeleted{}.EventType():
			return applyAgentDeletedToJobs(exec, e)
		}
		p, err := job.Decode(e)
		if err != nil || p == nil {
			return err
		}
		return applyJobEvent(exec, e, p)
	}, nil)
}

// embeddedByJob is the part of MemoryEmbedded the read model needs; leaving
// out the vector keeps decoding cheap for the many events of the write path.
type embeddedByJob struct {
	UserID   string `json:"user_id"`
	MemoryID string `json:"memory_id"`
	JobID    string `json:"job_id"`
}

// applyJobProgress counts a memory embedded by a running job. Memory ids
// only grow within a job, so an id at or below the cursor is a repeat (a
// batch redone after a takeover) and is not counted twice.
func applyJobProgress(exec func(string, ...any) error, e domain.Event) error {
	// Most vectors come from the write path and carry no job_id (it is
	// omitempty); skipping them here spares parsing kilobytes of vector.
	if !bytes.Contains(e.Payload, []byte(`"job_id"`)) {
		return nil
	}
	var p embeddedByJob
	if err := e.Decode(&p); err != nil {
		return fmt.Errorf("sqlite: jobs: decode %s at %d: %w", e.Type, e.Position, err)
	}
	if p.JobID == "" {
		return nil
	}
	return exec(`UPDATE jobs SET memories_processed = memories_processed + 1, cursor = ?, last_activity_at = ?
		WHERE job_id = ? AND user_id = ? AND status = 'running' AND cursor < ?`,
		p.MemoryID, dbTime(e.Time), p.JobID, p.UserID, p.MemoryID)
}

// applyAgentDeletedToJobs removes the agent's jobs: deleting an agent
// removes everything in it from every projection. A job still running
// fails when its runner finds the agent gone.
func applyAgentDeletedToJobs(exec func(string, ...any) error, e domain.Event) error {
	var p memory.AgentDeleted
	if err := e.Decode(&p); err != nil {
		return fmt.Errorf("sqlite: jobs: decode %s at %d: %w", e.Type, e.Position, err)
	}
	if err := exec(`DELETE FROM job_errors WHERE job_id IN (SELECT job_id FROM jobs WHERE user_id = ? AND agent_id = ?)`, p.UserID, p.AgentID); err != nil {
		return err
	}
	return exec(`DELETE FROM jobs WHERE user_id = ? AND agent_id = ?`, p.UserID, p.AgentID)
}

func applyJobEvent(exec func(string, ...any) error, e domain.Event, p domain.Payload) error {
	at := dbTime(e.Time)
	switch ev := p.(type) {
	case *job.Queued:
		types, err := json.Marshal(ev.Types)
		if err != nil {
			return fmt.Errorf("sqlite: jobs: %w", err)
		}
		return exec(`INSERT INTO jobs (job_id, user_id, agent_id, types, model, dimensions, status, estimated_memories, memories_total, queued_at, last_activity_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ev.JobID, ev.UserID, ev.AgentID, string(types), ev.Model, ev.Dimensions, job.StatusQueued,
			ev.EstimatedMemories, ev.EstimatedMemories, dbTime(ev.QueuedAt), at)
	case *job.Started:
		return exec(`UPDATE jobs SET status = ?, runner_id = ?, memories_total = ?, started_at = ?, last_activity_at = ? WHERE job_id = ?`,
			job.StatusRunning, ev.RunnerID, ev.MemoriesTotal, dbTime(ev.StartedAt), at, ev.JobID)
	case *job.Resumed:
		return exec(`UPDATE jobs SET runner_id = ?, last_activity_at = ? WHERE job_id = ?`, ev.RunnerID, at, ev.JobID)
	case *job.BatchFailed:
		if err := exec(`UPDATE jobs SET last_activity_at = ? WHERE job_id = ?`, at, ev.JobID); err != nil {
			return err
		}
		return insertJobError(exec, ev.JobID, e.Position, ev.FailedAt, "", fmt.Sprintf("attempt %d: %s", ev.Attempt, ev.Message))
	case *job.MemorySkipped:
		if err := exec(`UPDATE jobs SET memories_skipped = memories_skipped + 1, cursor = ?, last_activity_at = ?
			WHERE job_id = ? AND status = 'running' AND cursor < ?`, ev.MemoryID, at, ev.JobID, ev.MemoryID); err != nil {
			return err
		}
		return insertJobError(exec, ev.JobID, e.Position, ev.SkippedAt, ev.MemoryID, ev.Message)
	case *job.Finishing:
		return exec(`UPDATE jobs SET finishing = 1, last_activity_at = ? WHERE job_id = ?`, at, ev.JobID)
	case *job.Completed:
		// The total is what the job went through, late writes included.
		return exec(`UPDATE jobs SET status = ?, memories_total = memories_processed + memories_skipped, completed_at = ?, ended_at = ?, last_activity_at = ? WHERE job_id = ?`,
			job.StatusCompleted, dbTime(ev.CompletedAt), dbTime(ev.CompletedAt), at, ev.JobID)
	case *job.Cancelled:
		return exec(`UPDATE jobs SET status = ?, ended_at = ?, last_activity_at = ? WHERE job_id = ?`,
			job.StatusCancelled, dbTime(ev.CancelledAt), at, ev.JobID)
	case *job.Failed:
		return exec(`UPDATE jobs SET status = ?, reason = ?, ended_at = ?, last_activity_at = ? WHERE job_id = ?`,
			job.StatusFailed, ev.Reason, dbTime(ev.FailedAt), at, ev.JobID)
	}
	return nil
}

func insertJobError(exec func(string, ...any) error, jobID string, position uint64, at time.Time, memoryID, message string) error {
	return exec(`INSERT INTO job_errors (job_id, position, at, memory_id, message) SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM jobs WHERE job_id = ?)`,
		jobID, position, dbTime(at), memoryID, message, jobID)
}
