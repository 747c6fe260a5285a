// Package query is Engram's read side: the queries of the API, the command
// line and the local dashboard, answered from the read models the
// projections keep (and, for an agent's processing state, from its
// cognition stream). Nothing here writes; the write side is commands.
package query

import (
	"context"
	"errors"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// The ports the queries read through, in the terms they need; the read
// models of infra/sqlite and infra/postgres implement them. Every lookup is
// scoped by user: a missing or foreign row is (zero, false, nil).

// MemoryReadModel is the memories read model.
type MemoryReadModel interface {
	Agent(ctx context.Context, userID, agentID string) (memory.AgentView, bool, error)
	ListAgents(ctx context.Context, q memory.AgentListQuery) (memory.AgentPage, error)
	Memory(ctx context.Context, userID, id string) (memory.View, bool, error)
	ListMemories(ctx context.Context, q memory.ListQuery) (memory.Page, error)
	// Settings is the agent's stack settings (defaults until changed).
	Settings(ctx context.Context, userID, agentID string) (agentsettings.View, bool, error)
	AgentStats(ctx context.Context, userID, agentID string, now time.Time) (memory.Stats, bool, error)
}

// SuggestionReadModel is the suggestions read model.
type SuggestionReadModel interface {
	Suggestion(ctx context.Context, userID, id string) (processing.Suggestion, bool, error)
	ListSuggestions(ctx context.Context, q processing.SuggestionQuery) ([]processing.Suggestion, error)
	CountPending(ctx context.Context, userID, agentID string, now time.Time) (int, error)
	// SuggestionCounts counts an agent's suggestions by status.
	SuggestionCounts(ctx context.Context, userID, agentID string) (map[string]int, error)
}

// ProvenanceReadModel answers provenance steps from an edge index.
type ProvenanceReadModel interface {
	// Sources returns, per id, the memories it was derived from.
	Sources(ctx context.Context, userID, agentID string, ids []string) (map[string][]memory.Ref, error)
	// Derived returns, per id, the memories derived from it.
	Derived(ctx context.Context, userID, agentID string, ids []string) (map[string][]memory.Ref, error)
}

// AuditReadModel pages through audit entries.
type AuditReadModel interface {
	Entries(ctx context.Context, q audit.Query) (audit.Page, error)
}

// JobReadModel is the jobs read model.
type JobReadModel interface {
	Job(ctx context.Context, userID, jobID string) (job.View, bool, error)
}

// ModelCatalog lists the embedding models (infra/embed.Catalog implements
// it): every model, available here or not.
type ModelCatalog interface {
	Catalogue() []domain.CatalogEntry
}

// SimilarFinder searches an agent's vectors in its active model by a raw
// vector (the search service serves it; the caller has checked the
// vector's size against the agent's model). Forgotten memories never
// match; scores are in [0, 1], best first; types nil means every
// searchable type.
type SimilarFinder interface {
	Similar(ctx context.Context, userID, agentID string, vector []float32, limit int, minScore float64, types []memory.Type) ([]memory.Scored, error)
}

// Config holds the read models the queries answer from.
type Config struct {
	Memories    MemoryReadModel     // required
	Suggestions SuggestionReadModel // required
	Provenance  ProvenanceReadModel // required
	Audit       AuditReadModel      // required
	Jobs        JobReadModel        // required
	// States folds the agents' cognition streams for the processing
	// queries. Required; the composition root gives the write side
	// (commands.PipelineConfig) the same one, so an agent's state is
	// folded and kept once per process.
	States *processing.Snapshots
	// Processor is what the processing view reports as the processor the
	// passes run.
	Processor processing.ProcessorInfo
	// Catalog and Similar serve the embedding queries; without them Models
	// lists nothing and Similar fails (the dashboard neither embeds nor
	// searches).
	Catalog ModelCatalog
	Similar SimilarFinder
	Now     func() time.Time // default time.Now
}

// Service answers every query. None of them writes anything.
type Service struct {
	cfg Config
}

// New checks cfg.
func New(cfg Config) (*Service, error) {
	if cfg.Memories == nil || cfg.Suggestions == nil || cfg.Provenance == nil || cfg.Audit == nil || cfg.Jobs == nil || cfg.States == nil {
		return nil, errors.New("query: the queries need the memories, suggestions, provenance, audit and jobs read models and the processing states")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{cfg: cfg}, nil
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }
