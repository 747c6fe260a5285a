// Package audit describes the audit trail: entries derived from the event
// log, one per auditable event, for an agent or for an account.
package audit

import (
	"encoding/json"
	"time"
)

// Entry is one audit record. Actor is "kind:id" (e.g. "key:0193…",
// "system:embed-queue"): ids only, never a secret. Details hold ids and
// settings, never memory content or credentials.
type Entry struct {
	ID         string    `json:"id"`
	At         time.Time `json:"at"`
	Operation  string    `json:"operation"`
	AgentID    string    `json:"agent_id,omitempty"`
	MemoryType string    `json:"memory_type"`
	MemoryID   string    `json:"memory_id"`
	Actor      string    `json:"actor"`
	// Source is the interface the change came in through (api, mcp, cli,
	// system); "" for an entry of an event stored before sources were.
	Source  string          `json:"source,omitempty"`
	Details json.RawMessage `json:"details"`
}

// Limits of an audit page.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Query selects a page of entries, newest first. AgentID empty selects
// the account-level entries. Before is the id of an entry: the page starts
// just older than it.
type Query struct {
	UserID  string
	AgentID string
	Before  string
	Limit   int
}

// Page is one page of entries; NextBefore is the Before of the next page,
// empty on the last one.
type Page struct {
	Entries    []Entry `json:"entries"`
	NextBefore string  `json:"next_before,omitempty"`
}
