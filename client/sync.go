package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// SyncEvent is one event of an agent's log as sync carries it: its id
// (kept on every machine, so repeating a push or pull is harmless), type,
// time and payload without the owner.
type SyncEvent struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Time    time.Time       `json:"time"`
	Payload json.RawMessage `json:"payload"`
}

// SyncPage is the data of GET /sync/events: events after the cursor, the
// cursor of the next page, and the number of events in the agent's log.
type SyncPage struct {
	Events []SyncEvent `json:"events"`
	Next   uint64      `json:"next"`
	Head   uint64      `json:"head"`
}

// SyncPushResult is the data of POST /sync/events.
type SyncPushResult struct {
	Appended   int    `json:"appended"`
	Duplicates int    `json:"duplicates"`
	Skipped    int    `json:"skipped"`
	Head       uint64 `json:"head"`
}

// PullEvents reads up to limit events of the agent after the cursor
// (0: from the start; limit 0: the server's default page).
func (c *Client) PullEvents(ctx context.Context, agentID string, after uint64, limit int) (*SyncPage, error) {
	q := url.Values{"agent_id": {agentID}, "after": {strconv.FormatUint(after, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out SyncPage
	err := c.call(ctx, http.MethodGet, "/sync/events", q, nil, &out, bearer)
	return ret(&out, err)
}

// PushEvents appends another machine's events to the agent, keeping their
// ids; events the agent already has are counted as duplicates.
func (c *Client) PushEvents(ctx context.Context, agentID string, events []SyncEvent) (*SyncPushResult, error) {
	var out SyncPushResult
	body := struct {
		AgentID string      `json:"agent_id"`
		Events  []SyncEvent `json:"events"`
	}{agentID, events}
	err := c.call(ctx, http.MethodPost, "/sync/events", nil, body, &out, bearer)
	return ret(&out, err)
}
