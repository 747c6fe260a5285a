package query

import (
	"context"
	"fmt"
	"math"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
)

// MaxSimilarLimit is the largest /embeddings/similar limit.
const MaxSimilarLimit = 100

// Models lists the catalogue: every model, whether it is available here and
// which one "default" selects.
func (s *Service) Models(ctx context.Context) []domain.CatalogEntry {
	if s.cfg.Catalog == nil {
		return nil
	}
	return s.cfg.Catalog.Catalogue()
}

// Job returns the caller's job; another user's job is 404.
func (s *Service) Job(ctx context.Context, userID, jobID string) (job.View, error) {
	v, found, err := s.cfg.Jobs.Job(ctx, userID, jobID)
	return foundOr(v, found, err, "job")
}

// SimilarRequest finds an agent's memories nearest to a raw vector. The API
// fills in the defaults (limit 10, min_score 0, every searchable type).
type SimilarRequest struct {
	AgentID   string
	Embedding []float32
	Limit     int
	MinScore  float64
	Types     []string
}

// Similar searches the agent's vectors in its active model. The vector must
// have that model's dimensions.
func (s *Service) Similar(ctx context.Context, userID string, req SimilarRequest) ([]memory.Scored, error) {
	if req.Limit < 1 || req.Limit > MaxSimilarLimit {
		return nil, domain.Invalid("limit", "limit must be between 1 and %d", MaxSimilarLimit).WithDetail("limit", MaxSimilarLimit)
	}
	if math.IsNaN(req.MinScore) || req.MinScore < 0 || req.MinScore > 1 {
		return nil, domain.Invalid("min_score", "min_score must be between 0 and 1")
	}
	types, err := memory.ParseSearchableTypes("types", req.Types)
	if err != nil {
		return nil, err
	}
	if len(req.Embedding) == 0 {
		return nil, domain.Invalid("embedding", "embedding is required: an array of numbers")
	}
	a, err := s.agent(ctx, userID, req.AgentID)
	if err != nil {
		return nil, err
	}
	if len(req.Embedding) != a.Dimensions {
		return nil, domain.Invalid("embedding", "embedding has %d dimensions, but agent %s is searched with %s, which has %d",
			len(req.Embedding), a.AgentID, a.EmbeddingModel, a.Dimensions).
			WithDetail("dimensions", len(req.Embedding)).WithDetail("expected_dimensions", a.Dimensions).WithDetail("model", a.EmbeddingModel)
	}
	if err := domain.CheckVector("embedding", req.Embedding); err != nil {
		return nil, err
	}
	if s.cfg.Similar == nil {
		return nil, fmt.Errorf("query: no vector search is configured")
	}
	return s.cfg.Similar.Similar(ctx, userID, a.AgentID, req.Embedding, req.Limit, req.MinScore, types)
}
