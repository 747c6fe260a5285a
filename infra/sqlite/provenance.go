package sqlite

import (
	"context"
	"fmt"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// provenanceCheckpoint keys the provenance read model's checkpoint.
const provenanceCheckpoint = "provenance"

// Provenance is the provenance read model (memory.ProvenanceReadModel):
// one edge per derived_from reference (child derived from parent),
// indexed by child and by parent, so a tree in either direction costs one
// indexed query per level.
type Provenance struct {
	tableModel
}

var _ memory.ProvenanceReadModel = (*Provenance)(nil)

// NewProvenance returns the provenance read model stored in db.
func NewProvenance(db *DB) *Provenance {
	return &Provenance{tableModel{db: db, name: provenanceCheckpoint, tables: provenanceTables()}}
}

// provenanceTables are the read model's tables with their primary keys.
func provenanceTables() []exportTable {
	return []exportTable{{name: "provenance_edges", orderBy: "child_id, parent_id"}}
}

// Apply implements memory.ProvenanceReadModel.
func (p *Provenance) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, memory.ProvenanceTx, domain.Event) error) error {
	return applyBatch(ctx, p.db, provenanceCheckpoint, events, func(b *batchTx) memory.ProvenanceTx { return provenanceTx{b} }, apply, nil)
}

// provenanceTx is memory.ProvenanceTx over one batch's transaction.
type provenanceTx struct{ *batchTx }

func (t provenanceTx) AddEdge(ctx context.Context, ref memory.AgentRef, child, parent memory.Ref) error {
	return t.run(`INSERT INTO provenance_edges (user_id, agent_id, child_id, child_type, parent_id, parent_type)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, ref.UserID, ref.AgentID, child.ID, string(child.Type), parent.ID, string(parent.Type))
}

func (t provenanceTx) DeleteEdgesOf(ctx context.Context, ref memory.AgentRef, memoryID string) error {
	return t.run(`DELETE FROM provenance_edges WHERE user_id = ? AND agent_id = ? AND (child_id = ? OR parent_id = ?)`,
		ref.UserID, ref.AgentID, memoryID, memoryID)
}

func (t provenanceTx) DeleteAgentEdges(ctx context.Context, ref memory.AgentRef) error {
	return t.run(`DELETE FROM provenance_edges WHERE user_id = ? AND agent_id = ?`, ref.UserID, ref.AgentID)
}

// Sources returns, for each of ids (memories of the user's agent), the
// memories it was derived from, in id order.
func (p *Provenance) Sources(ctx context.Context, userID, agentID string, ids []string) (map[string][]memory.Ref, error) {
	return p.neighbours(ctx, `SELECT child_id, parent_id, parent_type FROM provenance_edges
		WHERE +user_id = ? AND +agent_id = ? AND child_id IN (%s) ORDER BY child_id, parent_id`, userID, agentID, ids)
}

// Derived returns, for each of ids, the memories derived from it, in id
// order.
func (p *Provenance) Derived(ctx context.Context, userID, agentID string, ids []string) (map[string][]memory.Ref, error) {
	return p.neighbours(ctx, `SELECT parent_id, child_id, child_type FROM provenance_edges
		WHERE +user_id = ? AND +agent_id = ? AND parent_id IN (%s) ORDER BY parent_id, child_id`, userID, agentID, ids)
}

// neighbours runs one level's query. The unary + keeps SQLite from
// choosing the per-agent index (a scan of the whole agent's edges) over the
// child or parent key the ids name.
func (p *Provenance) neighbours(ctx context.Context, query, userID, agentID string, ids []string) (map[string][]memory.Ref, error) {
	out := make(map[string][]memory.Ref, len(ids))
	for start := 0; start < len(ids); start += memIDChunk {
		chunk := ids[start:min(start+memIDChunk, len(ids))]
		args := []any{userID, agentID}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := p.db.read.QueryContext(ctx, fmt.Sprintf(query, memPlaceholders(len(chunk))), args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: provenance: %w", err)
		}
		for rows.Next() {
			var from, id, typ string
			if err := rows.Scan(&from, &id, &typ); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: provenance: %w", err)
			}
			out[from] = append(out[from], memory.Ref{Type: memory.Type(typ), ID: id})
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("sqlite: provenance: %w", err)
		}
	}
	return out, nil
}
