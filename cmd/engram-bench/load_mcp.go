package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/client"
)

// The ways `engram-bench load` reaches the server's search.
const (
	viaREST = "rest"
	viaMCP  = "mcp"
)

// newSearchers returns one searcher per worker: the REST client shared by
// all, or one MCP session each (an MCP client holds a session, as an agent
// would), and what closes them.
func newSearchers(ctx context.Context, tg *target, cfg loadConfig) ([]searchFunc, func(), error) {
	searchers := make([]searchFunc, cfg.concurrency)
	if cfg.via == viaREST {
		for i := range searchers {
			searchers[i] = restSearch(tg.client)
		}
		return searchers, func() {}, nil
	}
	endpoint := strings.TrimSuffix(strings.TrimRight(tg.apiURL, "/"), "/v1") + "/mcp"
	hc := benchHTTPClient(cfg.concurrency)
	hc.Transport = bearerAuth{key: tg.apiKey, next: hc.Transport}
	var sessions []*sdk.ClientSession
	closeAll := func() {
		for _, cs := range sessions {
			_ = cs.Close()
		}
	}
	for i := range searchers {
		transport := &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "engram-bench", Version: "1"}, nil).Connect(ctx, transport, nil)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("connect to %s: %w", endpoint, err)
		}
		sessions = append(sessions, cs)
		searchers[i] = mcpSearch(cs)
	}
	return searchers, closeAll, nil
}

// mcpSearch searches with the search_memories tool; its answer carries no
// server time.
func mcpSearch(cs *sdk.ClientSession) searchFunc {
	return func(ctx context.Context, req client.SearchRequest) (int, float64, error) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_memories", Arguments: map[string]any{
			"agent_id": req.AgentID, "query": req.Query, "limit": req.Limit, "mode": req.Mode,
		}})
		if err != nil {
			return 0, 0, err
		}
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return 0, 0, err
		}
		var out struct {
			Results []json.RawMessage `json:"results"`
			Error   *struct{ Code, Message string }
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return 0, 0, err
		}
		if res.IsError {
			if out.Error != nil {
				return 0, 0, fmt.Errorf("search_memories: %s: %s", out.Error.Code, out.Error.Message)
			}
			return 0, 0, errors.New("search_memories failed")
		}
		return len(out.Results), -1, nil
	}
}

// bearerAuth sends the API key with every request.
type bearerAuth struct {
	key  string
	next http.RoundTripper
}

func (b bearerAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}
