package memory

import (
	"context"
	"encoding/json"
	"time"

	"github.com/engram-memory/engram/domain"
)

// ReadModel is the memories read model's store: agents with their model
// binding, settings and quota counters, their memories with strength
// basis, which memory texts have vectors in which model, and the version
// of every agent stream applied (projections/memories.go feeds it).
type ReadModel = domain.ReadModelStore[ReadModelTx]

// StoredMemory is what the projection reads back of a memory to apply a
// change to it.
type StoredMemory struct {
	Type    Type
	Content json.RawMessage
	// Vitality is the stored strength basis (Type and Forgotten included).
	Vitality Vitality
}

// NewMemory is a memory as MemoryCreated records it, with the strength
// basis it starts from.
type NewMemory struct {
	MemoryCreated
	Vitality Vitality
}

// ReadModelTx changes the memories read model within one batch. The
// projection decides (which events apply, what a patch or a strength
// event leaves); the store only records. "Pending" is a memory waiting
// for a vector: searchable, not forgotten, and without a vector of its
// current text in its agent's model; the operations that say so keep it
// current, RefreshPending recomputes it.
type ReadModelTx interface {
	AgentExists(ctx context.Context, ref AgentRef) (bool, error)
	// AgentModel is the agent's active model; found is false for an agent
	// the read model does not hold.
	AgentModel(ctx context.Context, ref AgentRef) (model string, dimensions int, found bool, err error)
	// AddAgent records the agent bound to its model; an agent already
	// held keeps its binding.
	AddAgent(ctx context.Context, a AgentCreated) error
	// DeleteAgent removes the agent, its settings, memories and their
	// vector records.
	DeleteAgent(ctx context.Context, ref AgentRef) error
	// SetAgentModel binds the agent to another model; DropEmbeddings
	// forgets which of its memories have vectors in a model.
	SetAgentModel(ctx context.Context, ref AgentRef, model string, dimensions int) error
	DropEmbeddings(ctx context.Context, ref AgentRef, model string, dimensions int) error
	// AddToAgent changes the agent's memory count and content size (the
	// quotas' counters) by the given amounts.
	AddToAgent(ctx context.Context, ref AgentRef, memories int, contentBytes int64) error
	// PutSettings replaces the agent's settings (JSON) and the lazy_decay
	// flag strength queries use; LazyDecay reads the flag, true for an
	// agent without settings.
	PutSettings(ctx context.Context, ref AgentRef, settings json.RawMessage, lazyDecay bool, at time.Time) error
	LazyDecay(ctx context.Context, ref AgentRef) (bool, error)

	// Memory returns the agent's memory; found is false for a memory the
	// read model does not hold (purged, or its agent deleted).
	Memory(ctx context.Context, ref AgentRef, memoryID string) (m StoredMemory, found bool, err error)
	// InsertMemory records a new memory, pending when searchable, and
	// counts it and its content in its agent's totals (as AddToAgent);
	// nothing changes when the id is held already. It answers nothing, so
	// a store may send it together with the batch's other writes.
	InsertMemory(ctx context.Context, m NewMemory) error
	// SetContent replaces the memory's content, text hash and update time
	// and, unless tags is nil, its tags, and counts a new version.
	SetContent(ctx context.Context, ref AgentRef, memoryID string, content json.RawMessage, tags *[]string, textHash string, at time.Time) error
	// SetVitality stores the memory's strength basis (its Type and
	// Forgotten are not written).
	SetVitality(ctx context.Context, ref AgentRef, memoryID string, v Vitality) error
	// CountVersion counts a new version of the memory.
	CountVersion(ctx context.Context, ref AgentRef, memoryID string) error
	// Forget marks the memory forgotten at at (and not pending); a memory
	// forgotten already keeps its first time and version.
	Forget(ctx context.Context, ref AgentRef, memoryID string, at time.Time) error
	// MarkConsumed records that a processing pass consumed the memory
	// (View.Processed follows); a memory the read model does not hold is
	// left alone.
	MarkConsumed(ctx context.Context, ref AgentRef, memoryID string) error
	// Recover clears the memory's forgotten mark.
	Recover(ctx context.Context, ref AgentRef, memoryID string) error
	// CountVerification adds one to the memory's verification count.
	CountVerification(ctx context.Context, ref AgentRef, memoryID string, at time.Time) error
	// DeleteMemory removes the memory and its vector records.
	DeleteMemory(ctx context.Context, ref AgentRef, memoryID string) error
	// RecordEmbedding records that the memory's text textHash has a
	// vector in model at dimensions, when that is the memory's current
	// text (a vector of a replaced text is ignored); the memory is then no
	// longer pending if that is its agent's model.
	RecordEmbedding(ctx context.Context, ref AgentRef, memoryID, model string, dimensions int, textHash string) error
	// RefreshPending recomputes the pending state of one memory, or of
	// all the agent's memories when memoryID is empty.
	RefreshPending(ctx context.Context, ref AgentRef, memoryID string) error
	// RecordStreamVersion records that the read model applied stream up
	// to version (the memory commands append at it).
	RecordStreamVersion(ctx context.Context, stream string, version uint64) error
}
