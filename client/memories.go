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
}

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
// left unchanged. Changing indexed text re-embeds the memory.
type UpdateMemoryRequest struct {
	Content any       `json:"content,omitempty"`
	Tags    *[]string `json:"tags,omitempty"`
}

// Agent is one memory stack of the user.
type Agent struct {
	AgentID        string    `json:"agent_id"`
	EmbeddingModel string    `json:"embedding_model"`
	Dimensions     int       `json:"dimensions"`
	CreatedAt      time.Time `json:"created_at"`
	MemoryCount    int       `json:"memory_count"`
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
	err := c.call(ctx, http.MethodPatch, "/memories/"+pathID(id), nil, req, &out, bearer)
	return ret(&out, err)
}

// Forgotten is the data of DELETE /memories/{id}: Forgotten and
// ForgottenAt for a forget, Purged for a purge.
type Forgotten struct {
	ID          string     `json:"id"`
	Forgotten   bool       `json:"forgotten"`
	ForgottenAt *time.Time `json:"forgotten_at"`
	Purged      bool       `json:"purged"`
}

// ForgetMemory hides a memory from search (it stays in the log and the
// dashboard); purge removes it from every projection instead.
func (c *Client) ForgetMemory(ctx context.Context, id string, purge bool) (*Forgotten, error) {
	var q url.Values
	if purge {
		q = url.Values{"purge": {"true"}}
	}
	var out Forgotten
	err := c.call(ctx, http.MethodDelete, "/memories/"+pathID(id), q, nil, &out, bearer)
	return ret(&out, err)
}

// ListAgents lists the user's agents.
func (c *Client) ListAgents(ctx context.Context) ([]Agent, error) {
	var out struct {
		Agents []Agent `json:"agents"`
	}
	if err := c.call(ctx, http.MethodGet, "/agents", nil, nil, &out, bearer); err != nil {
		return nil, err
	}
	return out.Agents, nil
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
