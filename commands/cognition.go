package commands

import (
	"context"
	"errors"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/memory"
)

// ProvenanceReadModel answers provenance steps from an edge index
// (infra/sqlite.Provenance implements it).
type ProvenanceReadModel interface {
	// Sources returns, per id, the memories it was derived from.
	Sources(ctx context.Context, userID, agentID string, ids []string) (map[string][]memory.Ref, error)
	// Derived returns, per id, the memories derived from it.
	Derived(ctx context.Context, userID, agentID string, ids []string) (map[string][]memory.Ref, error)
}

// AuditReadModel pages through audit entries (infra/sqlite.Audit).
type AuditReadModel interface {
	Entries(ctx context.Context, q audit.Query) (audit.Page, error)
}

// StatsReadModel counts an agent's memories (infra/sqlite.Memories).
type StatsReadModel interface {
	AgentStats(ctx context.Context, userID, agentID string, now time.Time) (memory.Stats, bool, error)
}

// SuggestionCounter counts an agent's suggestions by status; the
// suggestions read model implements it. Without one, stats report zero for
// every status.
type SuggestionCounter interface {
	SuggestionCounts(ctx context.Context, userID, agentID string) (map[string]int, error)
}

// SuggestionStatuses are the statuses stats always report.
var SuggestionStatuses = []string{"pending", "promoted", "modified", "rejected", "dismissed", "expired"}

// CognitionConfig holds the read models Cognition answers from.
type CognitionConfig struct {
	Memories    *Memories           // required
	Provenance  ProvenanceReadModel // required
	Audit       AuditReadModel      // required
	Stats       StatsReadModel      // required
	Suggestions SuggestionCounter   // nil: zero counts
}

// Cognition answers the stack-cognition queries: provenance trees, audit
// trails and stats. None of them writes anything.
type Cognition struct {
	cfg CognitionConfig
}

// NewCognition checks cfg.
func NewCognition(cfg CognitionConfig) (*Cognition, error) {
	if cfg.Memories == nil || cfg.Provenance == nil || cfg.Audit == nil || cfg.Stats == nil {
		return nil, errors.New("commands: cognition needs memories and the provenance, audit and stats read models")
	}
	return &Cognition{cfg: cfg}, nil
}

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
func (c *Cognition) Provenance(ctx context.Context, userID, id, direction string, depth int) (ProvenanceTree, error) {
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
	v, err := c.cfg.Memories.Get(ctx, userID, id)
	if err != nil {
		return ProvenanceTree{}, err
	}
	root := memory.Ref{Type: v.Type, ID: v.ID}
	out := ProvenanceTree{Memory: root, Direction: direction, Depth: depth}
	if direction != DirectionDown {
		if out.Up, err = memory.BuildProvenanceTree(ctx, root, depth, func(ctx context.Context, ids []string) (map[string][]memory.Ref, error) {
			return c.cfg.Provenance.Sources(ctx, userID, v.AgentID, ids)
		}); err != nil {
			return ProvenanceTree{}, err
		}
	}
	if direction != DirectionUp {
		if out.Down, err = memory.BuildProvenanceTree(ctx, root, depth, func(ctx context.Context, ids []string) (map[string][]memory.Ref, error) {
			return c.cfg.Provenance.Derived(ctx, userID, v.AgentID, ids)
		}); err != nil {
			return ProvenanceTree{}, err
		}
	}
	return out, nil
}

// Audit returns a page of the audit trail, newest first: the agent's when
// q.AgentID is set (404 for an agent the user does not have), else the
// account's.
func (c *Cognition) Audit(ctx context.Context, q audit.Query) (audit.Page, error) {
	switch {
	case q.Limit == 0:
		q.Limit = audit.DefaultLimit
	case q.Limit < 1 || q.Limit > audit.MaxLimit:
		return audit.Page{}, domain.Invalid("limit", "limit must be between 1 and %d, got %d", audit.MaxLimit, q.Limit).WithDetail("limit", audit.MaxLimit)
	}
	if q.AgentID != "" {
		if _, err := c.cfg.Memories.Settings(ctx, q.UserID, q.AgentID); err != nil {
			return audit.Page{}, err
		}
	}
	return c.cfg.Audit.Entries(ctx, q)
}

// Stats counts what the user's agent holds.
func (c *Cognition) Stats(ctx context.Context, userID, agentID string) (memory.Stats, error) {
	if memory.ValidateAgentID(agentID) != nil {
		return memory.Stats{}, domain.NotFound("agent")
	}
	st, found, err := c.cfg.Stats.AgentStats(ctx, userID, agentID, c.cfg.Memories.now())
	if err != nil {
		return memory.Stats{}, err
	}
	if !found {
		return memory.Stats{}, domain.NotFound("agent")
	}
	st.Suggestions = make(map[string]int, len(SuggestionStatuses))
	for _, s := range SuggestionStatuses {
		st.Suggestions[s] = 0
	}
	if c.cfg.Suggestions != nil {
		counts, err := c.cfg.Suggestions.SuggestionCounts(ctx, userID, agentID)
		if err != nil {
			return memory.Stats{}, err
		}
		for s, n := range counts {
			st.Suggestions[s] = n
		}
	}
	return st, nil
}
