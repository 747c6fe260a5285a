package search

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Similar finds the memories of an agent nearest to a raw vector in the
// agent's active embedding space (POST /embeddings/similar). Scores are
// max(0, cosine), like vector search; forgotten memories never match.
// While the vector index is being rebuilt live it is KindIndexUnavailable
// (vector_index_rebuilding), as vector search is: the half-filled index
// would answer with some of the memories, or none, as if that were all.
func (s *Service) Similar(ctx context.Context, userID, agentID string, vector []float32, limit int, minScore float64, types []memory.Type) ([]memory.Scored, error) {
	space, ok := s.spaces.AgentSpace(userID, agentID)
	if !ok {
		return nil, domain.NotFound("agent " + agentID)
	}
	if err := s.rebuilding(SideVector); err != nil {
		return nil, err
	}
	hits, err := s.vectors.SearchVectors(ctx, domain.VectorQuery{
		Scope: domain.IndexScope{UserID: userID, AgentID: agentID}, Space: space, Vector: vector,
		Filter: Filter{Types: types}.indexFilter(false), Limit: limit, MinScore: minScore,
	})
	if err != nil {
		return nil, indexError(ctx, SideVector, err)
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.MemoryID
	}
	views, err := s.memories.ExcerptsByID(ctx, userID, agentID, ids, false)
	if err != nil {
		return nil, err
	}
	out := make([]memory.Scored, 0, len(hits))
	for _, h := range hits {
		v, ok := views[h.MemoryID]
		if !ok {
			continue
		}
		out = append(out, memory.Scored{Type: v.Type, ID: v.ID, Score: h.Score, Content: v.Content})
	}
	return out, nil
}
