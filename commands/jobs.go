package commands

import (
	"context"
	"fmt"
	"math"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
)

// BulkReembedRequest asks to move an agent's memories to a model.
type BulkReembedRequest struct {
	AgentID string
	Types   []string // plural or singular names; empty: every searchable type
	Model   string   // "default" or "": the server's default model
}

// JobCreated is a job just queued, with how long it is expected to take.
type JobCreated struct {
	job.View
	EstimatedSeconds int
}

// BulkReembed queues a job that re-embeds the agent's memories of the given
// types with model and then switches the agent's search to it. It returns
// at once; a JobRunner does the work. One job per agent at a time: a second
// one while the first is queued or running is 409 job_in_progress.
func (s *Embeddings) BulkReembed(ctx context.Context, meta domain.Metadata, req BulkReembedRequest) (JobCreated, error) {
	userID := meta.Actor.UserID
	types, err := memory.ParseSearchableTypes("types", req.Types)
	if err != nil {
		return JobCreated{}, err
	}
	a, err := s.agent(ctx, userID, req.AgentID)
	if err != nil {
		return JobCreated{}, err
	}
	model, err := s.d.Catalog.Resolve(req.Model)
	if err != nil {
		return JobCreated{}, err
	}
	if active, ok, err := s.d.Jobs.ActiveJobForAgent(ctx, userID, a.AgentID); err != nil {
		return JobCreated{}, err
	} else if ok {
		return JobCreated{}, domain.Conflict("job_in_progress", "agent %s already has re-embedding job %s (%s); cancel it or wait for it to end", a.AgentID, active.JobID, active.Status).
			WithDetail("job_id", active.JobID)
	}
	estimated, err := s.d.Memories.CountMemories(ctx, userID, a.AgentID, types)
	if err != nil {
		return JobCreated{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return JobCreated{}, fmt.Errorf("commands: job id: %w", err)
	}
	ev, err := job.Queue(job.Spec{
		JobID: id.String(), UserID: userID, AgentID: a.AgentID, Types: types,
		Model: model.Name, Dimensions: model.Dimensions, EstimatedMemories: estimated,
	}, s.d.Now())
	if err != nil {
		return JobCreated{}, err
	}
	if _, err := s.d.Writer.Append(ctx, job.Stream(id.String()), domain.ExpectNoStream, meta, ev); err != nil {
		return JobCreated{}, err
	}
	v, err := s.job(ctx, userID, id.String())
	if err != nil {
		return JobCreated{}, err
	}
	if s.d.Runner != nil {
		s.d.Runner.Kick()
	}
	return JobCreated{View: v, EstimatedSeconds: s.estimateSeconds(model.Name, estimated)}, nil
}

// defaultRate is the assumed memories per second of a model the runner has
// not measured yet: a remote provider's pace, so the estimate errs long.
const defaultRate = 200.0

func (s *Embeddings) estimateSeconds(model string, n int) int {
	rate := defaultRate
	if s.d.Runner != nil {
		if r, ok := s.d.Runner.Rate(model); ok {
			rate = r
		}
	}
	return max(1, int(math.Ceil(float64(n)/rate)))
}

// job returns the caller's job; another user's job is 404.
func (s *Embeddings) job(ctx context.Context, userID, jobID string) (job.View, error) {
	v, ok, err := s.d.Jobs.Job(ctx, userID, jobID)
	if err != nil {
		return job.View{}, err
	}
	if !ok {
		return job.View{}, domain.NotFound("job")
	}
	return v, nil
}

// CancelJob cancels a queued or running job; the agent keeps its model. A
// job that has ended, or is already switching the agent, is 409.
func (s *Embeddings) CancelJob(ctx context.Context, meta domain.Metadata, jobID string) (job.View, error) {
	userID := meta.Actor.UserID
	if _, err := s.job(ctx, userID, jobID); err != nil {
		return job.View{}, err
	}
	err := RetryOnConflict(ctx, func() error {
		j, err := job.Read(ctx, s.d.Writer.Store(), jobID)
		if err != nil {
			return err
		}
		ev, err := j.Cancel(s.d.Now())
		if err != nil {
			return err
		}
		_, err = s.d.Writer.Append(ctx, job.Stream(jobID), j.Version, meta, ev)
		return err
	})
	if err != nil {
		return job.View{}, err
	}
	return s.job(ctx, userID, jobID)
}
