package mcp

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/domain"
)

// Resource templates: an agent's stats and its settings.
const (
	statsTemplate    = "engram://agents/{agent_id}/stats"
	settingsTemplate = "engram://agents/{agent_id}/settings"
)

func (h *handlers) resources(s *sdk.Server) {
	s.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "agent-stats", Title: "Agent memory stats", URITemplate: statsTemplate, MIMEType: "application/json",
		Description: "How many memories the agent holds, by type; forgotten, weak and unprocessed counts; suggestions by status.",
	}, h.readResource("stats", func(ctx context.Context, b Backend, agentID string) (any, error) { return b.Stats(ctx, agentID) }))
	s.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "agent-settings", Title: "Agent stack settings", URITemplate: settingsTemplate, MIMEType: "application/json",
		Description: "The agent's stack settings: decay, forgetting and processing behaviour.",
	}, h.readResource("settings", func(ctx context.Context, b Backend, agentID string) (any, error) { return b.Settings(ctx, agentID) }))
}

// readResource serves engram://agents/{agent_id}/<leaf> with read. A
// failure is a JSON-RPC error: resources have no error result, so the
// API's code and message travel in the error's message and data.
func (h *handlers) readResource(leaf string, read func(context.Context, Backend, string) (any, error)) sdk.ResourceHandler {
	return func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		ctx, b, bound := h.backend(ctx, req.Extra)
		agentID, err := agentOfURI(req.Params.URI, leaf)
		if err == nil {
			err = checkBinding(bound, agentID)
		}
		var v any
		if err == nil {
			v, err = read(ctx, b, agentID)
		}
		if err != nil {
			if domain.ErrorKind(err) == domain.KindNotFound {
				return nil, sdk.ResourceNotFoundError(req.Params.URI)
			}
			return nil, h.protocolError(ctx, "resources/read", err)
		}
		body, err := json.Marshal(v)
		if err != nil {
			return nil, h.protocolError(ctx, "resources/read", err)
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(body)}}}, nil
	}
}

// agentOfURI is the agent id of engram://agents/{agent_id}/<leaf>.
func agentOfURI(uri, leaf string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "engram" || u.Host != "agents" {
		return "", domain.Invalid("uri", "resource URIs look like engram://agents/{agent_id}/%s", leaf)
	}
	agentID, rest, ok := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if !ok || rest != leaf || agentID == "" {
		return "", domain.Invalid("uri", "resource URIs look like engram://agents/{agent_id}/%s", leaf)
	}
	return agentID, nil
}
