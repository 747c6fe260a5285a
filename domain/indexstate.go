package domain

import (
	"context"
	"encoding/json"
	"math"
	"time"
)

// The index projections keep, next to their checkpoint, the little state
// they need to turn events into index writes (a patch names changed fields
// only, so the keyword projection must know the memory's stored content;
// the vector projection must know which text a memory has now). These
// ports are that state; the embedded server keeps it in SQLite, where it
// is also what the in-process indexes are loaded from at start.
//
// Apply runs apply for each event after the checkpoint inside one
// transaction, then beforeCommit (the projection's index writes), then
// commits the state and the checkpoint together. An index write that
// fails rolls everything back, so the checkpoint never passes a write the
// index did not take; a commit that fails after the index writes leaves
// them applied, which the idempotent index writes make harmless on
// redelivery.

// KeywordSource is what the keyword projection keeps of an indexed memory.
type KeywordSource struct {
	MemoryID        string
	UserID, AgentID string
	Type            string
	Tags            []string
	CreatedAt       time.Time
	// Content is the memory's stored content, which patches change.
	Content json.RawMessage
	// Text and Meta are what the index holds (memory.IndexedText and
	// memory.IndexedMetadata of Content and Tags).
	Text, Meta string
	// Forgotten memories are kept, flagged (KeywordDocument.Forgotten).
	Forgotten bool
}

// KeywordStateTx changes the keyword projection's state in one transaction.
type KeywordStateTx interface {
	AgentExists(ctx context.Context, scope IndexScope) (bool, error)
	PutAgent(ctx context.Context, scope IndexScope) error
	// DeleteAgent removes the agent and its sources.
	DeleteAgent(ctx context.Context, scope IndexScope) error
	// Source returns the agent's memory, if kept.
	Source(ctx context.Context, scope IndexScope, memoryID string) (KeywordSource, bool, error)
	// InsertSource keeps a new memory; inserted is false (and nothing
	// changes) when the memory id is kept already.
	InsertSource(ctx context.Context, s KeywordSource) (inserted bool, err error)
	UpdateSource(ctx context.Context, s KeywordSource) error
	// DeleteSource removes the agent's memory (purged); deleted is false
	// when it was not kept.
	DeleteSource(ctx context.Context, scope IndexScope, memoryID string) (deleted bool, err error)
}

// KeywordState is the keyword projection's durable state and checkpoint.
type KeywordState interface {
	KeywordCheckpoint(ctx context.Context) (uint64, error)
	ApplyKeyword(ctx context.Context, events []Event, apply func(context.Context, KeywordStateTx, Event) error, beforeCommit func(context.Context) error) error
	ResetKeyword(ctx context.Context) error
	// LoadKeyword calls fn for every kept memory, in insertion order.
	LoadKeyword(ctx context.Context, fn func(KeywordSource) error) error
	// LoadKeywordOf calls fn for each kept memory among memoryIDs, in
	// insertion order: what a start from an index snapshot reads of the
	// memories changed since the snapshot's checkpoint.
	LoadKeywordOf(ctx context.Context, memoryIDs []string, fn func(KeywordSource) error) error
}

// VectorAgent is an agent's active space.
type VectorAgent struct {
	UserID, AgentID string
	Space           VectorSpace
}

// Scope is the agent's index scope.
func (a VectorAgent) Scope() IndexScope { return IndexScope{UserID: a.UserID, AgentID: a.AgentID} }

// VectorMemory is what the vector projection keeps per memory: the
// metadata searches filter on and the hash of the current indexed text.
type VectorMemory struct {
	MemoryID        string
	UserID, AgentID string
	Type            string
	Tags            []string
	CreatedAt       time.Time
	TextHash        string
	Forgotten       bool
}

// Point is the index point of m's vector v in space.
func (m VectorMemory) Point(space VectorSpace, v []float32) VectorPoint {
	return VectorPoint{
		MemoryID: m.MemoryID, UserID: m.UserID, AgentID: m.AgentID, Space: space, TextHash: m.TextHash,
		Type: m.Type, Tags: m.Tags, CreatedAt: m.CreatedAt, Forgotten: m.Forgotten, Vector: v,
	}
}

// StoredVector is one embedding of a memory's text in a space.
type StoredVector struct {
	Space  VectorSpace
	Vector []float32
}

// VectorStateTx changes the vector projection's state in one transaction.
type VectorStateTx interface {
	Agent(ctx context.Context, userID, agentID string) (VectorAgent, bool, error)
	PutAgent(ctx context.Context, a VectorAgent) error
	// DeleteAgent removes the agent, its memories and their vectors.
	DeleteAgent(ctx context.Context, userID, agentID string) error
	Memory(ctx context.Context, memoryID string) (VectorMemory, bool, error)
	// InsertMemory stores m unless a memory with its id is stored already
	// (a repeated creation keeps the first, as the read models do) and
	// reports whether it stored m: one statement where a lookup and a put
	// were two, for the one write every created memory makes.
	InsertMemory(ctx context.Context, m VectorMemory) (inserted bool, err error)
	PutMemory(ctx context.Context, m VectorMemory) error
	// DeleteMemory removes the memory and its vectors.
	DeleteMemory(ctx context.Context, memoryID string) error
	PutVector(ctx context.Context, memoryID string, space VectorSpace, textHash string, v []float32) error
	// CurrentVectors returns the memory's vectors of its current text
	// hash, in every space.
	CurrentVectors(ctx context.Context, memoryID string) ([]StoredVector, error)
	// DeleteSpace removes the agent's vectors in space.
	DeleteSpace(ctx context.Context, userID, agentID string, space VectorSpace) error
}

// LoadedVector is one searchable vector as read at start. Vector is only
// valid during the callback that receives it.
type LoadedVector struct {
	Memory VectorMemory
	Space  VectorSpace
	Vector []float32
}

// VectorState is the vector projection's durable state and checkpoint.
type VectorState interface {
	VectorsCheckpoint(ctx context.Context) (uint64, error)
	ApplyVectors(ctx context.Context, events []Event, apply func(context.Context, VectorStateTx, Event) error, beforeCommit func(context.Context) error) error
	ResetVectors(ctx context.Context) error
	VectorAgents(ctx context.Context) ([]VectorAgent, error)
	// LoadVectors calls fn for every vector whose text hash is its
	// memory's current one (forgotten memories included, flagged), in
	// insertion order.
	LoadVectors(ctx context.Context, fn func(LoadedVector) error) error
	// LoadVectorsOf is LoadVectors restricted to the memories among
	// memoryIDs: what a start from an index snapshot reads of the
	// memories changed since the snapshot's checkpoint.
	LoadVectorsOf(ctx context.Context, memoryIDs []string, fn func(LoadedVector) error) error
}

// ClampedUnixNano is how the index state and the keyword indexes store a
// creation time: int64 nanoseconds, with times outside the years
// 1678-2262 (past int64 nanoseconds) clamped to the ends of the range.
func ClampedUnixNano(t time.Time) int64 {
	const edgeSec = math.MaxInt64/1_000_000_000 - 1
	switch sec := t.Unix(); {
	case sec < -edgeSec:
		return math.MinInt64 + 1
	case sec > edgeSec:
		return math.MaxInt64
	}
	return t.UnixNano()
}
