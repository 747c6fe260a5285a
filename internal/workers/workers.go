// Package workers holds Engram's background work: the embedding queue, the
// bulk re-embedding job runner, the processing scheduler and the API-key
// usage recorder. Each runs until its context ends (Run), reads the read
// models and records what it did as events through the write side's event
// writer; none answers a request. They are neither commands (nobody asks
// for them) nor projections (they write), so they sit above both, below
// the wiring that starts them.
package workers

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// The ports the workers consume, in the terms they need.

// Writer records events and returns once the projections have applied
// them (commands.EventWriter implements it); Store is the log it appends
// to, from which the job runner folds its jobs.
type Writer interface {
	Append(ctx context.Context, stream string, expected int64, meta domain.Metadata, payloads ...domain.Payload) (domain.AppendResult, error)
	Store() domain.EventStore
}

// PendingReader finds memories waiting for a vector: searchable, not
// forgotten, and whose current text has none in the agent's active model
// (the memories read model implements it).
type PendingReader interface {
	PendingEmbeddings(ctx context.Context, limit int) ([]memory.PendingEmbedding, error)
	// MemoriesByID returns the memories among ids of the user's agent
	// that are neither purged nor forgotten, keyed by id.
	MemoriesByID(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.View, error)
}

// ActiveJobs lists the jobs a runner must advance (the jobs read model
// implements it).
type ActiveJobs interface {
	ActiveJobs(ctx context.Context, limit int) ([]job.View, error)
}

// JobMemories is the memories read model as the job runner pages through
// an agent's memories. A missing or foreign agent is (zero, false, nil).
type JobMemories interface {
	Agent(ctx context.Context, userID, agentID string) (memory.AgentView, bool, error)
	// MemoryIDsAfter returns up to limit searchable, unforgotten memories
	// of the agent with an id greater than afterID, in id order; types nil
	// means every searchable type.
	MemoryIDsAfter(ctx context.Context, userID, agentID string, types []memory.Type, afterID string, limit int) ([]memory.View, error)
	// CountMemories counts what MemoryIDsAfter pages through.
	CountMemories(ctx context.Context, userID, agentID string, types []memory.Type) (int, error)
	// MemoriesByID returns the memories among ids of the user's agent
	// that are neither purged nor forgotten, keyed by id.
	MemoriesByID(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.View, error)
}

// AgentDirectory pages through the agents of every user (the memories
// read model implements it).
type AgentDirectory interface {
	AgentsAfter(ctx context.Context, after memory.AgentRef, limit int) ([]memory.AgentRef, error)
}

// ScheduledProcessor runs an agent's due processing transitions
// (commands.Pipeline implements it); maintenance reports an agent skipped
// because its stack is in maintenance.
type ScheduledProcessor interface {
	ScheduledPass(ctx context.Context, agent memory.AgentRef) (passes []processing.PassRecorded, maintenance bool, err error)
}

// Kicker is told when there is work for a worker; EmbedQueue implements it.
type Kicker interface {
	Kick()
}
