package memory

import (
	"context"

	"github.com/engram-memory/engram/domain"
)

// ProvenanceReadModel is the provenance read model's store: one edge per
// derived_from reference (projections/provenance.go feeds it).
type ProvenanceReadModel = domain.ReadModelStore[ProvenanceTx]

// ProvenanceTx changes the provenance read model within one batch.
type ProvenanceTx interface {
	// AddEdge records that the agent's memory child was derived from
	// parent; an edge held already changes nothing.
	AddEdge(ctx context.Context, ref AgentRef, child, parent Ref) error
	// DeleteEdgesOf removes the agent's edges with the memory at either end.
	DeleteEdgesOf(ctx context.Context, ref AgentRef, memoryID string) error
	// DeleteAgentEdges removes every edge of the agent.
	DeleteAgentEdges(ctx context.Context, ref AgentRef) error
}
