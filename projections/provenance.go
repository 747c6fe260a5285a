package projections

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// ProvenanceProjectionName names the provenance read model.
const ProvenanceProjectionName = "provenance"

// NewProvenance returns the projection of derived_from references into
// the provenance read model: an edge per reference of a new memory; the
// edges of a purged memory, at either end, and of a deleted agent go.
func NewProvenance(store memory.ProvenanceReadModel) Projection {
	return &readModel[memory.ProvenanceTx]{name: ProvenanceProjectionName, store: store, apply: applyProvenanceEvent}
}

func applyProvenanceEvent(ctx context.Context, tx memory.ProvenanceTx, e domain.Event) error {
	switch e.Type {
	case memory.MemoryCreated{}.EventType():
		var p memory.MemoryCreated
		if err := e.Decode(&p); err != nil {
			return err
		}
		refs, err := memory.ParseRefs("derived_from", p.DerivedFrom)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if err := tx.AddEdge(ctx, p.AgentRef, memory.Ref{Type: p.Type, ID: p.MemoryID}, r); err != nil {
				return err
			}
		}
	case memory.MemoryPurged{}.EventType():
		var p memory.MemoryPurged
		if err := e.Decode(&p); err != nil {
			return err
		}
		return tx.DeleteEdgesOf(ctx, p.AgentRef, p.MemoryID)
	case memory.AgentDeleted{}.EventType():
		var p memory.AgentDeleted
		if err := e.Decode(&p); err != nil {
			return err
		}
		return tx.DeleteAgentEdges(ctx, p.AgentRef)
	}
	return nil
}
