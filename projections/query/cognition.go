package query

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/memory"
)

// SuggestionStatuses are the statuses stats always report.
var SuggestionStatuses = []string{"pending", "promoted", "modified", "rejected", "dismissed", "expired"}

// Provenance directions.
const (
	DirectionUp   = "up"   // what the memory was derived from
	DirectionDown = "down" // what was derived from it
	DirectionBoth = "both"
)

// ProvenanceTree is the answer of Provenance: Up and Down are nil when
// not asked for.
type ProvenanceTree struct {
	Memory    memory.Ref             `json:"-"`
	Direction string                 `json:"direction"`
	Depth     int                    `json:"depth"`
	Up        *memory.ProvenanceNode `json:"up"`
	Down      *memory.ProvenanceNode `json:"down"`
}

// Provenance returns the provenance tree of the user's memory in direction
// (up, down or both; default both) to depth levels (default
// memory.DefaultProvenanceDepth, at most memory.MaxProvenanceDepth).
func (s *Service) Provenance(ctx context.Context, userID, id, direction string, depth int) (ProvenanceTree, error) {
	switch direction {
	case "":
		direction = DirectionBoth
	case DirectionUp, DirectionDown, DirectionBoth:
	default:
		return ProvenanceTree{}, domain.Invalid("direction", "direction must be up, down or both, got %q", direction)
	}
	switch {
	case depth == 0:
		depth = memory.DefaultProvenanceDepth
	case depth < 1 || depth > memory.MaxProvenanceDepth:
		return ProvenanceTree{}, domain.Invalid("depth", "depth must be between 1 and %d, got %d", memory.MaxProvenanceDepth, depth).
			WithDetail("limit", memory.MaxProvenanceDepth)
	}
	v, err := s.Get(ctx, userID, id)
	if err != nil {
		return ProvenanceTree{}, err
	}
	root := memory.Ref{Type: v.Type, ID: v.ID}
	out := ProvenanceTree{Memory: root, Direction: direction, Depth: depth}
	if direction != DirectionDown {
		if out.Up, err = memory.BuildProvenanceTree(ctx, root, depth, func(ctx context.Context, ids []string) (map[string][]memory.Ref, error) {
			return s.cfg.Provenance.Sources(ctx, userID, v.AgentID, ids)
		}); err != nil {
			return ProvenanceTree{}, err
		}
	}
	if direction != DirectionUp {
		if out.Down, err = memory.BuildProvenanceTree(ctx, root, depth, func(ctx context.Context, ids []string) (map[string][]memory.Ref, error) {
			return s.cfg.Provenance.Derived(ctx, userID, v.AgentID, ids)
		}); err != nil {
			return ProvenanceTree{}, err
		}
	}
	return out, nil
}

// Audit returns a page of the audit trail, newest first: the agent's when
// q.AgentID is set (404 for an agent the user does not have), else the
// account's.
func (s *Service) Audit(ctx context.Context, q audit.Query) (audit.Page, error) {
	switch {
	case q.Limit == 0:
		q.Limit = audit.DefaultLimit
	case q.Limit < 1 || q.Limit > audit.MaxLimit:
		return audit.Page{}, domain.Invalid("limit", "limit must be between 1 and %d, got %d", audit.MaxLimit, q.Limit).WithDetail("limit", audit.MaxLimit)
	}
	if q.AgentID != "" {
		if _, err := s.Settings(ctx, q.UserID, q.AgentID); err != nil {
			return audit.Page{}, err
		}
	}
	return s.cfg.Audit.Entries(ctx, q)
}

// Stats counts what the user's agent holds.
func (s *Service) Stats(ctx context.Context, userID, agentID string) (memory.Stats, error) {
	if memory.ValidateAgentID(agentID) != nil {
		return memory.Stats{}, domain.NotFound("agent")
	}
	st, found, err := s.cfg.Memories.AgentStats(ctx, userID, agentID, s.now())
	if err != nil {
		return memory.Stats{}, err
	}
	if !found {
		return memory.Stats{}, domain.NotFound("agent")
	}
	st.Suggestions = make(map[string]int, len(SuggestionStatuses))
	for _, status := range SuggestionStatuses {
		st.Suggestions[status] = 0
	}
	counts, err := s.cfg.Suggestions.SuggestionCounts(ctx, userID, agentID)
	if err != nil {
		return memory.Stats{}, err
	}
	for status, n := range counts {
		st.Suggestions[status] = n
	}
	return st, nil
}
