package client

import (
	"context"
	"sync"
)

// sourceHeader declares the interface a client relays (see WithSource).
const sourceHeader = "Engram-Source"

// SourceMCP is the source of a client that relays an MCP client's tool
// calls to the API.
const SourceMCP = "mcp"

// WithSource makes every request declare that it relays another
// interface (SourceMCP), so that the server's events and audit trail
// record it instead of api. The server refuses a source a client may not
// claim.
func WithSource(source string) Option { return func(c *Client) { c.source = source } }

// Tokens collects the consistency tokens of the successful answers to
// requests made with a context from TrackTokens.
type Tokens struct {
	mu   sync.Mutex
	last string
}

// Last is the token of the last answer that carried one ("" for none): a
// token names a log position, and a later answer's includes an earlier's.
func (t *Tokens) Last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

func (t *Tokens) record(token string) {
	if token == "" {
		return
	}
	t.mu.Lock()
	t.last = token
	t.mu.Unlock()
}

type tokensKey struct{}

// TrackTokens returns ctx recording, in the Tokens it returns, the
// Engram-Consistency-Token of every successful answer to a request made
// with it: what a relay hands its own client (e.g. an MCP result's _meta).
func TrackTokens(ctx context.Context) (context.Context, *Tokens) {
	t := &Tokens{}
	return context.WithValue(ctx, tokensKey{}, t), t
}

// recordToken keeps the token of a successful answer for TrackTokens.
func recordToken(ctx context.Context, token string) {
	if t, ok := ctx.Value(tokensKey{}).(*Tokens); ok {
		t.record(token)
	}
}
