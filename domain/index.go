package domain

import (
	"context"
	"errors"
	"time"
)

// The search indexes are projections of the log, behind two ports: the
// keyword index (embedded BM25 or Meilisearch) and the vector index
// (embedded HNSW or Qdrant). The projections in projections/ map events to
// the write operations below; the search service uses the queries. Both
// ports are shaped so a remote index can implement them:
//
//   - every operation returns an error, and a write that returned nil is
//     visible to the next query (an asynchronous backend waits for its
//     task before returning), so a projection's checkpoint advances only
//     after its index writes succeeded;
//   - every write is idempotent: documents and points are keyed by memory
//     id (and, for vectors, the space), carry the hash of the text they
//     were computed from, and deleting what is absent is no error, so a
//     batch delivered twice leaves the index as delivering it once;
//   - every query carries the user and agent it is scoped to; an index
//     never returns another agent's memories whatever the filter says;
//   - a forgotten memory is kept, flagged, and matches only a query whose
//     filter includes forgotten memories.

// Errors an index returns, wrapped with details (errors.Is finds them).
var (
	// ErrIndexUnavailable: the backend could not be reached or is not
	// ready. A projection retries the batch; a search that needs the index
	// fails with KindIndexUnavailable (hybrid falls back to the other side).
	ErrIndexUnavailable = errors.New("index unavailable")
	// ErrIndexRejected: the backend refused a write that can never succeed
	// as given (a zero or non-finite vector, a vector of the wrong size for
	// its space). Retrying is pointless, so a projection leaves that one
	// item out and logs it rather than stopping.
	ErrIndexRejected = errors.New("index rejected the write")
)

// IndexScope is the agent a query or a deletion is confined to. Searches
// take it from the authenticated request, never from its body.
type IndexScope struct {
	UserID, AgentID string
}

// IndexFilter restricts a search; every index applies it inside its own
// query, so a filtered page is never short. The zero IndexFilter matches
// everything.
type IndexFilter struct {
	// Types: the memory's type must be one of these (empty: all).
	Types []string
	// Tags: the memory must carry every one of these (all-of).
	Tags []string
	// CreatedAfter is inclusive (created_at >= it), CreatedBefore exclusive
	// (created_at < it); the zero time leaves that side open.
	CreatedAfter, CreatedBefore time.Time
	// IncludeForgotten lets forgotten memories match too (a search that
	// asks for them); without it they never match.
	IncludeForgotten bool
}

// IndexHit is one search result. Score is in [0, 1], higher is better:
// max(0, cosine similarity) for vectors, the backend's relevance mapped
// monotonically onto [0, 1] for keywords. Hits come best first; equal
// scores are ordered newer CreatedAt first, then by MemoryID.
type IndexHit struct {
	MemoryID  string
	Score     float64
	CreatedAt time.Time
}

// KeywordDocument is one searchable memory as the keyword index holds it.
type KeywordDocument struct {
	MemoryID        string
	UserID, AgentID string
	Type            string
	Tags            []string
	CreatedAt       time.Time
	// Text is the memory's indexed text (memory.IndexedText).
	Text string
	// Meta is short searchable metadata (tags, a note's speaker, ...),
	// searched as a second, separately weighted field.
	Meta string
	// TextHash identifies Text; redelivering a document with the same
	// hash changes nothing.
	TextHash string
	// Forgotten documents are kept (see SetForgotten) and match only
	// queries with IndexFilter.IncludeForgotten.
	Forgotten bool
}

// KeywordQuery asks for an agent's best keyword matches.
type KeywordQuery struct {
	Scope IndexScope
	// Text is any text: it is never parsed as query syntax.
	Text   string
	Filter IndexFilter
	Limit  int
	// MinScore drops hits scoring below it (0 keeps all).
	MinScore float64
}

// KeywordIndex is the keyword search index port.
type KeywordIndex interface {
	// UpsertDocuments adds docs, replacing documents with the same MemoryID.
	UpsertDocuments(ctx context.Context, docs ...KeywordDocument) error
	// SetForgotten marks the memory forgotten (it stops matching queries
	// that leave forgotten memories out) or not. An absent memory is no
	// error.
	SetForgotten(ctx context.Context, scope IndexScope, memoryID string, forgotten bool) error
	// DeleteMemory removes the memory; an absent memory is no error.
	DeleteMemory(ctx context.Context, scope IndexScope, memoryID string) error
	// DeleteAgent removes every document of the agent.
	DeleteAgent(ctx context.Context, scope IndexScope) error
	// DropAll removes every document of every user (before a rebuild).
	DropAll(ctx context.Context) error
	// SearchKeyword returns up to q.Limit hits, best first.
	SearchKeyword(ctx context.Context, q KeywordQuery) ([]IndexHit, error)
	// Ready returns nil when the index answers, or an error wrapping
	// ErrIndexUnavailable.
	Ready(ctx context.Context) error
}

// VectorSpace is an embedding model at a size: vectors are comparable only
// within one space (a remote index keeps a collection per space).
type VectorSpace struct {
	Model      string
	Dimensions int
}

// VectorPoint is one memory's embedding in a space, with the metadata
// searches filter on.
type VectorPoint struct {
	MemoryID        string
	UserID, AgentID string
	Space           VectorSpace
	// TextHash identifies the text Vector was computed from.
	TextHash  string
	Type      string
	Tags      []string
	CreatedAt time.Time
	Forgotten bool
	Vector    []float32
}

// VectorQuery asks for the agent's memories nearest to Vector in Space.
type VectorQuery struct {
	Scope  IndexScope
	Space  VectorSpace
	Vector []float32
	Filter IndexFilter
	Limit  int
	// MinScore drops hits scoring below it (0 keeps all).
	MinScore float64
}

// VectorIndex is the vector search index port. A memory has at most one
// point per space; while a model switch re-embeds an agent, its memories
// have points in the old and the new space, and searches name the space.
type VectorIndex interface {
	// UpsertVectors adds points, replacing the point with the same
	// MemoryID and Space. A point the index can never accept fails with
	// ErrIndexRejected and, in a batch, leaves the others stored.
	UpsertVectors(ctx context.Context, points ...VectorPoint) error
	// SetForgotten marks the memory's points in every space forgotten
	// (they stop matching queries that leave forgotten memories out) or
	// not. An absent memory is no error.
	SetForgotten(ctx context.Context, scope IndexScope, memoryID string, forgotten bool) error
	// DeleteMemory removes the memory's points in every space.
	DeleteMemory(ctx context.Context, scope IndexScope, memoryID string) error
	// DeleteAgent removes the agent's points in every space.
	DeleteAgent(ctx context.Context, scope IndexScope) error
	// DeleteSpace removes the agent's points in space (the old model after
	// a switch).
	DeleteSpace(ctx context.Context, scope IndexScope, space VectorSpace) error
	// DropAll removes every point of every user (before a rebuild).
	DropAll(ctx context.Context) error
	// SearchVectors returns up to q.Limit hits, best first.
	SearchVectors(ctx context.Context, q VectorQuery) ([]IndexHit, error)
	// CountVectors is the number of the agent's searchable (not forgotten)
	// points in space.
	CountVectors(ctx context.Context, scope IndexScope, space VectorSpace) (int, error)
	// Ready returns nil when the index answers, or an error wrapping
	// ErrIndexUnavailable.
	Ready(ctx context.Context) error
}
