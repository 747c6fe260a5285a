package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// MaxBatch is the most memories one CreateMemories call takes.
const MaxBatch = 1000

// CreateMemoryRequest is the body of POST /memories. Type takes the plural
// ("notes") or singular ("note") name. Content is any value that encodes
// to the type's content object, e.g. NoteContent or a map.
type CreateMemoryRequest struct {
	AgentID     string     `json:"agent_id"`
	Type        string     `json:"type"`
	Content     any        `json:"content"`
	Tags        []string   `json:"tags,omitempty"`
	CreatedAt   *time.Time `json:"created_at,omitempty"`
	DerivedFrom []string   `json:"derived_from,omitempty"` // ["type:id", ...]
}

// BatchMemory is one item of POST /memories/batch.
type BatchMemory struct {
	Type        string     `json:"type"`
	Content     any        `json:"content"`
	Tags        []string   `json:"tags,omitempty"`
	CreatedAt   *time.Time `json:"created_at,omitempty"`
	DerivedFrom []string   `json:"derived_from,omitempty"`
}

// BatchRequest is the body of POST /memories/batch: up to MaxBatch
// memories of one agent, all-or-nothing.
type BatchRequest struct {
	AgentID  string        `json:"agent_id"`
	Memories []BatchMemory `json:"memories"`
}

// EmbeddingState says whether a memory's current text has a vector.
type EmbeddingState struct {
	Model      string `json:"model"`
	Dimensions int    `json:"dimensions"`
	Status     string `json:"status"` // "embedded", "pending" or "not_indexed"
}

// CreatedMemory is the data of POST /memories and one item of a batch.
type CreatedMemory struct {
	Type      string         `json:"type"` // singular name
	ID        string         `json:"id"`
	CreatedAt time.Time      `json:"created_at"`
	Embedding EmbeddingState `json:"embedding"`
}

// Memory is a stored memory as GET /memories/{id} returns it.
type Memory struct {
	ID          string          `json:"id"`
	AgentID     string          `json:"agent_id"`
	Type        string          `json:"type"`
	Content     json.RawMessage `json:"content"` // decode with DecodeContent
	Tags        []string        `json:"tags"`
	DerivedFrom []string        `json:"derived_from"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	Forgotten   bool            `json:"forgotten"`
	ForgottenAt *time.Time      `json:"forgotten_at"`
	Embedding   EmbeddingState  `json:"embedding"`
	// Strength is 0-1 with decay applied at read time; Tier names its
	// band (strong, fading, weak, dormant, forgotten).
	Strength          float64    `json:"strength"`
	Tier              string     `json:"tier"`
	IsProtected       bool       `json:"is_protected"`
	VerificationCount int        `json:"verification_count"`
	LastVerifiedAt    *time.Time `json:"last_verified_at"`
	// Version counts the changes of content, tags and forgotten state,
	// from 1; ETag gives it in the form If-Match takes.
	Version int64 `json:"version"`
}

// ETag is the memory's entity tag (its version, quoted), for the IfMatch
// of UpdateMemoryRequest and ForgetOptions.
func (m *Memory) ETag() string { return `"` + strconv.FormatInt(m.Version, 10) + `"` }

// DecodeContent decodes the content object into v, e.g. *NoteContent.
func (m *Memory) DecodeContent(v any) error { return json.Unmarshal(m.Content, v) }

// MemoryPage is the data of GET /memories. NextCursor is empty on the
// last page.
type MemoryPage struct {
	Memories   []Memory `json:"memories"`
	NextCursor string   `json:"next_cursor"`
}

// ListMemoriesOptions select a page of GET /memories; zero values are left
// out of the query.
type ListMemoriesOptions struct {
	AgentID          string
	Type             string // plural or singular; comma-separated for several
	Limit            int
	Cursor           string
	IncludeForgotten bool
}

// UpdateMemoryRequest is the body of PATCH /memories/{id}; nil fields are
// left unchanged, and content fields not named keep their value (null
// removes one). Changing indexed text re-embeds the memory.
type UpdateMemoryRequest struct {
	Content any       `json:"content,omitempty"`
	Tags    *[]string `json:"tags,omitempty"`
	// IfMatch, when set (e.g. to Memory.ETag()), applies the change only
	// if the memory is still at that version; otherwise the call fails
	// with status 412, code "precondition_failed".
	IfMatch string `json:"-"`
}

// Agent is one memory stack of the user.
type Agent struct {
	AgentID        string    `json:"agent_id"`
	EmbeddingModel string    `json:"embedding_model"`
	Dimensions     int       `json:"dimensions"`
	CreatedAt      time.Time `json:"created_at"`
	MemoryCount    int       `json:"memory_count"`    // not forgotten
	StoredMemories int       `json:"stored_memories"` // forgotten included: what the per-agent quota counts
	TextBytes      int64     `json:"text_bytes"`      // content size: what the per-user byte quota sums
}

// AgentPage is the data of GET /agents. NextCursor is empty on the last
// page.
type AgentPage struct {
	Agents     []Agent `json:"agents"`
	NextCursor string  `json:"next_cursor"`
}

// ListAgentsOptions select a page of GET /agents; zero values are left
// out of the query.
type ListAgentsOptions struct {
	Limit  int
	Cursor string
}

// CreateMemory stores one memory; it is searchable when this returns.
func (c *Client) CreateMemory(ctx context.Context, req CreateMemoryRequest) (*CreatedMemory, error) {
	var out CreatedMemory
	err := c.call(ctx, http.MethodPost, "/memories", nil, req, &out, bearer)
	return ret(&out, err)
}

// CreateMemories stores up to MaxBatch memories of one agent in one
// all-or-nothing call and returns them in input order.
func (c *Client) CreateMemories(ctx context.Context, req BatchRequest) ([]CreatedMemory, error) {
	var out struct {
		Memories []CreatedMemory `json:"memories"`
	}
	if err := c.call(ctx, http.MethodPost, "/memories/batch", nil, req, &out, bearer); err != nil {
		return nil, err
	}
	return out.Memories, nil
}

// GetMemory reads one memory.
func (c *Client) GetMemory(ctx context.Context, id string) (*Memory, error) {
	var out Memory
	err := c.call(ctx, http.MethodGet, "/memories/"+pathID(id), nil, nil, &out, bearer)
	return ret(&out, err)
}

// ListMemories reads one page of memories, newest first.
func (c *Client) ListMemories(ctx context.Context, opts ListMemoriesOptions) (*MemoryPage, error) {
	q := url.Values{}
	if opts.AgentID != "" {
		q.Set("agent_id", opts.AgentID)
	}
	if opts.Type != "" {
		q.Set("type", opts.Type)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	if opts.IncludeForgotten {
		q.Set("include_forgotten", "true")
	}
	var out MemoryPage
	err := c.call(ctx, http.MethodGet, "/memories", q, nil, &out, bearer)
	return ret(&out, err)
}

// UpdateMemory changes a memory's content or tags.
func (c *Client) UpdateMemory(ctx context.Context, id string, req UpdateMemoryRequest) (*Memory, error) {
	var out Memory
	err := c.callWithHeader(ctx, http.MethodPatch, "/memories/"+pathID(id), nil, ifMatchHeader(req.IfMatch), req, &out, bearer)
	return ret(&out, err)
}

// ifMatchHeader is the If-Match header for etag; nil for none.
func ifMatchHeader(etag string) http.Header {
	if etag == "" {
		return nil
	}
	return http.Header{"If-Match": {etag}}
}

// Forgotten is the data of DELETE /memories/{id}: Forgotten and
// ForgottenAt for a forget, Purged for a purge.
type Forgotten struct {
	ID          string     `json:"id"`
	Forgotten   bool       `json:"forgotten"`
	ForgottenAt *time.Time `json:"forgotten_at"`
	Purged      bool       `json:"purged"`
}

// ForgetOptions change what ForgetMemory does.
type ForgetOptions struct {
	// Purge removes the memory from every projection instead of hiding it.
	Purge bool
	// IfMatch, when set (e.g. to Memory.ETag()), acts only if the memory
	// is still at that version (else status 412, "precondition_failed").
	IfMatch string
}

// ForgetMemory hides a memory from search (it stays in the log and the
// dashboard), or with opts.Purge removes it from every projection.
func (c *Client) ForgetMemory(ctx context.Context, id string, opts ForgetOptions) (*Forgotten, error) {
	var q url.Values
	if opts.Purge {
		q = url.Values{"purge": {"true"}}
	}
	var out Forgotten
	err := c.callWithHeader(ctx, http.MethodDelete, "/memories/"+pathID(id), q, ifMatchHeader(opts.IfMatch), nil, &out, bearer)
	return ret(&out, err)
}

// ListAgents reads one page of the user's agents, in agent_id order.
func (c *Client) ListAgents(ctx context.Context, opts ListAgentsOptions) (*AgentPage, error) {
	q := url.Values{}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	var out AgentPage
	err := c.call(ctx, http.MethodGet, "/agents", q, nil, &out, bearer)
	return ret(&out, err)
}

// DeleteAgent removes an agent and everything in it, from every
// projection.
func (c *Client) DeleteAgent(ctx context.Context, agentID string) error {
	var out struct {
		Deleted bool `json:"deleted"`
	}
	if err := c.call(ctx, http.MethodDelete, "/agents/"+pathID(agentID), nil, nil, &out, bearer); err != nil {
		return err
	}
	if !out.Deleted {
		return fmt.Errorf("client: DELETE /agents/%s: server did not confirm the deletion", agentID)
	}
	return nil
}
