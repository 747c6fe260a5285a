// Package job defines bulk re-embedding jobs: an aggregate per job (stream
// "job-<id>") whose events record its life from queued to a final status.
// Progress is not recorded here: it is derived from the MemoryEmbedded
// events the job appends to its agent's stream, so one append per batch is
// both the work and its progress, and a restart cannot double-count.
package job

import (
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Event types of a job stream. The names are part of the log format: never
// rename one, add a new type instead.
const (
	TypeQueued        = "ReembedJobQueued"
	TypeStarted       = "ReembedJobStarted"
	TypeResumed       = "ReembedJobResumed"
	TypeBatchFailed   = "ReembedJobBatchFailed"
	TypeMemorySkipped = "ReembedJobMemorySkipped"
	TypeFinishing     = "ReembedJobFinishing"
	TypeCompleted     = "ReembedJobCompleted"
	TypeCancelled     = "ReembedJobCancelled"
	TypeFailed        = "ReembedJobFailed"
)

// Queued opens a job stream: re-embed the agent's memories of Types with
// Model (already resolved: never "default").
type Queued struct {
	JobID             string        `json:"job_id"`
	UserID            string        `json:"user_id"`
	AgentID           string        `json:"agent_id"`
	Types             []memory.Type `json:"types"`
	Model             string        `json:"model"`
	Dimensions        int           `json:"dimensions"`
	EstimatedMemories int           `json:"estimated_memories"`
	QueuedAt          time.Time     `json:"queued_at"`
}

// Started records that a runner claimed a queued job. MemoriesTotal is the
// number of matching memories when work began.
type Started struct {
	JobID         string    `json:"job_id"`
	UserID        string    `json:"user_id"`
	RunnerID      string    `json:"runner_id"`
	MemoriesTotal int       `json:"memories_total"`
	StartedAt     time.Time `json:"started_at"`
}

// Resumed records that another runner took over a running job whose runner
// stopped making progress.
type Resumed struct {
	JobID     string    `json:"job_id"`
	UserID    string    `json:"user_id"`
	RunnerID  string    `json:"runner_id"`
	ResumedAt time.Time `json:"resumed_at"`
}

// BatchFailed records one failed attempt at a batch (a provider error); the
// runner retries with backoff and fails the job after too many in a row.
type BatchFailed struct {
	JobID    string    `json:"job_id"`
	UserID   string    `json:"user_id"`
	Attempt  int       `json:"attempt"`
	Message  string    `json:"message"`
	FailedAt time.Time `json:"failed_at"`
}

// MemorySkipped records a memory the provider refused to embed (e.g. too
// long for the model). The job moves on; the memory stays without a vector
// in the new model, and the embedding queue retries it after the switch.
type MemorySkipped struct {
	JobID     string    `json:"job_id"`
	UserID    string    `json:"user_id"`
	MemoryID  string    `json:"memory_id"`
	Message   string    `json:"message"`
	SkippedAt time.Time `json:"skipped_at"`
}

// Finishing records that every memory has been processed and the agent is
// about to be switched. From here the job can no longer be cancelled, so a
// cancel can never race with the switch.
type Finishing struct {
	JobID       string    `json:"job_id"`
	UserID      string    `json:"user_id"`
	FinishingAt time.Time `json:"finishing_at"`
}

// Completed closes a job whose agent now searches with its model.
type Completed struct {
	JobID       string    `json:"job_id"`
	UserID      string    `json:"user_id"`
	CompletedAt time.Time `json:"completed_at"`
}

// Cancelled closes a job on its user's request; the agent keeps its model.
type Cancelled struct {
	JobID       string    `json:"job_id"`
	UserID      string    `json:"user_id"`
	CancelledAt time.Time `json:"cancelled_at"`
}

// Failed closes a job that could not finish; the agent keeps its model.
type Failed struct {
	JobID    string    `json:"job_id"`
	UserID   string    `json:"user_id"`
	Reason   string    `json:"reason"`
	FailedAt time.Time `json:"failed_at"`
}

func (Queued) EventType() string        { return TypeQueued }
func (Started) EventType() string       { return TypeStarted }
func (Resumed) EventType() string       { return TypeResumed }
func (BatchFailed) EventType() string   { return TypeBatchFailed }
func (MemorySkipped) EventType() string { return TypeMemorySkipped }
func (Finishing) EventType() string     { return TypeFinishing }
func (Completed) EventType() string     { return TypeCompleted }
func (Cancelled) EventType() string     { return TypeCancelled }
func (Failed) EventType() string        { return TypeFailed }

// Decode returns the typed payload of a job event, or nil and no error for
// an event type that is not a job event.
func Decode(e domain.Event) (domain.Payload, error) {
	var p domain.Payload
	switch e.Type {
	case TypeQueued:
		p = &Queued{}
	case TypeStarted:
		p = &Started{}
	case TypeResumed:
		p = &Resumed{}
	case TypeBatchFailed:
		p = &BatchFailed{}
	case TypeMemorySkipped:
		p = &MemorySkipped{}
	case TypeFinishing:
		p = &Finishing{}
	case TypeCompleted:
		p = &Completed{}
	case TypeCancelled:
		p = &Cancelled{}
	case TypeFailed:
		p = &Failed{}
	default:
		return nil, nil
	}
	if err := e.Decode(p); err != nil {
		return nil, fmt.Errorf("job: decode %s at %d: %w", e.Type, e.Position, err)
	}
	return p, nil
}

// Events lists the decoders of the job event types for an event registry
// (domain.NewEventRegistry).
func Events() []domain.EventDecoder {
	return []domain.EventDecoder{
		domain.DecoderOf[Queued](), domain.DecoderOf[Started](), domain.DecoderOf[Resumed](),
		domain.DecoderOf[BatchFailed](), domain.DecoderOf[MemorySkipped](), domain.DecoderOf[Finishing](),
		domain.DecoderOf[Completed](), domain.DecoderOf[Cancelled](), domain.DecoderOf[Failed](),
	}
}
