package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// What session_start loads: the strongest beliefs and values and the
// active goals among the newest sessionScan of their type, and the newest
// episodes — sessionShown of each, so the prompt stays compact.
const (
	sessionScan  = 100
	sessionShown = 5
)

func (h *handlers) prompts(s *sdk.Server) {
	s.AddPrompt(&sdk.Prompt{
		Name:        "session_start",
		Title:       "Start a session with Engram",
		Description: "What to load at the start of a session: memory status and anxiety, the strongest beliefs and values, active goals and recent episodes — compact.",
		Arguments:   []*sdk.PromptArgument{{Name: "agent_id", Description: "the agent whose memory to load", Required: true}},
	}, h.sessionStart)
}

func (h *handlers) sessionStart(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	ctx, b, bound := h.backend(ctx, req.Extra)
	agentID := req.Params.Arguments["agent_id"]
	if err := checkBinding(bound, agentID); err != nil {
		return nil, h.protocolError(ctx, "prompts/get", err)
	}
	text, err := sessionBriefing(ctx, b, agentID)
	if err != nil {
		return nil, h.protocolError(ctx, "prompts/get", err)
	}
	return &sdk.GetPromptResult{
		Description: "Engram memory of " + agentID + " at session start",
		Messages:    []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: text}}},
	}, nil
}

// sessionBriefing is the text of session_start.
func sessionBriefing(ctx context.Context, b Backend, agentID string) (string, error) {
	st, err := status(ctx, b, agentID)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "This is your long-term memory (Engram, agent %s). Keep it current with add_memory and capture; search it with search_memories.\n\n## Status\n%s\n", agentID, statusText(st))
	sections := []struct {
		title string
		t     memory.Type
		pick  func([]Memory) []Memory
	}{
		{"Strongest beliefs", memory.Belief, strongest},
		{"Values", memory.Value, strongest},
		{"Active goals", memory.Goal, active},
		{"Recent episodes", memory.Episode, newest},
	}
	for _, sec := range sections {
		page, err := b.ListMemories(ctx, ListQuery{AgentID: agentID, Type: string(sec.t), Limit: sessionScan})
		if err != nil {
			return "", err
		}
		picked := sec.pick(page.Items)
		if len(picked) == 0 {
			continue
		}
		fmt.Fprintf(&out, "\n## %s\n", sec.title)
		for _, m := range picked {
			fmt.Fprintf(&out, "- %s (%s %s, strength %.2f)\n", summary(m.Content), m.Type, m.ID, m.Strength)
		}
	}
	return out.String(), nil
}

func strongest(ms []Memory) []Memory {
	ms = slices.Clone(ms)
	slices.SortStableFunc(ms, func(a, b Memory) int { return cmp.Compare(b.Strength, a.Strength) })
	return newest(ms)
}

func active(ms []Memory) []Memory {
	return newest(slices.DeleteFunc(slices.Clone(ms), func(m Memory) bool { return m.Content["status"] != "active" }))
}

func newest(ms []Memory) []Memory { return ms[:min(len(ms), sessionShown)] }

// protocolError is err as the JSON-RPC error of a request that has no
// error result (resources, prompts): invalid arguments are invalid params,
// anything else an internal error; the message is the API's code and
// message, the data its envelope. An internal error's detail goes to the
// log only.
func (h *handlers) protocolError(ctx context.Context, method string, err error) error {
	f, _, internal := api.PublicFailure(err)
	if internal {
		h.logger.ErrorContext(ctx, "mcp request failed", "method", method, "error", err)
	}
	code := int64(jsonrpc.CodeInternalError)
	if domain.ErrorKind(err) == domain.KindInvalid {
		code = jsonrpc.CodeInvalidParams
	}
	data, _ := json.Marshal(map[string]any{"error": f})
	return &jsonrpc.Error{Code: code, Message: f.Code + ": " + f.Message, Data: data}
}
