package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// ProvenanceProjection names the provenance read model.
const ProvenanceProjection = "provenance"

// Provenance is the provenance read model: one edge per derived_from
// reference (child derived from parent), indexed by child and by parent,
// so a tree in either direction costs one indexed query per level. Edges
// of a purged memory, at either end, and of a deleted agent go away.
type Provenance struct {
	tableModel
}

// NewProvenance returns the provenance read model stored in db.
func NewProvenance(db *DB) *Provenance {
	return &Provenance{tableModel{db: db, name: ProvenanceProjection,
		tables: []exportTable{{name: "provenance_edges", orderBy: "child_id, parent_id"}}}}
}

// Apply implements projections.Projection.
func (p *Provenance) Apply(ctx context.Context, events []domain.Event) error {
	var b *batchTx
	return p.db.ApplyEvents(ctx, ProvenanceProjection, events, func(tx *sql.Tx, e domain.Event) error {
		if b == nil || b.tx != tx {
			b = newBatchTx(ctx, tx)
		}
		exec := func(query string, args ...any) error {
			if _, err := b.exec(query, args...); err != nil {
				return fmt.Errorf("sqlite: provenance: %w", err)
			}
			return nil
		}
		switch e.Type {
		case memory.MemoryCreated{}.EventType():
			var c memory.MemoryCreated
			if err := e.Decode(&c); err != nil {
				return err
			}
			refs, err := memory.ParseRefs("derived_from", c.DerivedFrom)
			if err != nil {
				return err
			}
			for _, r := range refs {
				if err := exec(`INSERT INTO provenance_edges (user_id, agent_id, child_id, child_type, parent_id, parent_type)
					VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, c.UserID, c.AgentID, c.MemoryID, string(c.Type), r.ID, string(r.Type)); err != nil {
					return err
				}
			}
		case memory.MemoryPurged{}.EventType():
			var d memory.MemoryPurged
			if err := e.Decode(&d); err != nil {
				return err
			}
			return exec(`DELETE FROM provenance_edges WHERE user_id = ? AND agent_id = ? AND (child_id = ? OR parent_id = ?)`,
				d.UserID, d.AgentID, d.MemoryID, d.MemoryID)
		case memory.AgentDeleted{}.EventType():
			var d memory.AgentDeleted
			if err := e.Decode(&d); err != nil {
				return err
			}
			return exec(`DELETE FROM provenance_edges WHERE user_id = ? AND agent_id = ?`, d.UserID, d.AgentID)
		}
		return nil
	}, nil)
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
