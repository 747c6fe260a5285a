// Package search answers search queries over an agent's memories by
// combining the keyword index and the vector index (both projections of the
// log), fusing their candidates, and hydrating the final page from the
// memories read model.
//
// Score scale (docs/decisions.md#search: [0, 1], higher is better, in every mode):
//
//   - vector: max(0, cosine similarity) of the query and memory embeddings.
//   - keyword: the keyword index's score, in [0, 1] (domain.IndexHit): for
//     the embedded index x / (x + K) where x is the BM25 relevance and K
//     textindex.DefaultSaturation, monotone in BM25 and independent of the
//     other hits of the query, so min_score means the same from query to
//     query.
//   - hybrid: see Fusion.
//
// Results are ordered by score, then by creation time (newer first), then
// by id, so equal inputs give identical lists.
package search

import (
	"context"
	"time"

	"github.com/engram-memory/engram/domain"
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

// Response.Degraded values: a hybrid search used one side alone because
// the other could not answer.
const (
	// DegradedVectorUnavailable: the query could not be embedded (provider
	// down) or the vector index is down; the keyword index answered alone.
	DegradedVectorUnavailable = "vector_unavailable"
	// DegradedKeywordUnavailable: the keyword index is down; the vector
	// index answered alone.
	DegradedKeywordUnavailable = "keyword_unavailable"
	// DegradedVectorRebuilding and DegradedKeywordRebuilding: that side's
	// index is being rebuilt live (partial until the rebuild ends); the
	// other side answered alone.
	DegradedVectorRebuilding  = "vector_rebuilding"
	DegradedKeywordRebuilding = "keyword_rebuilding"
)

// The sides of a search, as Options.Rebuilding and the error codes
// (<side>_index_unavailable, <side>_index_rebuilding) name them.
const (
	SideKeyword = "keyword"
	SideVector  = "vector"
)

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
	// IncludeWeak keeps weak and dormant memories (strength below 0.5
	// now, memory.FadingStrength) among the results; without it they are
	// left out, as GET /memories leaves them out.
	IncludeWeak bool
	// IncludeForgotten lets forgotten memories match too (strength 0,
	// Result.Memory.Vitality.Forgotten set), whatever IncludeWeak says.
	IncludeForgotten bool
}

// Result is one hit with what a search shows of its memory.
type Result struct {
	Memory memory.Excerpt
	Score  float64
	// Strength is the memory's strength at the time of the search.
	Strength float64
	Explain  *Explain // set when Request.Explain
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
	// Degraded is empty or names the side that could not answer a hybrid
	// search and why (DegradedVectorUnavailable, DegradedKeywordUnavailable,
	// DegradedVectorRebuilding, DegradedKeywordRebuilding).
	Degraded string
}

// Hit is one candidate from an index, with its score in [0, 1].
type Hit struct {
	ID        string
	Score     float64
	CreatedAt time.Time
}

// AgentSpaces tells which embedding space an agent's vectors are searched
// in (the vector projection).
type AgentSpaces interface {
	// AgentSpace reports the agent's active space; ok is false when the
	// user has no such agent. It is answered from memory, so it is also
	// the service's agent existence check.
	AgentSpace(userID, agentID string) (space domain.VectorSpace, ok bool)
}

// Embedder embeds a query with the model the agent's vectors use.
type Embedder interface {
	EmbedQuery(ctx context.Context, model string, dimensions int, text string) ([]float32, error)
}

// MemoryReader is the memories read model.
type MemoryReader interface {
	// ExcerptsByID returns the agent's memories among ids, forgotten ones
	// only with includeForgotten; other ids are absent from the map.
	ExcerptsByID(ctx context.Context, userID, agentID string, ids []string, includeForgotten bool) (map[string]memory.Excerpt, error)
}

// indexFilter is f as the index ports take it.
func (f Filter) indexFilter(includeForgotten bool) domain.IndexFilter {
	out := domain.IndexFilter{Tags: f.Tags, CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore, IncludeForgotten: includeForgotten}
	for _, t := range f.Types {
		out.Types = append(out.Types, string(t))
	}
	return out
}

func hitsOf(in []domain.IndexHit) []Hit {
	out := make([]Hit, len(in))
	for i, h := range in {
		out[i] = Hit{ID: h.MemoryID, Score: h.Score, CreatedAt: h.CreatedAt}
	}
	return out
}
