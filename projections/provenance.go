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
	return &readModel[memory.ProvenanceTx]{name: ProvenanceProjectionName, store: store, apply: applyProvenanceEvent, events: Events()}
}

func applyProvenanceEvent(ctx context.Context, tx memory.ProvenanceTx, e domain.Event) error {
	payload, err := e.Decoded()
	if err != nil {
		return err
	}
	switch p := payload.(type) {
	case *memory.MemoryCreated:
		refs, err := memory.ParseRefs("derived_from", p.DerivedFrom)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if err := tx.AddEdge(ctx, p.AgentRef, memory.Ref{Type: p.Type, ID: p.MemoryID}, r); err != nil {
				return err
			}
		}
	case *memory.MemoryPurged:
		return tx.DeleteEdgesOf(ctx, p.AgentRef, p.MemoryID)
	case *memory.AgentDeleted:
		return tx.DeleteAgentEdges(ctx, p.AgentRef)
	}
	return nil
}
