package job

import (
	"context"
	"time"

	"github.com/engram-memory/engram/domain"
)

// ReadModel is the jobs read model's store: re-embedding jobs with their
// progress and errors (projections/jobs.go feeds it).
type ReadModel = domain.ReadModelStore[ReadModelTx]

// ReadModelTx changes the jobs read model within one batch. at is the
// time of the event applied: it becomes the job's last activity. An
// operation on a job the read model does not hold changes nothing.
type ReadModelTx interface {
	AddJob(ctx context.Context, q Queued, at time.Time) error
	Start(ctx context.Context, s Started, at time.Time) error
	// Resume hands a running job to another runner.
	Resume(ctx context.Context, r Resumed, at time.Time) error
	// Touch records activity without another change.
	Touch(ctx context.Context, jobID string, at time.Time) error
	MarkFinishing(ctx context.Context, jobID string, at time.Time) error
	// CountEmbedded and CountSkipped count a memory the running job
	// embedded or skipped and move its cursor to it. Memory ids only grow
	// within a job, so an id at or below the cursor is a repeat (a batch
	// redone after a takeover) and is not counted twice.
	CountEmbedded(ctx context.Context, userID, jobID, memoryID string, at time.Time) error
	CountSkipped(ctx context.Context, jobID, memoryID string, at time.Time) error
	// AddError records a problem of the job at the log position of the
	// event that reported it.
	AddError(ctx context.Context, jobID string, position uint64, e ErrorEntry) error
	// Complete closes the job; its total becomes what it went through.
	Complete(ctx context.Context, jobID string, completedAt, at time.Time) error
	// End closes the job as cancelled or failed (reason: why it failed).
	End(ctx context.Context, jobID string, status Status, reason string, endedAt, at time.Time) error
	// DeleteAgentJobs removes every job of the agent with its errors.
	DeleteAgentJobs(ctx context.Context, userID, agentID string) error
}
