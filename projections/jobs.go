package projections

import (
	"context"
	"fmt"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
)

// JobsProjectionName names the jobs read model (its checkpoint and
// `engram projections rebuild jobs`).
const JobsProjectionName = "jobs"

// NewJobs returns the projection of the job streams, and of the vectors
// jobs made, into the jobs read model. Deleting an agent removes its jobs
// (a job still running fails when its runner finds the agent gone).
func NewJobs(store job.ReadModel) Projection {
	return &readModel[job.ReadModelTx]{name: JobsProjectionName, store: store, apply: applyJobEvent, events: Events()}
}

func applyJobEvent(ctx context.Context, tx job.ReadModelTx, e domain.Event) error {
	p, err := e.Decoded()
	if err != nil {
		return err
	}
	at := e.Time
	switch ev := p.(type) {
	case *memory.MemoryEmbedded:
		if ev.JobID == "" { // a vector of the write path, not of a job
			return nil
		}
		return tx.CountEmbedded(ctx, ev.UserID, ev.JobID, ev.MemoryID, at)
	case *memory.AgentDeleted:
		return tx.DeleteAgentJobs(ctx, ev.UserID, ev.AgentID)
	case *job.Queued:
		return tx.AddJob(ctx, *ev, at)
	case *job.Started:
		return tx.Start(ctx, *ev, at)
	case *job.Resumed:
		return tx.Resume(ctx, *ev, at)
	case *job.BatchFailed:
		if err := tx.Touch(ctx, ev.JobID, at); err != nil {
			return err
		}
		return tx.AddError(ctx, ev.JobID, e.Position, job.ErrorEntry{At: ev.FailedAt, Message: fmt.Sprintf("attempt %d: %s", ev.Attempt, ev.Message)})
	case *job.MemorySkipped:
		if err := tx.CountSkipped(ctx, ev.JobID, ev.MemoryID, at); err != nil {
			return err
		}
		return tx.AddError(ctx, ev.JobID, e.Position, job.ErrorEntry{At: ev.SkippedAt, MemoryID: ev.MemoryID, Message: ev.Message})
	case *job.Finishing:
		return tx.MarkFinishing(ctx, ev.JobID, at)
	case *job.Completed:
		return tx.Complete(ctx, ev.JobID, ev.CompletedAt, at)
	case *job.Cancelled:
		return tx.End(ctx, ev.JobID, job.StatusCancelled, "", ev.CancelledAt, at)
	case *job.Failed:
		return tx.End(ctx, ev.JobID, job.StatusFailed, ev.Reason, ev.FailedAt, at)
	}
	return nil
}
