// Package search answers search queries over an agent's memories by
// combining the keyword index and the vector index (both projections of the
// log), fusing their candidates, and hydrating the final page from the
// memories read model.
//
// Score scale (decisions.md §6: [0, 1], higher is better, in every mode):
//
//   - vector: max(0, cosine similarity) of the query and memory embeddings.
//   - keyword: x / (x + K) where x is the BM25 relevance (≥ 0) and K is
//     Options.KeywordSaturation: monotone in BM25, independent of the other
//     hits of the query, so min_score means the same from query to query.
//   - hybrid: see Fusion.
//
// Results are ordered by score, then by creation time (newer first), then
// by id, so equal inputs give identical lists.
package search

import (
	"context"
	"time"

	"github.com/engram-memory/engram/domain/memory"
)

// Mode selects which indexes a search uses.
type Mode string

const (
	ModeHybrid  Mode = "hybrid"
	ModeVector  Mode = "vector"
	ModeKeyword Mode = "keyword"
)

// Limits of a request.
const (
	MaxLimit     = 100
	MaxQueryRune = 32000
)

// DegradedVectorUnavailable is Response.Degraded when a hybrid search could
// not embed its query (provider down) and used the keyword index alone.
const DegradedVectorUnavailable = "vector_unavailable"

// Filter restricts a search; every index applies it inside its own query.
// The zero Filter matches everything.
type Filter struct {
	// Types: the memory's type must be one of these (empty: all).
	Types []memory.Type
	// Tags: the memory must carry every one of these.
	Tags []string
	// CreatedAfter is inclusive (created_at >= it), CreatedBefore exclusive
	// (created_at < it); the zero time leaves that side open.
	CreatedAfter, CreatedBefore time.Time
}

// Request is one search.
type Request struct {
	UserID   string
	AgentID  string
	Query    string
	Mode     Mode
	Limit    int
	MinScore float64
	Filter   Filter
	Explain  bool
}

// Result is one hit with what a search shows of its memory.
type Result struct {
	Memory  memory.Excerpt
	Score   float64
	Explain *Explain // set when Request.Explain
}

// Explain shows how a result's score came about. A side that did not
// return the memory among its candidates has nil score and rank.
type Explain struct {
	VectorScore  *float64 `json:"vector_score"`
	KeywordScore *float64 `json:"keyword_score"`
	FusedScore   float64  `json:"fused_score"`
	VectorRank   *int     `json:"vector_rank"`
	KeywordRank  *int     `json:"keyword_rank"`
}

// Response is the outcome of a search.
type Response struct {
	Results []Result
	// Degraded is empty, or DegradedVectorUnavailable.
	Degraded string
}

// Hit is one candidate from an index: Score is the index's raw relevance
// (cosine similarity for vectors, BM25 ≥ 0 for keywords), higher is better.
type Hit struct {
	ID        string
	Score     float64
	CreatedAt time.Time
}

// KeywordQuery asks the keyword index for an agent's best matches.
type KeywordQuery struct {
	UserID, AgentID string
	Text            string
	Filter          Filter
	Limit           int
}

// KeywordIndex finds memories by the words of their indexed text.
type KeywordIndex interface {
	// SearchKeyword returns up to q.Limit of the agent's memories that match
	// q.Text and q.Filter, best first; any text is valid (it is never
	// parsed as query syntax). Forgotten memories never match.
	SearchKeyword(ctx context.Context, q KeywordQuery) ([]Hit, error)
}

// Space is where an agent's searchable vectors live and how its queries
// must be embedded.
type Space struct {
	Collection string
	Model      string
	Dimensions int
	Vectors    int // searchable vectors in the collection now
}

// VectorIndex finds memories by embedding similarity.
type VectorIndex interface {
	// VectorSpace reports the agent's active space (Vectors may be 0); ok
	// is false when the user has no such agent. It is answered from
	// memory, so it is also the service's agent existence check: the
	// memories read model's agent query counts the agent's memories.
	VectorSpace(userID, agentID string) (Space, bool)
	// SearchVectors returns up to k memories in space most similar to
	// query that match f, best first. Forgotten memories never match.
	SearchVectors(ctx context.Context, space Space, query []float32, k int, f Filter) ([]Hit, error)
}

// Embedder embeds a query with the model the agent's vectors use.
type Embedder interface {
	EmbedQuery(ctx context.Context, model string, dimensions int, text string) ([]float32, error)
}

// MemoryReader is the memories read model.
type MemoryReader interface {
	// ExcerptsByID returns the agent's not forgotten memories among ids;
	// other ids are absent from the map.
	ExcerptsByID(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.Excerpt, error)
}
