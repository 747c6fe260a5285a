package commands

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
)

// The ports the embedding and re-embedding commands consume. Each is owned
// here, in the terms these commands need, and implemented elsewhere.

// ModelCatalog is the server's set of embedding models (infra/embed.Catalog
// implements it). Embed resolves "default" and "", enforces the text and
// batch limits, and answers a model no configured provider serves with a
// KindInvalid error coded "model_not_available" listing the available ones.
type ModelCatalog interface {
	Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error)
	// Model looks up a served model; "default" and "" give the default.
	Model(name string) (domain.EmbeddingModel, bool)
	// Resolve is Model failing with 400 model_not_available.
	Resolve(name string) (domain.EmbeddingModel, error)
	// Catalogue lists every model, available here or not.
	Catalogue() []domain.CatalogEntry
}

// MemoryReader is the memories read model as these commands use it
// (infra/sqlite.Memories implements it). Lookups are scoped by user: a
// missing or foreign agent or memory is (zero, false, nil).
type MemoryReader interface {
	Agent(ctx context.Context, userID, agentID string) (memory.AgentView, bool, error)
	Memory(ctx context.Context, userID, id string) (memory.View, bool, error)
	// MemoryIDsAfter returns up to limit searchable, unforgotten memories
	// of the agent with an id greater than afterID, in id order; types nil
	// means every searchable type.
	MemoryIDsAfter(ctx context.Context, userID, agentID string, types []memory.Type, afterID string, limit int) ([]memory.View, error)
	// CountMemories counts what MemoryIDsAfter pages through.
	CountMemories(ctx context.Context, userID, agentID string, types []memory.Type) (int, error)
}

// JobReader is the jobs read model (infra/sqlite.Jobs implements it).
type JobReader interface {
	Job(ctx context.Context, userID, jobID string) (job.View, bool, error)
	ActiveJobs(ctx context.Context, limit int) ([]job.View, error)
	ActiveJobForAgent(ctx context.Context, userID, agentID string) (job.View, bool, error)
}

// JobRunner runs the bulk re-embedding jobs (workers.JobRunner implements
// it): Kick wakes it for a job just queued, Rate is the embedding rate it
// has measured for a model, in memories per second.
type JobRunner interface {
	Kick()
	Rate(model string) (float64, bool)
}
