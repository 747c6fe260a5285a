package projections

import (
	"bytes"
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
	return &readModel[job.ReadModelTx]{name: JobsProjectionName, store: store, apply: applyJobEvent}
}

// embeddedByJob is the part of MemoryEmbedded the read model needs; leaving
// out the vector keeps decoding cheap for the many events of the write path.
type embeddedByJob struct {
	UserID   string `json:"user_id"`
	MemoryID string `json:"memory_id"`
	JobID    string `json:"job_id"`
}

func applyJobEvent(ctx context.Context, tx job.ReadModelTx, e domain.Event) error {
	switch e.Type {
	case memory.MemoryEmbedded{}.EventType():
		// Most vectors come from the write path and carry no job_id (it
		// is omitempty); skipping them here spares parsing kilobytes of
		// vector.
		if !bytes.Contains(e.Payload, []byte(`"job_id"`)) {
			return nil
		}
		var p embeddedByJob
		if err := e.Decode(&p); err != nil {
			return err
		}
		if p.JobID == "" {
			return nil
		}
		return tx.CountEmbedded(ctx, p.UserID, p.JobID, p.MemoryID, e.Time)
	case memory.AgentDeleted{}.EventType():
		var p memory.AgentDeleted
		if err := e.Decode(&p); err != nil {
			return err
		}
		return tx.DeleteAgentJobs(ctx, p.UserID, p.AgentID)
	}
	p, err := job.Decode(e)
	if err != nil {
		return err
	}
	at := e.Time
	switch ev := p.(type) {
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
