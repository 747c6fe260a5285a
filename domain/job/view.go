package job

import (
	"time"

	"github.com/engram-memory/engram/domain/memory"
)

// View is a job as the jobs read model returns it. Progress fields are
// derived from the events the job produced.
type View struct {
	JobID             string
	UserID            string
	AgentID           string
	Types             []memory.Type
	Model             string
	Dimensions        int
	Status            Status
	RunnerID          string
	Finishing         bool
	EstimatedMemories int
	MemoriesTotal     int
	// MemoriesProcessed counts memories the job embedded; MemoriesSkipped
	// those the provider refused.
	MemoriesProcessed int
	MemoriesSkipped   int
	// Cursor is the largest memory id done: the job resumes after it.
	Cursor      string
	Errors      []ErrorEntry
	Reason      string
	QueuedAt    time.Time
	StartedAt   time.Time // zero until started
	CompletedAt time.Time // zero unless completed
	EndedAt     time.Time // zero until completed, cancelled or failed
	// LastActivityAt is the time of the job's latest event or batch; a
	// running job idle for long has lost its runner.
	LastActivityAt time.Time
}

// ErrorEntry is one problem a job met: a failed batch attempt, or a memory
// the provider refused (MemoryID set).
type ErrorEntry struct {
	At       time.Time
	MemoryID string
	Message  string
}
