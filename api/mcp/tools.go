package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// ConsistencyTokenMeta is the key, in the _meta of a tool result whose
// call wrote, of the consistency token of its last event: what the API's
// Engram-Consistency-Token header carries. In session mode the tool runs
// apart from the HTTP request that brought the call, so _meta is the one
// place that carries the token in every mode.
const ConsistencyTokenMeta = "engram/consistency_token"

// agentArg is implemented by every tool's arguments: the agent they act on.
type agentArg interface{ agent() string }

// AgentArgs is the agent_id every tool takes.
type AgentArgs struct {
	AgentID string `json:"agent_id" jsonschema:"the agent whose memory to use: 1-64 characters of A-Z a-z 0-9 . _ -"`
}

func (a AgentArgs) agent() string { return a.AgentID }

// AddMemoryArgs are add_memory's arguments.
type AddMemoryArgs struct {
	AgentArgs
	Type        string         `json:"type" jsonschema:"the memory type: episode, belief, note, value, goal, playbook, raw_entry, relationship or drive (plural names work too)"`
	Content     map[string]any `json:"content" jsonschema:"the memory's content fields, per type: episode {objective, outcome, outcome_type?, lessons?}; belief {statement, belief_type?, confidence?}; note {content, note_type?}; value {name, statement, priority?}; goal {title, description?, priority?, status?}; playbook {name, description, steps: [{action}]}; raw_entry {content}; relationship {entity_name, relationship_type}; drive {drive_type, intensity?}"`
	Tags        []string       `json:"tags,omitempty" jsonschema:"labels to filter by later"`
	DerivedFrom []string       `json:"derived_from,omitempty" jsonschema:"ids of the memories this one was derived from"`
}

// CaptureArgs are capture's arguments.
type CaptureArgs struct {
	AgentArgs
	Text string   `json:"text" jsonschema:"what to jot down, in plain words; processing may later turn it into typed memories"`
	Tags []string `json:"tags,omitempty" jsonschema:"labels to filter by later"`
}

// SearchArgs are search_memories' arguments.
type SearchArgs struct {
	AgentArgs
	Query         string   `json:"query" jsonschema:"what to look for, in natural language or keywords"`
	Types         []string `json:"types,omitempty" jsonschema:"only these memory types (e.g. belief, episode); all searchable types when absent"`
	Mode          string   `json:"mode,omitempty" jsonschema:"hybrid (default: meaning and keywords), vector (meaning only) or keyword (words only)"`
	Limit         *int     `json:"limit,omitempty" jsonschema:"at most this many results, 1-100 (default 10)"`
	MinScore      *float64 `json:"min_score,omitempty" jsonschema:"drop results scoring below this, in [0, 1]"`
	CreatedAfter  *string  `json:"created_after,omitempty" jsonschema:"only memories created at or after this RFC 3339 time"`
	CreatedBefore *string  `json:"created_before,omitempty" jsonschema:"only memories created before this RFC 3339 time"`
	Tags          []string `json:"tags,omitempty" jsonschema:"only memories carrying every one of these tags"`
}

// MemoryArgs name one memory.
type MemoryArgs struct {
	AgentArgs
	Type string `json:"type" jsonschema:"the memory's type, as search_memories or list_memories returned it"`
	ID   string `json:"id" jsonschema:"the memory's id"`
}

// ListArgs are list_memories' arguments.
type ListArgs struct {
	AgentArgs
	Type   string `json:"type" jsonschema:"the memory type to list: episode, belief, note, value, goal, playbook, raw_entry, relationship or drive"`
	Limit  *int   `json:"limit,omitempty" jsonschema:"page size, 1-1000 (default 50)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

// PatchArgs is update_memory's patch.
type PatchArgs struct {
	Content map[string]any `json:"content,omitempty" jsonschema:"only the content fields to change, with their new values"`
	Tags    *[]string      `json:"tags,omitempty" jsonschema:"the new tags, replacing the old ones"`
}

// UpdateArgs are update_memory's arguments.
type UpdateArgs struct {
	MemoryArgs
	Version int64     `json:"version" jsonschema:"the version get_memory returned: the update fails with precondition_failed if the memory changed since"`
	Patch   PatchArgs `json:"patch" jsonschema:"what to change"`
}

// ForgetArgs are forget_memory's arguments.
type ForgetArgs struct {
	MemoryArgs
	Version *int64 `json:"version,omitempty" jsonschema:"when given, forget only if the memory is still at this version"`
	Reason  string `json:"reason,omitempty" jsonschema:"why; shown back in the answer (the API's forget records no reason)"`
}

// ReviewArgs are review_suggestions' arguments.
type ReviewArgs struct {
	AgentArgs
	Action       string `json:"action" jsonschema:"list (pending suggestions), accept (make the suggestion a memory) or reject"`
	SuggestionID string `json:"suggestion_id,omitempty" jsonschema:"the suggestion to accept or reject, from list"`
	Reason       string `json:"reason,omitempty" jsonschema:"why it is rejected"`
}

// GetMemoryResult is get_memory's answer.
type GetMemoryResult struct {
	Memory     Memory     `json:"memory" jsonschema:"the memory"`
	Provenance Provenance `json:"provenance" jsonschema:"where it came from and what came from it"`
}

// ForgetResult is forget_memory's answer.
type ForgetResult struct {
	Memory Memory `json:"memory" jsonschema:"the memory, now forgotten (recoverable)"`
	Reason string `json:"reason,omitempty" jsonschema:"the reason given"`
}

// ReviewResult is review_suggestions' answer: the pending suggestions for
// list, the resolved suggestion (and for accept the memory) otherwise.
type ReviewResult struct {
	Suggestions []Suggestion `json:"suggestions,omitempty" jsonschema:"pending suggestions (list)"`
	Suggestion  *Suggestion  `json:"suggestion,omitempty" jsonschema:"the suggestion accepted or rejected"`
	Memory      *Created     `json:"memory,omitempty" jsonschema:"the memory an accepted suggestion became"`
}

// StatusResult is memory_status' answer.
type StatusResult struct {
	AgentID string  `json:"agent_id" jsonschema:"the agent"`
	Stats   Stats   `json:"stats" jsonschema:"memory counts"`
	Anxiety Anxiety `json:"anxiety" jsonschema:"how much the memory needs care, and what to do"`
}

// pendingSuggestionsShown is how many pending suggestions list returns.
const pendingSuggestionsShown = 20

// tools registers the tools on s.
func (h *handlers) tools(s *Server) {
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	// additive tools add something new on each call; destructive ones
	// change or forget a memory, to the same end when repeated.
	additive := &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: false, OpenWorldHint: ptr(false)}
	destructive := &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)}
	addTool(h, s, &sdk.Tool{
		Name:        "add_memory",
		Title:       "Add a memory",
		Description: "Store one typed memory for the agent. Use it for what should be remembered in a form search and reasoning can use: a belief, an episode with its lessons, a goal, a note, a value, a playbook, a relationship or a drive. Each call adds a new memory.",
		Annotations: additive,
	}, func(ctx context.Context, b Backend, in AddMemoryArgs) (Created, string, error) {
		content, err := rawObject(in.Content)
		if err != nil {
			return Created{}, "", err
		}
		c, err := b.AddMemory(ctx, NewMemory{AgentID: in.AgentID, Type: in.Type, Content: content, Tags: in.Tags, DerivedFrom: in.DerivedFrom})
		return c, fmt.Sprintf("added %s %s", c.Type, c.ID), err
	})
	addTool(h, s, &sdk.Tool{
		Name:        "capture",
		Title:       "Capture a thought",
		Description: "Jot down a raw entry: the cheapest way to keep something without deciding its type. Processing may later turn raw entries into episodes, beliefs and notes. Each call adds a new entry.",
		Annotations: additive,
	}, func(ctx context.Context, b Backend, in CaptureArgs) (Created, string, error) {
		content, err := json.Marshal(map[string]any{"content": in.Text, "source": "mcp"})
		if err != nil {
			return Created{}, "", err
		}
		c, err := b.AddMemory(ctx, NewMemory{AgentID: in.AgentID, Type: string(memory.RawEntry), Content: content, Tags: in.Tags})
		return c, fmt.Sprintf("captured raw entry %s", c.ID), err
	})
	addTool(h, s, &sdk.Tool{
		Name:        "search_memories",
		Title:       "Search memories",
		Description: "Find the agent's memories relevant to a query, best first, with their content, score and strength. Search before answering from memory; narrow with types, tags and time bounds.",
		Annotations: readOnly,
	}, func(ctx context.Context, b Backend, in SearchArgs) (SearchResults, string, error) {
		r, err := b.Search(ctx, SearchQuery{
			AgentID: in.AgentID, Query: in.Query, Types: in.Types, Mode: in.Mode, Limit: in.Limit, MinScore: in.MinScore,
			CreatedAfter: in.CreatedAfter, CreatedBefore: in.CreatedBefore, Tags: in.Tags,
		})
		if err != nil {
			return r, "", err
		}
		return r, searchText(r), nil
	})
	addTool(h, s, &sdk.Tool{
		Name:        "get_memory",
		Title:       "Get a memory",
		Description: "Read one memory in full, with its version (for update_memory) and its provenance: the memories it was derived from and those derived from it.",
		Annotations: readOnly,
	}, func(ctx context.Context, b Backend, in MemoryArgs) (GetMemoryResult, string, error) {
		m, err := agentMemory(ctx, b, in)
		if err != nil {
			return GetMemoryResult{}, "", err
		}
		p, err := b.Provenance(ctx, m.ID)
		if err != nil {
			return GetMemoryResult{}, "", err
		}
		return GetMemoryResult{Memory: m, Provenance: p}, fmt.Sprintf("%s %s v%d: %s", m.Type, m.ID, m.Version, summary(m.Content)), nil
	})
	addTool(h, s, &sdk.Tool{
		Name:        "list_memories",
		Title:       "List memories",
		Description: "Page through the agent's memories of one type, newest first. Pass next_cursor back as cursor for the next page.",
		Annotations: readOnly,
	}, func(ctx context.Context, b Backend, in ListArgs) (MemoryPage, string, error) {
		q := ListQuery{AgentID: in.AgentID, Type: in.Type, Cursor: in.Cursor}
		if in.Limit != nil {
			q.Limit = *in.Limit
			if q.Limit < 1 || q.Limit > memory.MaxListLimit {
				return MemoryPage{}, "", domain.Invalid("limit", "limit must be an integer from 1 to %d, got %d", memory.MaxListLimit, q.Limit).WithDetail("limit", memory.MaxListLimit)
			}
		}
		p, err := b.ListMemories(ctx, q)
		if err != nil {
			return p, "", err
		}
		lines := []string{fmt.Sprintf("%d memories", len(p.Items))}
		for _, m := range p.Items {
			lines = append(lines, fmt.Sprintf("%s %s: %s", m.Type, m.ID, summary(m.Content)))
		}
		if p.NextCursor != "" {
			lines = append(lines, "more: cursor "+p.NextCursor)
		}
		return p, strings.Join(lines, "\n"), nil
	})
	addTool(h, s, &sdk.Tool{
		Name:        "update_memory",
		Title:       "Update a memory",
		Description: "Change some content fields and/or the tags of one memory, if it is still at the version you read (get_memory). Fields not in the patch keep their values. A stale version fails with precondition_failed: read the memory again and retry.",
		Annotations: destructive,
	}, func(ctx context.Context, b Backend, in UpdateArgs) (Memory, string, error) {
		if in.Version < 1 {
			return Memory{}, "", domain.Invalid("version", "version is required: the memory's version from get_memory")
		}
		var content json.RawMessage
		if in.Patch.Content != nil {
			var err error
			if content, err = rawObject(in.Patch.Content); err != nil {
				return Memory{}, "", err
			}
		}
		if _, err := agentMemory(ctx, b, in.MemoryArgs); err != nil {
			return Memory{}, "", err
		}
		m, err := b.UpdateMemory(ctx, in.ID, in.Version, Patch{Content: content, Tags: in.Patch.Tags})
		return m, fmt.Sprintf("updated %s %s to version %d", m.Type, m.ID, m.Version), err
	})
	addTool(h, s, &sdk.Tool{
		Name:        "forget_memory",
		Title:       "Forget a memory",
		Description: "Forget one memory: it leaves search and listings but is kept and can be recovered. Nothing is ever purged through this tool.",
		Annotations: destructive,
	}, func(ctx context.Context, b Backend, in ForgetArgs) (ForgetResult, string, error) {
		if _, err := agentMemory(ctx, b, in.MemoryArgs); err != nil {
			return ForgetResult{}, "", err
		}
		var version int64
		if in.Version != nil {
			version = *in.Version
		}
		m, err := b.ForgetMemory(ctx, in.ID, version)
		return ForgetResult{Memory: m, Reason: in.Reason}, fmt.Sprintf("forgot %s %s (recoverable)", m.Type, m.ID), err
	})
	addTool(h, s, &sdk.Tool{
		Name:        "review_suggestions",
		Title:       "Review suggestions",
		Description: "Memory processing proposes new memories as suggestions. action list shows the pending ones; accept turns one into a memory; reject discards it (give a reason).",
		Annotations: additive,
	}, h.review)
	addTool(h, s, &sdk.Tool{
		Name:        "memory_status",
		Title:       "Memory status",
		Description: "What a session start wants to know: how many memories of each type, raw entries waiting for processing, pending suggestions, the anxiety level and its top recommendations.",
		Annotations: readOnly,
	}, func(ctx context.Context, b Backend, in AgentArgs) (StatusResult, string, error) {
		st, err := status(ctx, b, in.AgentID)
		return st, statusText(st), err
	})
}

func (h *handlers) review(ctx context.Context, b Backend, in ReviewArgs) (ReviewResult, string, error) {
	switch in.Action {
	case "list":
		list, err := b.PendingSuggestions(ctx, in.AgentID, pendingSuggestionsShown)
		if err != nil {
			return ReviewResult{}, "", err
		}
		if list == nil {
			list = []Suggestion{}
		}
		lines := []string{fmt.Sprintf("%d pending suggestions", len(list))}
		for _, s := range list {
			lines = append(lines, fmt.Sprintf("%s: %s %s (confidence %.2f)", s.ID, s.MemoryType, summary(s.Content), s.Confidence))
		}
		return ReviewResult{Suggestions: list}, strings.Join(lines, "\n"), nil
	case "accept", "reject":
	default:
		return ReviewResult{}, "", domain.Invalid("action", "action must be list, accept or reject, got %q", in.Action)
	}
	if in.SuggestionID == "" {
		return ReviewResult{}, "", domain.Invalid("suggestion_id", "suggestion_id is required to %s a suggestion", in.Action)
	}
	sg, err := b.Suggestion(ctx, in.SuggestionID)
	if err != nil {
		return ReviewResult{}, "", err
	}
	if sg.AgentID != in.AgentID {
		return ReviewResult{}, "", domain.NotFound("suggestion")
	}
	if in.Action == "reject" {
		sg, err := b.RejectSuggestion(ctx, in.SuggestionID, in.Reason)
		return ReviewResult{Suggestion: &sg}, "rejected suggestion " + sg.ID, err
	}
	acc, err := b.AcceptSuggestion(ctx, in.SuggestionID)
	return ReviewResult{Suggestion: &acc.Suggestion, Memory: &acc.Memory}, fmt.Sprintf("accepted suggestion %s as %s %s", acc.Suggestion.ID, acc.Memory.Type, acc.Memory.ID), err
}

// agentMemory reads the memory args name: a memory of another agent, or
// of another type, does not exist for them.
func agentMemory(ctx context.Context, b Backend, in MemoryArgs) (Memory, error) {
	t, ok := memory.ParseType(in.Type)
	if !ok {
		return Memory{}, domain.Invalid("type", "unknown memory type %q", in.Type)
	}
	if in.ID == "" {
		return Memory{}, domain.Invalid("id", "id is required")
	}
	m, err := b.GetMemory(ctx, in.ID)
	if err != nil {
		return Memory{}, err
	}
	if m.AgentID != in.AgentID || m.Type != string(t) {
		return Memory{}, domain.NotFound("memory")
	}
	return m, nil
}

// status is memory_status' answer, which the session_start prompt opens with.
func status(ctx context.Context, b Backend, agentID string) (StatusResult, error) {
	st, err := b.Stats(ctx, agentID)
	if err != nil {
		return StatusResult{}, err
	}
	anx, err := b.Anxiety(ctx, agentID)
	if err != nil {
		return StatusResult{}, err
	}
	if len(anx.Recommendations) > topRecommendations {
		anx.Recommendations = anx.Recommendations[:topRecommendations]
	}
	return StatusResult{AgentID: agentID, Stats: st, Anxiety: anx}, nil
}

// topRecommendations is how many anxiety recommendations the status shows.
const topRecommendations = 3

// searchText is search_memories' text: the count, then one line per
// result (score, type, id and summary), and the degradation if any. It is
// written into one buffer: a fmt.Sprintf per line and a join cost more
// than the summaries themselves.
func searchText(r SearchResults) string {
	var text strings.Builder
	text.Grow(16 + 128*len(r.Results))
	var num [32]byte
	text.Write(strconv.AppendInt(num[:0], int64(len(r.Results)), 10))
	text.WriteString(" results")
	for _, res := range r.Results {
		text.WriteByte('\n')
		text.Write(strconv.AppendFloat(num[:0], res.Score, 'f', 2, 64)) // as %.2f writes it
		text.WriteByte(' ')
		text.WriteString(res.Type)
		text.WriteByte(' ')
		text.WriteString(res.ID)
		text.WriteString(": ")
		text.WriteString(rawSummary(res.Content))
	}
	if r.Degraded != "" {
		text.WriteString("\ndegraded: ")
		text.WriteString(r.Degraded)
	}
	return text.String()
}

func statusText(st StatusResult) string {
	lines := []string{fmt.Sprintf("%s: %d memories, %d raw entries unprocessed, %d suggestions pending; anxiety %s (%d)",
		st.AgentID, st.Stats.Total, st.Stats.Unprocessed, st.Stats.Suggestions["pending"], st.Anxiety.Level, st.Anxiety.Score)}
	for _, r := range st.Anxiety.Recommendations {
		lines = append(lines, fmt.Sprintf("- [%s] %s", r.Priority, r.Description))
	}
	return strings.Join(lines, "\n")
}

// summary is a memory's content in one short line: its first non-empty
// text among the fields that name or state a memory.
func summary(content map[string]any) string {
	return firstText(content["statement"], content["objective"], content["title"], content["content"],
		content["name"], content["entity_name"], content["drive_type"])
}

// rawSummary is summary of a content object as stored, read from its
// bytes (objectMembers) without decoding the fields a summary never shows.
// Stored content is the JSON the commands wrote; content the walk cannot
// read has no summary.
func rawSummary(content json.RawMessage) string {
	var fields [7][]byte // statement, objective, title, content, name, entity_name, drive_type
	if !objectMembers(content, func(key, value []byte) bool {
		switch string(key) {
		case "statement":
			fields[0] = value
		case "objective":
			fields[1] = value
		case "title":
			fields[2] = value
		case "content":
			fields[3] = value
		case "name":
			fields[4] = value
		case "entity_name":
			fields[5] = value
		case "drive_type":
			fields[6] = value
		}
		return true
	}) {
		return ""
	}
	for _, field := range fields {
		if text, ok := jsonText(field); ok && text != "" {
			return shortText(text)
		}
	}
	return ""
}

// firstText is the first non-empty string of values, cut by shortText.
func firstText(values ...any) string {
	for _, value := range values {
		if v, ok := value.(string); ok && v != "" {
			return shortText(v)
		}
	}
	return ""
}

// shortText is text cut to 160 runes.
func shortText(text string) string {
	const most = 160
	if utf8.RuneCountInString(text) <= most {
		return text
	}
	runes := 0
	for i := range text {
		if runes == most {
			return text[:i] + "…"
		}
		runes++
	}
	return text
}

// rawObject is a content object as the JSON the commands take.
func rawObject(content map[string]any) (json.RawMessage, error) {
	if content == nil {
		return nil, nil
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return nil, domain.Invalid("content", "content must be a JSON object")
	}
	return raw, nil
}

func ptr[T any](v T) *T { return &v }

// addTool registers a tool whose arguments are In and answer Out. The
// arguments are decoded as strictly as an API request body (errors name
// the field), checked against the connection's agent binding, and handed
// to run; its answer is the structured content and the text the model
// reads, its error an isError result carrying the API's error code and
// message.
func addTool[In agentArg, Out any](h *handlers, s *Server, t *sdk.Tool, run func(context.Context, Backend, In) (Out, string, error)) {
	// The schemas are kept as JSON: on every call of the 2026-07-28
	// revision the SDK reads the input schema's properties (for its
	// Mcp-Param headers) by marshalling it, which a schema tree costs far
	// more than JSON does.
	t.InputSchema = schemaJSON(schemaFor[In]())
	t.OutputSchema = schemaJSON(outputSchemaFor[Out]())
	call := func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult) {
		if h.calls != nil {
			defer func() { h.calls.ToolCalled(t.Name, res == nil || res.IsError) }()
		}
		ctx, b, bound := h.backend(ctx, req.Extra)
		var in In
		if err := api.DecodeArguments(req.Params.Arguments, &in); err != nil {
			return h.failure(ctx, t.Name, err)
		}
		if err := checkAgent(bound, in.agent()); err != nil {
			return h.failure(ctx, t.Name, err)
		}
		ctx, written := commands.TrackPositions(ctx)
		ctx, relayed := trackRelayedTokens(ctx)
		out, text, err := run(ctx, b, in)
		if err != nil {
			return h.failure(ctx, t.Name, err)
		}
		res = &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, StructuredContent: out}
		if last := written.Last(); last > 0 {
			res.Meta = sdk.Meta{ConsistencyTokenMeta: api.FormatConsistencyToken(last)}
		} else if token := relayed.lastToken(); token != "" {
			res.Meta = sdk.Meta{ConsistencyTokenMeta: token}
		}
		return res
	}
	s.direct.tools[t.Name] = call
	s.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return call(ctx, req), nil
	})
}

// checkAgent checks agent_id as POST /v1/search does (required, agent id
// syntax), then the connection's binding.
func checkAgent(bound, agentID string) error {
	if err := memory.ValidateAgentID(agentID); err != nil {
		return err
	}
	return checkBinding(bound, agentID)
}

// checkBinding refuses an agent other than the one the connection is
// bound to.
func checkBinding(bound, agentID string) error {
	if bound != "" && agentID != bound {
		return domain.Invalid("agent_id", "this connection is bound to agent %q; agent_id must be %q", bound, bound)
	}
	return nil
}

// failure is the isError result of err: the API's error code, message and
// details, never an internal error's detail (which goes to the log).
func (h *handlers) failure(ctx context.Context, tool string, err error) *sdk.CallToolResult {
	f, _, internal := api.PublicFailure(err)
	if internal {
		h.logger.ErrorContext(ctx, "mcp tool failed", "tool", tool, "error", err)
	}
	return &sdk.CallToolResult{
		IsError:           true,
		Content:           []sdk.Content{&sdk.TextContent{Text: f.Code + ": " + f.Message}},
		StructuredContent: map[string]any{"error": f},
	}
}

// schemaFor is the JSON Schema of T, inferred from its fields and their
// jsonschema descriptions.
func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: rawObjectSchemas()})
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %T: %v", *new(T), err)) // a programming error, caught by every test
	}
	return s
}

// rawObjectSchemas give a content object carried as raw JSON
// (json.RawMessage) the schema of the map it would otherwise be decoded
// into: an object of any fields.
func rawObjectSchemas() map[reflect.Type]*jsonschema.Schema {
	s, err := jsonschema.For[map[string]any](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of a content object: %v", err)) // a programming error, caught by every test
	}
	return map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[json.RawMessage](): s}
}

// schemaJSON is s as JSON.
func schemaJSON(s *jsonschema.Schema) json.RawMessage {
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("mcp: marshal schema: %v", err)) // a programming error, caught by every test
	}
	return raw
}

// outputSchemaFor is a tool's output schema: Out's, or the error
// envelope of a failed call (clients validate the structured content of
// errors too).
func outputSchemaFor[Out any]() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{schemaFor[Out](), errorSchema()}}
}

func errorSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:     "object",
		Required: []string{"error"},
		Properties: map[string]*jsonschema.Schema{"error": {
			Type:        "object",
			Description: "the API's error envelope: code (e.g. not_found, invalid_request, rate_limited), message, and details such as the field at fault",
			Required:    []string{"code", "message"},
			Properties: map[string]*jsonschema.Schema{
				"code":    {Type: "string"},
				"message": {Type: "string"},
				"details": {Type: "object"},
			},
		}},
	}
}

// handlers hold what every tool, resource and prompt needs.
type handlers struct {
	backend func(ctx context.Context, extra *sdk.RequestExtra) (context.Context, Backend, string)
	logger  *slog.Logger
	calls   ToolObserver // nil: none
}
