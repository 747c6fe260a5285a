package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/client"
)

// The ways `engram-bench load` reaches the server's search.
const (
	viaREST = "rest"
	viaMCP  = "mcp"
)

// The MCP clients `engram-bench load --via mcp` drives the server with.
const (
	// mcpClientRaw is a lean client of the stateless 2026-07-28 revision:
	// one plain POST per tools/call, read as plainly as the REST driver
	// reads /v1/search, so that the driver's cost matches REST's and the
	// difference is the server's.
	mcpClientRaw = "raw"
	// mcpClientSDK is the official Go SDK's client, one session per
	// worker: what real agents run, at the SDK's own cost.
	mcpClientSDK = "sdk"
)

// statelessRevision is the MCP revision the raw client speaks.
const statelessRevision = "2026-07-28"

// newSearchers returns one searcher per worker: the REST client shared by
// all, the raw MCP client shared by all, or one SDK client session each
// (an SDK client holds a session, as an agent would), and what closes
// them.
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
	if cfg.mcpClient == mcpClientRaw {
		raw := &rawMCPClient{http: hc, endpoint: endpoint, apiKey: tg.apiKey}
		for i := range searchers {
			searchers[i] = raw.search
		}
		return searchers, func() {}, nil
	}
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
		searchers[i] = sdkSearch(cs)
	}
	return searchers, closeAll, nil
}

// searchArguments are search_memories' arguments for req.
func searchArguments(req client.SearchRequest) map[string]any {
	return map[string]any{"agent_id": req.AgentID, "query": req.Query, "limit": req.Limit, "mode": req.Mode}
}

// sdkSearch searches with the search_memories tool through the SDK's
// client.
func sdkSearch(cs *sdk.ClientSession) searchFunc {
	return func(ctx context.Context, req client.SearchRequest) (int, float64, error) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_memories", Arguments: searchArguments(req)})
		if err != nil {
			return 0, 0, err
		}
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return 0, 0, err
		}
		return searchOutcome(raw, res.IsError)
	}
}

// rawMCPClient calls search_memories as a lean client of the stateless
// revision does: no session, no handshake, the revision and the call named
// in headers and in _meta, one POST and its JSON answer.
type rawMCPClient struct {
	http     *http.Client
	endpoint string
	apiKey   string
	lastID   atomic.Int64
}

// rawCall is a tools/call request of the stateless revision.
type rawCall struct {
	JSONRPC string        `json:"jsonrpc"`
	ID      int64         `json:"id"`
	Method  string        `json:"method"`
	Params  rawCallParams `json:"params"`
}

type rawCallParams struct {
	Name      string        `json:"name"`
	Arguments rawSearchArgs `json:"arguments"`
	Meta      rawMeta       `json:"_meta"`
}

// rawSearchArgs are search_memories' arguments, as searchArguments has them.
type rawSearchArgs struct {
	AgentID string `json:"agent_id"`
	Query   string `json:"query"`
	Limit   int    `json:"limit"`
	Mode    string `json:"mode"`
}

// rawMeta is what a stateless request carries in its _meta: the revision
// and the client's capabilities (none).
type rawMeta struct {
	ProtocolVersion    string   `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities struct{} `json:"io.modelcontextprotocol/clientCapabilities"`
}

// rawAnswer is a JSON-RPC answer to a tools/call.
type rawAnswer struct {
	Result *struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *rawMCPClient) search(ctx context.Context, req client.SearchRequest) (int, float64, error) {
	body, err := json.Marshal(rawCall{JSONRPC: "2.0", ID: c.lastID.Add(1), Method: "tools/call", Params: rawCallParams{
		Name:      "search_memories",
		Arguments: rawSearchArgs{AgentID: req.AgentID, Query: req.Query, Limit: req.Limit, Mode: req.Mode},
		Meta:      rawMeta{ProtocolVersion: statelessRevision},
	}})
	if err != nil {
		return 0, 0, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json, text/event-stream")
	hreq.Header.Set("Authorization", "Bearer "+c.apiKey)
	hreq.Header.Set("Mcp-Protocol-Version", statelessRevision)
	hreq.Header.Set("Mcp-Method", "tools/call")
	hreq.Header.Set("Mcp-Name", "search_memories")
	res, err := c.http.Do(hreq)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, 0, err
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); res.StatusCode != http.StatusOK || mt != "application/json" {
		return 0, 0, fmt.Errorf("POST %s: %d %s: %.200s", c.endpoint, res.StatusCode, res.Header.Get("Content-Type"), data)
	}
	var answer rawAnswer
	if err := json.Unmarshal(data, &answer); err != nil {
		return 0, 0, fmt.Errorf("POST %s: %w", c.endpoint, err)
	}
	switch {
	case answer.Error != nil:
		return 0, 0, fmt.Errorf("search_memories: JSON-RPC error %d: %s", answer.Error.Code, answer.Error.Message)
	case answer.Result == nil:
		return 0, 0, fmt.Errorf("search_memories: an answer with neither result nor error: %.200s", data)
	}
	return searchOutcome(answer.Result.StructuredContent, answer.Result.IsError)
}

// searchOutcome reads search_memories' structured content: the results'
// count and the server's time for the search in milliseconds (negative
// from a server that does not report it).
func searchOutcome(structured json.RawMessage, isError bool) (int, float64, error) {
	var out struct {
		Results     []json.RawMessage `json:"results"`
		QueryTimeMS *float64          `json:"query_time_ms"`
		QueryTimeUS *int64            `json:"query_time_us"`
		Error       *struct{ Code, Message string }
	}
	if err := json.Unmarshal(structured, &out); err != nil {
		return 0, 0, fmt.Errorf("search_memories: structured content: %w", err)
	}
	if isError {
		if out.Error != nil {
			return 0, 0, fmt.Errorf("search_memories: %s: %s", out.Error.Code, out.Error.Message)
		}
		return 0, 0, errors.New("search_memories failed")
	}
	server := -1.0
	switch {
	case out.QueryTimeUS != nil:
		server = float64(*out.QueryTimeUS) / 1000
	case out.QueryTimeMS != nil:
		server = *out.QueryTimeMS
	}
	return len(out.Results), server, nil
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
