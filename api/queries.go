package api

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/anxiety"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/projections/query"
)

// Queries is the read side the API answers from, scoped by user;
// query.Service implements it. The use-case surfaces (Memories,
// Embeddings, Pipeline, Cognition) are the write side.
type Queries interface {
	Get(ctx context.Context, userID, id string) (memory.View, error)
	List(ctx context.Context, q memory.ListQuery) (memory.Page, error)
	Agents(ctx context.Context, q memory.AgentListQuery) (memory.AgentPage, error)
	Settings(ctx context.Context, userID, agentID string) (agentsettings.View, error)
	Provenance(ctx context.Context, userID, id, direction string, depth int) (query.ProvenanceTree, error)
	Audit(ctx context.Context, q audit.Query) (audit.Page, error)
	Stats(ctx context.Context, userID, agentID string) (memory.Stats, error)
	Processing(ctx context.Context, userID, agentID string) (query.ProcessingView, error)
	Suggestions(ctx context.Context, userID, agentID string, status processing.Status, limit int) ([]processing.Suggestion, error)
	Suggestion(ctx context.Context, userID, id string) (processing.Suggestion, error)
	Anxiety(ctx context.Context, userID, agentID string) (anxiety.Report, error)
	RawEntries(ctx context.Context, userID, agentID string, q query.RawQuery) (query.RawPage, error)
	Job(ctx context.Context, userID, jobID string) (job.View, error)
	Similar(ctx context.Context, userID string, req query.SimilarRequest) ([]memory.Scored, error)
	Models(ctx context.Context) []domain.CatalogEntry
}
