package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/projections/search"
)

// Searcher runs searches over an agent's memories; *search.Service
// implements it.
type Searcher interface {
	Search(ctx context.Context, req search.Request) (search.Response, error)
}

// defaultSearchLimit is the default `limit` (docs/decisions.md#search).
const defaultSearchLimit = 10

func (s *Server) searchRoutes(r chi.Router) {
	if s.cfg.Search == nil {
		return
	}
	r.With(s.requireAuth).Post("/search", s.search)
}

// SearchBody is the body of POST /search (and search_memories over MCP). Pointers tell an absent
// field from a zero one, so `limit: 0` is rejected instead of defaulted.
// created_after is inclusive (created_at >= it) and created_before
// exclusive (created_at < it), so consecutive windows never overlap; types
// take plural or singular names; tags must all be present on a memory.
// Scores are in [0, 1] in every mode (see package search for the scale).
// Weak and dormant memories (strength below 0.5 now) are left out unless
// include_weak, forgotten ones unless include_forgotten, as GET /memories
// does.
type SearchBody struct {
	AgentID          string   `json:"agent_id"`
	Query            *string  `json:"query"`
	Limit            *int     `json:"limit"`
	Types            []string `json:"types"`
	MinScore         *float64 `json:"min_score"`
	Mode             string   `json:"mode"`
	CreatedAfter     *string  `json:"created_after"`
	CreatedBefore    *string  `json:"created_before"`
	Tags             []string `json:"tags"`
	Explain          bool     `json:"explain"`
	IncludeWeak      bool     `json:"include_weak"`
	IncludeForgotten bool     `json:"include_forgotten"`
}

// searchResultJSON is one entry of data.results: strength is the
// memory's strength now, forgotten is true only for a forgotten memory
// (which include_forgotten lets through).
type searchResultJSON struct {
	Type      memory.Type     `json:"type"`
	ID        string          `json:"id"`
	Score     float64         `json:"score"`
	Content   json.RawMessage `json:"content"`
	CreatedAt time.Time       `json:"created_at"`
	Strength  float64         `json:"strength"`
	Forgotten bool            `json:"forgotten"`
	Explain   *search.Explain `json:"explain,omitempty"`
}

// searchResponseJSON is data of POST /search. total is the number of
// results returned (after limit and min_score), not a count of every
// match; query_time_ms is the server's time for the request in whole
// milliseconds (rounded down), as docs/decisions.md#search has it, and query_time_us
// the same time in whole microseconds (an addition, for latency
// percentiles finer than a millisecond). degraded is present only when a
// hybrid search ran on one side alone, and says why: "vector_unavailable",
// "keyword_unavailable", "vector_rebuilding" or "keyword_rebuilding".
type searchResponseJSON struct {
	Results     []searchResultJSON `json:"results"`
	Total       int                `json:"total"`
	QueryTimeMS int64              `json:"query_time_ms"`
	QueryTimeUS int64              `json:"query_time_us"`
	Degraded    string             `json:"degraded,omitempty"`
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var body SearchBody
	if err := decodeJSON(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	req, err := body.request(actor(r.Context()).UserID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, end := memorySpan(r.Context(), opSearchMemory, "")
	resp, err := s.cfg.Search.Search(ctx, req)
	end(err, len(resp.Results))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := searchResponseJSON{Results: make([]searchResultJSON, len(resp.Results)), Total: len(resp.Results), Degraded: resp.Degraded}
	for i, res := range resp.Results {
		out.Results[i] = searchResultJSON{
			Type: res.Memory.Type, ID: res.Memory.ID, Score: res.Score, Content: res.Memory.Content,
			CreatedAt: res.Memory.CreatedAt.UTC(), Strength: res.Strength, Forgotten: res.Memory.Vitality.Forgotten,
			Explain: res.Explain,
		}
	}
	took := time.Since(start)
	out.QueryTimeMS, out.QueryTimeUS = took.Milliseconds(), took.Microseconds()
	writeData(w, http.StatusOK, out)
}

// SearchRequest is the user's search body b validated, with the defaults
// of docs/decisions.md#search: what POST /search hands the search service.
func SearchRequest(userID string, b SearchBody) (search.Request, error) { return b.request(userID) }

// request validates the body and fills the defaults of docs/decisions.md#search.
// Checks that need no parsing (query length, limit range, searchable types, the time
// window) are the service's, so every caller gets them.
func (b SearchBody) request(userID string) (search.Request, error) {
	if err := memory.ValidateAgentID(b.AgentID); err != nil {
		return search.Request{}, err
	}
	if b.Query == nil {
		return search.Request{}, domain.Invalid("query", "query is required")
	}
	req := search.Request{
		UserID: userID, AgentID: b.AgentID, Query: *b.Query, Mode: search.Mode(b.Mode),
		Limit: defaultSearchLimit, Explain: b.Explain, IncludeWeak: b.IncludeWeak, IncludeForgotten: b.IncludeForgotten,
	}
	if b.Limit != nil {
		req.Limit = *b.Limit
	}
	if b.MinScore != nil {
		req.MinScore = *b.MinScore
	}
	types, err := memory.ParseTypeFilter("types", b.Types)
	if err != nil {
		return search.Request{}, err
	}
	req.Filter.Types = types
	if b.Tags != nil {
		if req.Filter.Tags, err = memory.NormalizeTags("tags", b.Tags); err != nil {
			return search.Request{}, err
		}
	}
	if req.Filter.CreatedAfter, err = parseSearchTime("created_after", b.CreatedAfter); err != nil {
		return search.Request{}, err
	}
	if req.Filter.CreatedBefore, err = parseSearchTime("created_before", b.CreatedBefore); err != nil {
		return search.Request{}, err
	}
	return req, nil
}

// parseSearchTime reads an RFC 3339 timestamp (fractional seconds allowed);
// an absent field is the zero time, an open bound.
func parseSearchTime(field string, v *string) (time.Time, error) {
	if v == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *v)
	if err != nil {
		return time.Time{}, domain.Invalid(field, "%s must be an RFC 3339 timestamp such as 2024-05-01T12:00:00Z", field)
	}
	// A bound before 1970 is refused, not taken as none: Go's zero time
	// is what the filter takes as no bound, so created_before
	// 0001-01-01T00:00:00Z would find every memory instead of none.
	if err := domain.CheckClientTime(field, t); err != nil {
		return time.Time{}, err
	}
	return t, nil
}
