package postgres

import (
	"context"
	"fmt"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Provenance is the provenance read model (memory.ProvenanceReadModel) in
// PostgreSQL: one edge per derived_from reference (child derived from
// parent), indexed by child and by parent, so a tree in either direction
// costs one indexed query per level.
type Provenance struct {
	tableModel
}

var _ memory.ProvenanceReadModel = (*Provenance)(nil)

// NewProvenance returns the provenance read model stored in db.
func NewProvenance(db *DB) *Provenance {
	return &Provenance{tableModel{db: db, name: "provenance", tables: []string{"provenance_edges"}}}
}

// Apply implements memory.ProvenanceReadModel.
func (p *Provenance) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, memory.ProvenanceTx, domain.Event) error) error {
	return applyBatch(ctx, p.db, p.name, events, func(b batchTx) memory.ProvenanceTx { return provenanceTx{b} }, apply)
}

// provenanceTx is memory.ProvenanceTx over one batch's transaction.
type provenanceTx struct{ batchTx }

func (t provenanceTx) AddEdge(ctx context.Context, ref memory.AgentRef, child, parent memory.Ref) error {
	return t.run(ctx, `INSERT INTO provenance_edges (user_id, agent_id, child_id, child_type, parent_id, parent_type)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, ref.UserID, ref.AgentID, child.ID, string(child.Type), parent.ID, string(parent.Type))
}

func (t provenanceTx) DeleteEdgesOf(ctx context.Context, ref memory.AgentRef, memoryID string) error {
	return t.run(ctx, `DELETE FROM provenance_edges WHERE user_id = $1 AND agent_id = $2 AND (child_id = $3 OR parent_id = $3)`,
		ref.UserID, ref.AgentID, memoryID)
}

func (t provenanceTx) DeleteAgentEdges(ctx context.Context, ref memory.AgentRef) error {
	return t.run(ctx, `DELETE FROM provenance_edges WHERE user_id = $1 AND agent_id = $2`, ref.UserID, ref.AgentID)
}

// Sources returns, for each of ids (memories of the user's agent), the
// memories it was derived from, in id order.
func (p *Provenance) Sources(ctx context.Context, userID, agentID string, ids []string) (map[string][]memory.Ref, error) {
	return p.neighbours(ctx, `SELECT child_id, parent_id, parent_type FROM provenance_edges
		WHERE child_id = ANY($3) AND user_id = $1 AND agent_id = $2 ORDER BY child_id, parent_id`, userID, agentID, ids)
}

// Derived returns, for each of ids, the memories derived from it, in id
// order.
func (p *Provenance) Derived(ctx context.Context, userID, agentID string, ids []string) (map[string][]memory.Ref, error) {
	return p.neighbours(ctx, `SELECT parent_id, child_id, child_type FROM provenance_edges
		WHERE parent_id = ANY($3) AND user_id = $1 AND agent_id = $2 ORDER BY parent_id, child_id`, userID, agentID, ids)
}

// neighbours runs one level's query; the ids go as one array parameter,
// so a level of any width is one statement.
func (p *Provenance) neighbours(ctx context.Context, query, userID, agentID string, ids []string) (map[string][]memory.Ref, error) {
	out := make(map[string][]memory.Ref, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := p.db.Pool.Query(ctx, query, userID, agentID, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: provenance: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var from, id, typ string
		if err := rows.Scan(&from, &id, &typ); err != nil {
			return nil, fmt.Errorf("postgres: provenance: %w", err)
		}
		out[from] = append(out[from], memory.Ref{Type: memory.Type(typ), ID: id})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: provenance: %w", err)
	}
	return out, nil
}
