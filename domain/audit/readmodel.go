package audit

import (
	"context"

	"github.com/engram-memory/engram/domain"
)

// ReadModel is the audit read model's store (projections/audit.go feeds
// it).
type ReadModel = domain.ReadModelStore[ReadModelTx]

// ReadModelTx changes the audit read model within one batch.
type ReadModelTx interface {
	// AddEntry records the user's entry of the event at position; an
	// entry held already changes nothing.
	AddEntry(ctx context.Context, position uint64, userID string, e Entry) error
	// RememberMemoryType keeps a created memory's type, which the entries
	// of its later changes name; MemoryType returns it (found is false
	// for a memory never created, or of a deleted agent).
	RememberMemoryType(ctx context.Context, memoryID, memoryType string) error
	MemoryType(ctx context.Context, memoryID string) (memoryType string, found bool, err error)
	// DeleteAgent removes the agent's entries and the types of its
	// memories.
	DeleteAgent(ctx context.Context, userID, agentID string) error
}
