package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Search modes.
const (
	ModeHybrid  = "hybrid"
	ModeVector  = "vector"
	ModeKeyword = "keyword"
)

// SearchRequest is the body of POST /search. Zero values are omitted, so
// the server's defaults apply: limit 10, all types, min_score 0, hybrid.
type SearchRequest struct {
	AgentID       string     `json:"agent_id"`
	Query         string     `json:"query"`
	Limit         int        `json:"limit,omitempty"`
	Types         []string   `json:"types,omitempty"` // plural names
	MinScore      float64    `json:"min_score,omitempty"`
	Mode          string     `json:"mode,omitempty"`
	CreatedAfter  *time.Time `json:"created_after,omitempty"`
	CreatedBefore *time.Time `json:"created_before,omitempty"`
	Tags          []string   `json:"tags,omitempty"`
	Explain       bool       `json:"explain,omitempty"`
	// IncludeWeak and IncludeForgotten let weak or dormant (strength
	// below 0.5) and forgotten memories through; both are left out by
	// default.
	IncludeWeak      bool `json:"include_weak,omitempty"`
	IncludeForgotten bool `json:"include_forgotten,omitempty"`
}

// SearchResult is one hit. Content's fields depend on Type (singular).
type SearchResult struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Score     float64         `json:"score"` // in [0, 1], higher is better
	Content   json.RawMessage `json:"content"`
	CreatedAt time.Time       `json:"created_at"`
	// Strength is the memory's strength when searched (0 when forgotten).
	Strength  float64 `json:"strength"`
	Forgotten bool    `json:"forgotten"`
	// Explain is the score breakdown, present with Explain: true.
	Explain *SearchExplain `json:"explain,omitempty"`
}

// SearchExplain says how a hit's score was made. A side that did not find
// the memory has nil score and rank.
type SearchExplain struct {
	VectorScore  *float64 `json:"vector_score"`
	KeywordScore *float64 `json:"keyword_score"`
	FusedScore   float64  `json:"fused_score"`
	VectorRank   *int     `json:"vector_rank"`
	KeywordRank  *int     `json:"keyword_rank"`
}

// SearchResponse is the data of POST /search.
type SearchResponse struct {
	Results []SearchResult `json:"results"`
	Total   int            `json:"total"`
	// QueryTimeMS is the server-side time; a float so that a server that
	// reports fractions keeps them.
	QueryTimeMS float64 `json:"query_time_ms"`
	// QueryTimeUS is the same time in whole microseconds, from servers
	// that report it (nil otherwise).
	QueryTimeUS *int64 `json:"query_time_us,omitempty"`
	// Degraded is "vector_unavailable" when a hybrid search could only use
	// the keyword index; empty otherwise.
	Degraded string `json:"degraded,omitempty"`
}

// Search searches one agent's memories.
func (c *Client) Search(ctx context.Context, req SearchRequest) (*SearchResponse, error) {
	var out SearchResponse
	err := c.call(ctx, http.MethodPost, "/search", nil, req, &out, bearer)
	return ret(&out, err)
}
