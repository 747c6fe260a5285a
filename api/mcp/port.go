// Package mcp is Engram's Model Context Protocol adapter: the tools,
// resources and prompt an agent reaches Engram through, over stdio
// (`engram mcp`) or streamable HTTP (`/mcp` on `engram serve`). It is an
// inbound adapter beside the REST API: every tool calls the Backend, whose
// implementations call the same commands and queries the REST handlers call
// (Services, in process) or the REST API itself (the cloud client), so MCP
// adds no behaviour the API lacks.
package mcp

import (
	"context"
	"encoding/json"
	"time"
)

// Backend is what the MCP tools, resources and prompt need from Engram, for
// one authenticated user: on the server the caller of the request (see
// WithCaller), on stdio the local stack's user or the CLI's credentials.
// Errors are *domain.Error values (or errors wrapping one) whose code and
// message reach the model as the API's envelope; any other error is
// reported as "internal error" without its detail. A Backend over the REST
// API turns a failure envelope back into one: Kind by the HTTP status
// (api.StatusOf's table read backwards), Code, Message and Details as sent.
type Backend interface {
	// AddMemory creates one memory (POST /v1/memories).
	AddMemory(ctx context.Context, in NewMemory) (Created, error)
	// Search runs a search over one agent's memories (POST /v1/search).
	Search(ctx context.Context, q SearchQuery) (SearchResults, error)
	// GetMemory returns one of the user's memories (GET /v1/memories/{id}).
	GetMemory(ctx context.Context, id string) (Memory, error)
	// Provenance returns the memory's sources (up) and the memories derived
	// from it (down), one level each way (GET /v1/memories/{id}/provenance).
	Provenance(ctx context.Context, id string) (Provenance, error)
	// ListMemories pages one agent's memories newest first (GET /v1/memories).
	ListMemories(ctx context.Context, q ListQuery) (MemoryPage, error)
	// UpdateMemory patches a memory's content fields and tags if its
	// version is still version (PATCH /v1/memories/{id} with If-Match).
	UpdateMemory(ctx context.Context, id string, version int64, p Patch) (Memory, error)
	// ForgetMemory forgets a memory, recoverably, if its version is still
	// version (DELETE /v1/memories/{id} with If-Match, never purge).
	ForgetMemory(ctx context.Context, id string, version int64) (Memory, error)
	// PendingSuggestions lists an agent's pending suggestions
	// (GET /v1/agents/{id}/suggestions?status=pending).
	PendingSuggestions(ctx context.Context, agentID string, limit int) ([]Suggestion, error)
	// Suggestion returns one of the user's suggestions (GET /v1/suggestions/{id}).
	Suggestion(ctx context.Context, id string) (Suggestion, error)
	// AcceptSuggestion promotes a suggestion to a memory.
	AcceptSuggestion(ctx context.Context, id string) (Accepted, error)
	// RejectSuggestion rejects a suggestion with an optional reason.
	RejectSuggestion(ctx context.Context, id, reason string) (Suggestion, error)
	// Stats counts an agent's memories (GET /v1/agents/{id}/stats).
	Stats(ctx context.Context, agentID string) (Stats, error)
	// Anxiety is the agent's anxiety report (GET /v1/agents/{id}/anxiety).
	Anxiety(ctx context.Context, agentID string) (Anxiety, error)
	// Settings are the agent's stack settings (GET /v1/agents/{id}/settings).
	Settings(ctx context.Context, agentID string) (json.RawMessage, error)
}

// NewMemory is one memory to create, as POST /v1/memories takes it.
// Type takes the API's plural, singular and short names.
type NewMemory struct {
	AgentID     string
	Type        string
	Content     json.RawMessage
	Tags        []string
	DerivedFrom []string
}

// Created is a created memory.
type Created struct {
	Type      string    `json:"type" jsonschema:"the memory's type (singular name)"`
	ID        string    `json:"id" jsonschema:"the memory's id, for get_memory, update_memory and forget_memory"`
	CreatedAt time.Time `json:"created_at" jsonschema:"when the memory was created (RFC 3339)"`
	Embedding string    `json:"embedding" jsonschema:"embedding status: embedded, pending or not_indexed"`
}

// SearchQuery is a search as POST /v1/search takes it; nil pointers are
// absent fields, which get the API's defaults.
type SearchQuery struct {
	AgentID       string
	Query         string
	Types         []string
	Mode          string
	Limit         *int
	MinScore      *float64
	CreatedAfter  *string
	CreatedBefore *string
	Tags          []string
}

// SearchResults is a search's answer.
type SearchResults struct {
	Results []SearchResult `json:"results" jsonschema:"the matches, best first"`
	// Degraded is "vector_unavailable" when a hybrid search ran on the
	// keyword index alone.
	Degraded string `json:"degraded,omitempty" jsonschema:"present when the search ran degraded, e.g. vector_unavailable: keyword matches only"`
	// QueryTimeMS and QueryTimeUS are the server's time for the search, as
	// POST /v1/search reports them: what a client compares with its round
	// trip to tell the server's time from the transport's.
	QueryTimeMS int64 `json:"query_time_ms" jsonschema:"the server's time for the search, in whole milliseconds"`
	QueryTimeUS int64 `json:"query_time_us" jsonschema:"the same time in whole microseconds"`
}

// SearchResult is one match.
type SearchResult struct {
	Type  string  `json:"type" jsonschema:"the memory's type"`
	ID    string  `json:"id" jsonschema:"the memory's id"`
	Score float64 `json:"score" jsonschema:"relevance in [0, 1]"`
	// Content is the stored JSON object as it is, written out as
	// POST /v1/search writes it: decoding it into a map and encoding the
	// map again was most of what the MCP layer added to a search.
	Content   json.RawMessage `json:"content" jsonschema:"the memory's content fields"`
	CreatedAt time.Time       `json:"created_at" jsonschema:"when the memory was created"`
	Strength  float64         `json:"strength" jsonschema:"the memory's strength now, in [0, 1]"`
}

// Memory is one memory as GET /v1/memories/{id} represents it.
type Memory struct {
	ID                string         `json:"id" jsonschema:"the memory's id"`
	AgentID           string         `json:"agent_id" jsonschema:"the agent the memory belongs to"`
	Type              string         `json:"type" jsonschema:"the memory's type"`
	Content           map[string]any `json:"content" jsonschema:"the memory's content fields, per type"`
	Tags              []string       `json:"tags" jsonschema:"the memory's tags"`
	DerivedFrom       []string       `json:"derived_from" jsonschema:"ids of the memories it was derived from"`
	CreatedAt         time.Time      `json:"created_at" jsonschema:"when the memory was created"`
	UpdatedAt         time.Time      `json:"updated_at" jsonschema:"when it last changed"`
	Forgotten         bool           `json:"forgotten" jsonschema:"true once forgotten (recoverable)"`
	ForgottenAt       *time.Time     `json:"forgotten_at,omitempty" jsonschema:"when it was forgotten"`
	Strength          float64        `json:"strength" jsonschema:"strength now, in [0, 1]"`
	Tier              string         `json:"tier" jsonschema:"strength tier"`
	Protected         bool           `json:"is_protected" jsonschema:"protected memories do not decay"`
	VerificationCount int            `json:"verification_count" jsonschema:"how often it was verified"`
	Version           int64          `json:"version" jsonschema:"the memory's version: pass it to update_memory and forget_memory"`
}

// Provenance is a memory's neighbourhood in the derived_from graph.
type Provenance struct {
	Sources []MemoryRef `json:"sources" jsonschema:"memories this one was derived from"`
	Derived []MemoryRef `json:"derived" jsonschema:"memories derived from this one"`
}

// MemoryRef names a memory.
type MemoryRef struct {
	Type string `json:"type" jsonschema:"the memory's type"`
	ID   string `json:"id" jsonschema:"the memory's id"`
}

// ListQuery selects a page of one agent's memories of one type.
type ListQuery struct {
	AgentID string
	Type    string
	Limit   int
	Cursor  string
}

// MemoryPage is one page of memories, newest first.
type MemoryPage struct {
	Items      []Memory `json:"items" jsonschema:"the memories, newest first"`
	NextCursor string   `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next page; absent on the last page"`
}

// Patch is a field-level change: Content holds only the content fields to
// change; Tags, when set, replaces the tags.
type Patch struct {
	Content json.RawMessage
	Tags    *[]string
}

// Suggestion is a processing suggestion.
type Suggestion struct {
	ID         string         `json:"id" jsonschema:"the suggestion's id, for accept and reject"`
	AgentID    string         `json:"agent_id" jsonschema:"the agent it belongs to"`
	Transition string         `json:"transition" jsonschema:"the processing transition that made it"`
	MemoryType string         `json:"memory_type" jsonschema:"the type of memory accepting it creates"`
	Content    map[string]any `json:"content" jsonschema:"the suggested memory's content"`
	Confidence float64        `json:"confidence" jsonschema:"the processor's confidence, in [0, 1]"`
	Sources    []string       `json:"sources" jsonschema:"ids of the memories it came from"`
	Status     string         `json:"status" jsonschema:"pending, accepted, rejected, dismissed or expired"`
	CreatedAt  time.Time      `json:"created_at" jsonschema:"when it was suggested"`
}

// Accepted is an accepted suggestion and the memory it became.
type Accepted struct {
	Suggestion Suggestion `json:"suggestion" jsonschema:"the suggestion, now accepted"`
	Memory     Created    `json:"memory" jsonschema:"the memory it became"`
}

// Stats counts an agent's memories.
type Stats struct {
	Total       int            `json:"total" jsonschema:"every memory the agent holds, forgotten ones included"`
	ByType      map[string]int `json:"by_type" jsonschema:"memories by type, forgotten ones included"`
	Forgotten   int            `json:"forgotten" jsonschema:"forgotten memories (recoverable)"`
	Weak        int            `json:"weak" jsonschema:"weak or dormant memories"`
	Unprocessed int            `json:"unprocessed_raw_entries" jsonschema:"raw entries no processing pass consumed yet"`
	Suggestions map[string]int `json:"suggestions" jsonschema:"suggestions by status"`
}

// Anxiety is the part of the anxiety report a session start wants.
type Anxiety struct {
	Score           int              `json:"score" jsonschema:"overall anxiety score, 0-100"`
	Level           string           `json:"level" jsonschema:"overall anxiety level"`
	Recommendations []Recommendation `json:"recommendations" jsonschema:"what to do about it, most urgent first"`
}

// Recommendation is one thing the anxiety report recommends.
type Recommendation struct {
	Priority    string `json:"priority" jsonschema:"low, medium, high or critical"`
	Dimension   string `json:"dimension,omitempty" jsonschema:"the anxiety dimension it addresses"`
	Description string `json:"description" jsonschema:"what to do"`
}
