package memory

import (
	"encoding/json"
	"time"
)

// Status values of EmbeddingState.
const (
	StatusEmbedded   = "embedded"    // the current text has a vector in the agent's model
	StatusPending    = "pending"     // queued: the embedding queue will produce the vector
	StatusNotIndexed = "not_indexed" // drives and forgotten memories are never searched
)

// Limits of memory listing and batch writes.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
	MaxBatch         = 1000
)

// ListQuery selects one page of a user's memories, newest first (by
// created_at, then id).
type ListQuery struct {
	UserID string
	// AgentID limits the page to one agent; empty lists every agent of
	// the user.
	AgentID string
	// Types limits the page to these types; nil means all.
	Types            []Type
	IncludeForgotten bool
	// IncludeWeak keeps weak and dormant memories (strength below 0.5 at
	// Now) in the page; without it they are left out.
	IncludeWeak bool
	// Processed, when set, keeps only the memories whose View.Processed
	// is this.
	Processed *bool
	// Now is the instant strengths are computed at.
	Now   time.Time
	Limit int
	// Cursor is the opaque NextCursor of the previous page; empty starts
	// at the newest memory.
	Cursor string
}

// Page is one page of a listing. NextCursor is empty on the last page.
type Page struct {
	Memories   []View
	NextCursor string
}

// AgentListQuery selects one page of a user's agents, in agent_id order.
type AgentListQuery struct {
	UserID string
	Limit  int
	// Cursor is the opaque NextCursor of the previous page; empty starts
	// at the first agent.
	Cursor string
}

// AgentPage is one page of agents. NextCursor is empty on the last page.
type AgentPage struct {
	Agents     []AgentView
	NextCursor string
}

// PendingEmbedding is a searchable memory whose current text has no vector
// in its agent's active model: the embedding queue's unit of work.
type PendingEmbedding struct {
	AgentRef
	MemoryID   string
	Type       Type
	Content    json.RawMessage // canonical, from NormalizeContent
	TextHash   string
	Model      string
	Dimensions int
}
