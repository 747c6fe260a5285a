package job

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Status is a job's place in its life (docs/decisions.md#jobs).
type Status string

const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether no transition leaves s.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Stream is the event stream of one job.
func Stream(jobID string) string { return "job-" + jobID }

// Job is the state of one re-embedding job, folded from its stream. The
// methods decide: each returns the event a legal move records, or a
// *domain.Error for an illegal one.
type Job struct {
	ID         string
	UserID     string
	AgentID    string
	Types      []memory.Type
	Model      string
	Dimensions int
	Status     Status
	// RunnerID is the runner that holds the job while it runs.
	RunnerID string
	// Finishing is set once all memories are done: the agent switch is
	// under way and the job can no longer be cancelled.
	Finishing bool
	QueuedAt  time.Time
	StartedAt time.Time
	// Version is the stream version the state was folded from (-1: none).
	Version int64
}

// Spec is what a new job is asked to do.
type Spec struct {
	JobID             string
	UserID            string
	AgentID           string
	Types             []memory.Type
	Model             string
	Dimensions        int
	EstimatedMemories int
}

// New is the state of a job stream that does not exist yet.
func New() *Job { return &Job{Version: -1} }

// Load folds a job stream into its state.
func Load(events []domain.Event) (*Job, error) {
	j := New()
	for _, e := range events {
		p, err := Decode(e)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, fmt.Errorf("job: unexpected event %s in stream %s", e.Type, e.Stream)
		}
		j.apply(p)
		j.Version = int64(e.Version)
	}
	return j, nil
}

// Read folds the job's stream from log.
func Read(ctx context.Context, log domain.StreamReader, jobID string) (*Job, error) {
	events, err := log.ReadStream(ctx, Stream(jobID), 0)
	if err != nil {
		return nil, fmt.Errorf("job: load job %s: %w", jobID, err)
	}
	return Load(events)
}

// AgentRef names the job's agent in its events.
func (j *Job) AgentRef() memory.AgentRef {
	return memory.AgentRef{UserID: j.UserID, AgentID: j.AgentID}
}

// Exists reports whether the job was queued.
func (j *Job) Exists() bool { return j.ID != "" }

func (j *Job) apply(p domain.Payload) {
	switch e := p.(type) {
	case *Queued:
		j.ID, j.UserID, j.AgentID = e.JobID, e.UserID, e.AgentID
		j.Types, j.Model, j.Dimensions = e.Types, e.Model, e.Dimensions
		j.Status, j.QueuedAt = StatusQueued, e.QueuedAt
	case *Started:
		j.Status, j.RunnerID, j.StartedAt = StatusRunning, e.RunnerID, e.StartedAt
	case *Resumed:
		j.RunnerID = e.RunnerID
	case *Finishing:
		j.Finishing = true
	case *Completed:
		j.Status = StatusCompleted
	case *Cancelled:
		j.Status = StatusCancelled
	case *Failed:
		j.Status = StatusFailed
	case *BatchFailed, *MemorySkipped:
		// Reported by the read model; no decision depends on them.
	}
}

// Queue decides a new job. Its id is new (the command draws it, and
// appends expecting no stream), so no state of the job is consulted.
func Queue(s Spec, now time.Time) (domain.Payload, error) {
	if s.JobID == "" || s.UserID == "" {
		return nil, fmt.Errorf("job: queue: job and user ids are required")
	}
	if err := memory.ValidateAgentID(s.AgentID); err != nil {
		return nil, err
	}
	if s.Model == "" || s.Dimensions <= 0 {
		return nil, domain.Invalid("model", "a job needs a resolved model with its dimensions")
	}
	if len(s.Types) == 0 {
		return nil, domain.Invalid("types", "types must name at least one searchable memory type")
	}
	for i, t := range s.Types {
		if !t.Searchable() {
			return nil, domain.Invalid("types", "types[%d]: %s memories are not searchable and have no embeddings", i, t.Plural()).WithDetail("index", i)
		}
	}
	return &Queued{
		JobID: s.JobID, UserID: s.UserID, AgentID: s.AgentID, Types: s.Types,
		Model: s.Model, Dimensions: s.Dimensions, EstimatedMemories: max(0, s.EstimatedMemories), QueuedAt: now.UTC(),
	}, nil
}

// Start lets runnerID claim a queued job.
func (j *Job) Start(runnerID string, total int, now time.Time) (domain.Payload, error) {
	if err := j.mustBe(StatusQueued); err != nil {
		return nil, err
	}
	return &Started{JobID: j.ID, UserID: j.UserID, RunnerID: runnerID, MemoriesTotal: max(0, total), StartedAt: now.UTC()}, nil
}

// Resume lets runnerID take over a running job. It returns no event when
// runnerID already holds the job (a restart of the same runner).
func (j *Job) Resume(runnerID string, now time.Time) (domain.Payload, error) {
	if err := j.mustBe(StatusRunning); err != nil {
		return nil, err
	}
	if j.RunnerID == runnerID {
		return nil, nil
	}
	return &Resumed{JobID: j.ID, UserID: j.UserID, RunnerID: runnerID, ResumedAt: now.UTC()}, nil
}

// RecordBatchFailure records a failed attempt at a batch.
func (j *Job) RecordBatchFailure(attempt int, message string, now time.Time) (domain.Payload, error) {
	if err := j.mustBe(StatusRunning); err != nil {
		return nil, err
	}
	return &BatchFailed{JobID: j.ID, UserID: j.UserID, Attempt: attempt, Message: clip(message), FailedAt: now.UTC()}, nil
}

// Skip records a memory the provider refused.
func (j *Job) Skip(memoryID, message string, now time.Time) (domain.Payload, error) {
	if err := j.mustBeWorking(); err != nil {
		return nil, err
	}
	return &MemorySkipped{JobID: j.ID, UserID: j.UserID, MemoryID: memoryID, Message: clip(message), SkippedAt: now.UTC()}, nil
}

// Finish marks the work done, before the agent is switched. It returns no
// event when the job is already finishing (a resumed finish).
func (j *Job) Finish(now time.Time) (domain.Payload, error) {
	if err := j.mustBe(StatusRunning); err != nil {
		return nil, err
	}
	if j.Finishing {
		return nil, nil
	}
	return &Finishing{JobID: j.ID, UserID: j.UserID, FinishingAt: now.UTC()}, nil
}

// Complete closes a finishing job once its agent has been switched.
func (j *Job) Complete(now time.Time) (domain.Payload, error) {
	if err := j.mustBe(StatusRunning); err != nil {
		return nil, err
	}
	if !j.Finishing {
		return nil, domain.Conflict("job_not_finished", "job %s still has memories to process", j.ID)
	}
	return &Completed{JobID: j.ID, UserID: j.UserID, CompletedAt: now.UTC()}, nil
}

// Cancel stops a queued or running job; its agent keeps its model. Once the
// job is switching the agent it is too late (409 job_finishing).
func (j *Job) Cancel(now time.Time) (domain.Payload, error) {
	if err := j.mustBeWorking(); err != nil {
		return nil, err
	}
	return &Cancelled{JobID: j.ID, UserID: j.UserID, CancelledAt: now.UTC()}, nil
}

// Fail closes a queued or running job with a reason.
func (j *Job) Fail(reason string, now time.Time) (domain.Payload, error) {
	if !j.Exists() {
		return nil, domain.NotFound("job")
	}
	if j.Status.Terminal() {
		return nil, j.finished()
	}
	return &Failed{JobID: j.ID, UserID: j.UserID, Reason: clip(reason), FailedAt: now.UTC()}, nil
}

// mustBeWorking allows queued jobs and running jobs that are not finishing.
func (j *Job) mustBeWorking() error {
	switch {
	case !j.Exists():
		return domain.NotFound("job")
	case j.Status.Terminal():
		return j.finished()
	case j.Finishing:
		return domain.Conflict("job_finishing", "job %s has processed every memory and is switching the agent to %s; it can no longer be cancelled", j.ID, j.Model)
	}
	return nil
}

func (j *Job) mustBe(s Status) error {
	switch {
	case !j.Exists():
		return domain.NotFound("job")
	case j.Status.Terminal():
		return j.finished()
	case j.Status != s:
		return domain.Conflict("job_"+string(j.Status), "job %s is %s, not %s", j.ID, j.Status, s)
	}
	return nil
}

func (j *Job) finished() *domain.Error {
	return domain.Conflict("job_finished", "job %s is already %s", j.ID, j.Status).WithDetail("status", string(j.Status))
}

// maxMessage bounds error texts kept in the log: provider errors can be long.
const maxMessage = 500

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}
