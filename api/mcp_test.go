package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/api"
	apimcp "github.com/engram-memory/engram/api/mcp"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// The protocol revisions /mcp serves, as a client of each negotiates them:
// 2025-11-25 with the initialize handshake and a session, 2026-07-28 with
// server/discover and no session (the SDK's stateless mode).
var mcpRevisions = []struct {
	name      string
	requested string // ClientSessionOptions.ProtocolVersion
	want      string // the revision negotiated
	session   bool   // whether the server keeps a session
}{
	{"session mode 2025-11-25", "2025-11-25", "2025-11-25", true},
	{"stateless 2026-07-28", "2026-07-28", "2026-07-28", false},
}

// bearerTransport adds a bearer credential to every request.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpClient is a session of the SDK's own client with /mcp?query, as key.
func (s *stack) mcpClient(t testing.TB, key, query, revision string) *sdk.ClientSession {
	t.Helper()
	cs, err := s.connectMCP(key, query, revision)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func (s *stack) connectMCP(key, query, revision string) (*sdk.ClientSession, error) {
	transport := &sdk.StreamableClientTransport{Endpoint: s.srv.URL + "/mcp" + query, HTTPClient: &http.Client{Transport: bearerTransport{key}}, MaxRetries: -1}
	c := sdk.NewClient(&sdk.Implementation{Name: "engram-test", Version: "1"}, nil)
	return c.Connect(context.Background(), transport, &sdk.ClientSessionOptions{ProtocolVersion: revision})
}

// toolCall is one tool call's answer.
type toolCall struct {
	res  *sdk.CallToolResult
	data map[string]any // structuredContent
}

// errorCode is the API error code of a failed call ("" on success).
func (c toolCall) errorCode() string {
	e, _ := c.data["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func (c toolCall) errorField() string {
	e, _ := c.data["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	f, _ := d["field"].(string)
	return f
}

func (c toolCall) text() string {
	if len(c.res.Content) == 0 {
		return ""
	}
	tc, _ := c.res.Content[0].(*sdk.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

// call calls a tool, checks the answer against the tool's declared output
// schema, and returns it.
func callTool(t testing.TB, cs *sdk.ClientSession, schemas map[string]*jsonschema.Resolved, name string, args any) toolCall {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var data map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &data); err != nil || data == nil {
		t.Fatalf("%s: structuredContent is not an object: %s", name, raw)
	}
	if schema := schemas[name]; schema != nil {
		var v any
		_ = json.Unmarshal(raw, &v)
		if err := schema.Validate(v); err != nil {
			t.Fatalf("%s: structuredContent does not match the output schema: %v\n%s", name, err, raw)
		}
	}
	c := toolCall{res: res, data: data}
	if res.IsError != (c.errorCode() != "") {
		t.Fatalf("%s: isError %v but structuredContent %s", name, res.IsError, raw)
	}
	return c
}

// ok fails unless the call succeeded.
func (c toolCall) ok(t testing.TB) toolCall {
	t.Helper()
	if c.res.IsError {
		t.Fatalf("tool failed: %s", c.text())
	}
	return c
}

// fails fails unless the call failed with code (and, when given, field).
func (c toolCall) fails(t testing.TB, code, field string) {
	t.Helper()
	if !c.res.IsError || c.errorCode() != code || (field != "" && c.errorField() != field) {
		t.Fatalf("got isError=%v code %q field %q, want %s %q: %s", c.res.IsError, c.errorCode(), c.errorField(), code, field, c.text())
	}
	if !strings.HasPrefix(c.text(), code+": ") {
		t.Fatalf("text %q does not start with the code %s", c.text(), code)
	}
}

func str(m map[string]any, key string) string { v, _ := m[key].(string); return v }

// toolSchemas lists the tools, checks each declares what a model needs
// (input and output schemas with descriptions, annotations), and returns
// their output schemas resolved.
func toolSchemas(t testing.TB, cs *sdk.ClientSession) map[string]*jsonschema.Resolved {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	out := map[string]*jsonschema.Resolved{}
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.Annotations == nil || tool.Annotations.DestructiveHint == nil && !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: description or annotations missing: %+v", tool.Name, tool.Annotations)
		}
		var in, outSchema jsonschema.Schema
		remarshal(t, tool.InputSchema, &in)
		remarshal(t, tool.OutputSchema, &outSchema)
		if in.Properties["agent_id"] == nil || in.Properties["agent_id"].Description == "" || !slices.Contains(in.Required, "agent_id") {
			t.Errorf("%s: agent_id is not a described, required argument: %+v", tool.Name, in.Properties["agent_id"])
		}
		for name, p := range in.Properties {
			if p.Description == "" {
				t.Errorf("%s: argument %s has no description", tool.Name, name)
			}
		}
		resolved, err := outSchema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		out[tool.Name] = resolved
	}
	slices.Sort(names)
	want := []string{"add_memory", "capture", "forget_memory", "get_memory", "list_memories", "memory_status", "review_suggestions", "search_memories", "update_memory"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	annotations := map[string]string{}
	for _, tool := range list.Tools {
		a := tool.Annotations
		annotations[tool.Name] = fmt.Sprintf("ro=%v destructive=%v idempotent=%v", a.ReadOnlyHint, a.DestructiveHint != nil && *a.DestructiveHint, a.IdempotentHint)
	}
	for name, want := range map[string]string{
		"search_memories": "ro=true destructive=false idempotent=false", "get_memory": "ro=true destructive=false idempotent=false",
		"add_memory": "ro=false destructive=false idempotent=false", "forget_memory": "ro=false destructive=true idempotent=true",
		"update_memory": "ro=false destructive=true idempotent=true",
	} {
		if annotations[name] != want {
			t.Errorf("%s annotations %s, want %s", name, annotations[name], want)
		}
	}
	return out
}

func remarshal(t testing.TB, from, to any) {
	t.Helper()
	raw, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(raw, to)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Every tool, over both revisions, on the same commands as the REST API:
// what add_memory writes, search_memories finds as soon as it returns, and
// the REST API shows.
func TestMCPToolsOverHTTP(t *testing.T) {
	t.Parallel()
	for _, rev := range mcpRevisions {
		t.Run(rev.name, func(t *testing.T) {
			s := newStack(t, stackOptions{fixedAuth: true})
			cs := s.mcpClient(t, aliceKey, "", rev.requested)
			if got := cs.InitializeResult().ProtocolVersion; got != rev.want {
				t.Fatalf("negotiated %s, want %s", got, rev.want)
			}
			if (cs.ID() != "") != rev.session {
				t.Fatalf("session id %q, want a session: %v", cs.ID(), rev.session)
			}
			schemas := toolSchemas(t, cs)
			call := func(name string, args map[string]any) toolCall { return callTool(t, cs, schemas, name, args) }

			added := call("add_memory", map[string]any{"agent_id": "claire", "type": "beliefs", "content": map[string]any{"statement": "Postgres vacuum needs tuning on busy tables"}, "tags": []string{"db"}}).ok(t)
			id := str(added.data, "id")
			if str(added.data, "type") != "belief" || id == "" || !strings.Contains(added.text(), id) {
				t.Fatalf("add_memory: %v / %s", added.data, added.text())
			}
			// Read-your-writes: visible to search when the tool returns.
			found := call("search_memories", map[string]any{"agent_id": "claire", "query": "vacuum tuning", "tags": []string{"db"}}).ok(t)
			results, _ := found.data["results"].([]any)
			if len(results) != 1 || str(results[0].(map[string]any), "id") != id {
				t.Fatalf("search: %v", found.data)
			}
			r0 := results[0].(map[string]any)
			if r0["strength"] == nil || r0["score"] == nil || r0["content"].(map[string]any)["statement"] == nil || str(r0, "created_at") == "" {
				t.Fatalf("search result lacks fields: %v", r0)
			}
			// The server's time for the search, as POST /v1/search reports it.
			if us, ok := found.data["query_time_us"].(float64); !ok || us <= 0 || found.data["query_time_ms"] != math.Floor(us/1000) {
				t.Fatalf("search_memories reports no server time: %v", found.data)
			}
			// The same write through REST reads the same.
			var rest struct {
				Version int64 `json:"version"`
				AgentID string
			}
			s.must(http.StatusOK, "GET", "/v1/memories/"+id, aliceKey, nil).must(t, http.StatusOK, &rest)

			derived := call("add_memory", map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "vacuum runbook"}, "derived_from": []string{"belief:" + id}}).ok(t)
			got := call("get_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": id}).ok(t)
			mem := got.data["memory"].(map[string]any)
			prov := got.data["provenance"].(map[string]any)
			if int64(mem["version"].(float64)) != rest.Version || len(prov["derived"].([]any)) != 1 || str(prov["derived"].([]any)[0].(map[string]any), "id") != str(derived.data, "id") {
				t.Fatalf("get_memory: %v", got.data)
			}

			updated := call("update_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": id, "version": rest.Version, "patch": map[string]any{"content": map[string]any{"confidence": 0.9}, "tags": []string{"db", "ops"}}}).ok(t)
			if int64(updated.data["version"].(float64)) != rest.Version+1 || updated.data["content"].(map[string]any)["confidence"] != 0.9 || updated.data["content"].(map[string]any)["statement"] == nil {
				t.Fatalf("update_memory: %v", updated.data)
			}
			call("update_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": id, "version": rest.Version, "patch": map[string]any{"tags": []string{"x"}}}).fails(t, "precondition_failed", "")

			list := call("list_memories", map[string]any{"agent_id": "claire", "type": "notes"}).ok(t)
			if items := list.data["items"].([]any); len(items) != 1 {
				t.Fatalf("list_memories: %v", list.data)
			}

			captured := call("capture", map[string]any{"agent_id": "claire", "text": "remember to check the autovacuum logs"}).ok(t)
			var raw struct {
				Content struct{ Source string } `json:"content"`
			}
			s.must(http.StatusOK, "GET", "/v1/memories/"+str(captured.data, "id"), aliceKey, nil).must(t, http.StatusOK, &raw)
			if raw.Content.Source != "mcp" {
				t.Fatalf("captured raw entry source %q, want mcp", raw.Content.Source)
			}

			forgotten := call("forget_memory", map[string]any{"agent_id": "claire", "type": "note", "id": str(derived.data, "id"), "reason": "superseded"}).ok(t)
			if forgotten.data["memory"].(map[string]any)["forgotten"] != true || str(forgotten.data, "reason") != "superseded" {
				t.Fatalf("forget_memory: %v", forgotten.data)
			}
			// Recoverable: the REST API still has it, forgotten.
			s.must(http.StatusOK, "GET", "/v1/memories/"+str(derived.data, "id"), aliceKey, nil)

			status := call("memory_status", map[string]any{"agent_id": "claire"}).ok(t)
			stats := status.data["stats"].(map[string]any)
			if stats["total"].(float64) != 3 || stats["forgotten"].(float64) != 1 || status.data["anxiety"].(map[string]any)["level"] == "" || !strings.Contains(status.text(), "anxiety") {
				t.Fatalf("memory_status: %v\n%s", status.data, status.text())
			}

			// Suggestions from a processing pass, reviewed over MCP.
			s.raws(t, aliceKey, "claire", goldenRaw...)
			s.process(t, aliceKey, "claire", map[string]any{"force": true})
			pending := call("review_suggestions", map[string]any{"agent_id": "claire", "action": "list"}).ok(t)
			sgs := pending.data["suggestions"].([]any)
			if len(sgs) != 3 {
				t.Fatalf("review list: %v", pending.data)
			}
			accepted := call("review_suggestions", map[string]any{"agent_id": "claire", "action": "accept", "suggestion_id": str(sgs[0].(map[string]any), "id")}).ok(t)
			if str(accepted.data["memory"].(map[string]any), "id") == "" {
				t.Fatalf("accept: %v", accepted.data)
			}
			rejected := call("review_suggestions", map[string]any{"agent_id": "claire", "action": "reject", "suggestion_id": str(sgs[1].(map[string]any), "id"), "reason": "noise"}).ok(t)
			if str(rejected.data["suggestion"].(map[string]any), "status") != "rejected" {
				t.Fatalf("reject: %v", rejected.data)
			}
			if left := s.suggestions(t, aliceKey, "claire", "?status=pending"); len(left) != 1 {
				t.Fatalf("pending after review: %v", left)
			}
		})
	}
}

// Every tool's failures: isError results with the API's code, naming the
// field as the API does, never an internal detail.
func TestMCPToolErrors(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	cs := s.mcpClient(t, aliceKey, "", "2025-11-25")
	schemas := toolSchemas(t, cs)
	belief := s.create(t, aliceKey, "claire", "belief", map[string]any{"statement": "s"}).ID
	other := s.create(t, aliceKey, "other", "belief", map[string]any{"statement": "s"}).ID
	for _, c := range []struct {
		name, tool  string
		args        map[string]any
		code, field string
	}{
		{"add: agent_id missing", "add_memory", map[string]any{"type": "belief", "content": map[string]any{"statement": "x"}}, "invalid_request", "agent_id"},
		{"add: unknown type", "add_memory", map[string]any{"agent_id": "claire", "type": "thought", "content": map[string]any{"statement": "x"}}, "invalid_request", "type"},
		{"add: content field missing", "add_memory", map[string]any{"agent_id": "claire", "type": "belief", "content": map[string]any{}}, "invalid_request", "content.statement"},
		{"add: unknown argument", "add_memory", map[string]any{"agent_id": "claire", "type": "belief", "content": map[string]any{"statement": "x"}, "user_id": "u"}, "invalid_request", "user_id"},
		{"add: argument of the wrong type", "add_memory", map[string]any{"agent_id": "claire", "type": "belief", "content": "x"}, "invalid_request", "content"},
		{"add: bad agent id", "add_memory", map[string]any{"agent_id": "no/slash", "type": "belief", "content": map[string]any{"statement": "x"}}, "invalid_request", "agent_id"},
		{"capture: text missing", "capture", map[string]any{"agent_id": "claire"}, "invalid_request", "content.content"},
		{"search: query missing", "search_memories", map[string]any{"agent_id": "claire"}, "invalid_request", "query"},
		{"search: bad mode", "search_memories", map[string]any{"agent_id": "claire", "query": "q", "mode": "fuzzy"}, "invalid_request", "mode"},
		{"search: bad limit", "search_memories", map[string]any{"agent_id": "claire", "query": "q", "limit": 0}, "invalid_request", "limit"},
		{"search: bad time", "search_memories", map[string]any{"agent_id": "claire", "query": "q", "created_after": "yesterday"}, "invalid_request", "created_after"},
		{"get: unknown id", "get_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": "nope"}, "not_found", ""},
		{"get: another agent's memory", "get_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": other}, "not_found", ""},
		{"get: wrong type", "get_memory", map[string]any{"agent_id": "claire", "type": "note", "id": belief}, "not_found", ""},
		{"get: unknown type", "get_memory", map[string]any{"agent_id": "claire", "type": "thought", "id": belief}, "invalid_request", "type"},
		{"list: bad limit", "list_memories", map[string]any{"agent_id": "claire", "type": "belief", "limit": 5000}, "invalid_request", "limit"},
		{"list: bad type", "list_memories", map[string]any{"agent_id": "claire", "type": "thought"}, "invalid_request", "type"},
		{"update: version missing", "update_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": belief, "patch": map[string]any{}}, "invalid_request", "version"},
		{"update: bad content", "update_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": belief, "version": 1, "patch": map[string]any{"content": map[string]any{"confidence": 7}}}, "invalid_request", "content.confidence"},
		{"update: another agent's memory", "update_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": other, "version": 1, "patch": map[string]any{"tags": []string{"x"}}}, "not_found", ""},
		{"forget: stale version", "forget_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": belief, "version": 9}, "precondition_failed", ""},
		{"forget: unknown id", "forget_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": "nope"}, "not_found", ""},
		{"review: bad action", "review_suggestions", map[string]any{"agent_id": "claire", "action": "approve"}, "invalid_request", "action"},
		{"review: suggestion missing", "review_suggestions", map[string]any{"agent_id": "claire", "action": "accept"}, "invalid_request", "suggestion_id"},
		{"review: unknown suggestion", "review_suggestions", map[string]any{"agent_id": "claire", "action": "reject", "suggestion_id": "nope"}, "not_found", ""},
		{"status: agent_id missing", "memory_status", map[string]any{}, "invalid_request", "agent_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			callTool(t, cs, schemas, c.tool, c.args).fails(t, c.code, c.field)
		})
	}
	// A malformed protocol message is a JSON-RPC error, not a tool result.
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Fatal("an unknown tool answered")
	}
}

// User B's key sees none of user A's agents, through any tool, resource or
// prompt: A's agent does not exist for B, as on the REST API.
func TestMCPTenantIsolation(t *testing.T) {
	t.Parallel()
	for _, rev := range mcpRevisions {
		t.Run(rev.name, func(t *testing.T) {
			s := newStack(t, stackOptions{fixedAuth: true})
			id := s.create(t, aliceKey, "claire", "belief", map[string]any{"statement": "alice's secret belief"}).ID
			s.raws(t, aliceKey, "claire", goldenRaw...)
			s.process(t, aliceKey, "claire", map[string]any{"force": true})
			sg := s.suggestions(t, aliceKey, "claire", "?status=pending")[0].ID

			bob := s.mcpClient(t, bobKey, "", rev.requested)
			schemas := toolSchemas(t, bob)
			ctx := context.Background()
			restCode := func(method, path string, body any) string { return s.call(method, path, bobKey, body).errorCode() }
			for _, c := range []struct {
				tool string
				args map[string]any
				rest string // the REST API's answer to bob for the same
			}{
				{"get_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": id}, restCode("GET", "/v1/memories/"+id, nil)},
				{"update_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": id, "version": 1, "patch": map[string]any{"tags": []string{"x"}}}, restCode("PATCH", "/v1/memories/"+id, map[string]any{"tags": []string{"x"}})},
				{"forget_memory", map[string]any{"agent_id": "claire", "type": "belief", "id": id}, restCode("DELETE", "/v1/memories/"+id, nil)},
				{"memory_status", map[string]any{"agent_id": "claire"}, restCode("GET", "/v1/agents/claire/stats", nil)},
				{"review_suggestions", map[string]any{"agent_id": "claire", "action": "accept", "suggestion_id": sg}, restCode("POST", "/v1/suggestions/"+sg+"/accept", nil)},
			} {
				if c.rest != "not_found" {
					t.Fatalf("REST %s answers bob %q", c.tool, c.rest)
				}
				callTool(t, bob, schemas, c.tool, c.args).fails(t, c.rest, "")
			}
			// Reads that answer an empty agent on REST answer it empty here.
			found := callTool(t, bob, schemas, "search_memories", map[string]any{"agent_id": "claire", "query": "secret belief"})
			if results, _ := found.data["results"].([]any); !found.res.IsError && len(results) != 0 {
				t.Fatalf("bob's search found alice's memories: %v", found.data)
			}
			listed := callTool(t, bob, schemas, "list_memories", map[string]any{"agent_id": "claire", "type": "belief"})
			if items, _ := listed.data["items"].([]any); !listed.res.IsError && len(items) != 0 {
				t.Fatalf("bob's list found alice's memories: %v", listed.data)
			}
			pending := callTool(t, bob, schemas, "review_suggestions", map[string]any{"agent_id": "claire", "action": "list"})
			if sgs, _ := pending.data["suggestions"].([]any); !pending.res.IsError && len(sgs) != 0 {
				t.Fatalf("bob sees alice's suggestions: %v", pending.data)
			}
			for _, uri := range []string{"engram://agents/claire/stats", "engram://agents/claire/settings"} {
				if res, err := bob.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil {
					t.Fatalf("bob read %s: %s", uri, res.Contents[0].Text)
				}
			}
			if res, err := bob.GetPrompt(ctx, &sdk.GetPromptParams{Name: "session_start", Arguments: map[string]string{"agent_id": "claire"}}); err == nil {
				t.Fatalf("bob got alice's session_start: %v", res.Messages[0].Content)
			}
			// Alice reaches all of it.
			alice := s.mcpClient(t, aliceKey, "", rev.requested)
			if _, err := alice.ReadResource(ctx, &sdk.ReadResourceParams{URI: "engram://agents/claire/stats"}); err != nil {
				t.Fatal(err)
			}
			prompt, err := alice.GetPrompt(ctx, &sdk.GetPromptParams{Name: "session_start", Arguments: map[string]string{"agent_id": "claire"}})
			if err != nil {
				t.Fatal(err)
			}
			if text := prompt.Messages[0].Content.(*sdk.TextContent).Text; !strings.Contains(text, "alice's secret belief") || !strings.Contains(text, "## Status") {
				t.Fatalf("session_start:\n%s", text)
			}
		})
	}
}

// /mcp?agent_id=claire binds the connection: tools, resources and the
// prompt refuse any other agent, and the session cannot be carried to an
// unbound connection.
func TestMCPAgentBinding(t *testing.T) {
	t.Parallel()
	for _, rev := range mcpRevisions {
		t.Run(rev.name, func(t *testing.T) {
			s := newStack(t, stackOptions{fixedAuth: true})
			cs := s.mcpClient(t, aliceKey, "?agent_id=claire", rev.requested)
			schemas := toolSchemas(t, cs)
			callTool(t, cs, schemas, "add_memory", map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "ok"}}).ok(t)
			for _, tool := range []struct {
				name string
				args map[string]any
			}{
				{"add_memory", map[string]any{"agent_id": "mallory", "type": "note", "content": map[string]any{"content": "no"}}},
				{"capture", map[string]any{"agent_id": "mallory", "text": "no"}},
				{"search_memories", map[string]any{"agent_id": "mallory", "query": "q"}},
				{"memory_status", map[string]any{"agent_id": "mallory"}},
				{"list_memories", map[string]any{"agent_id": "mallory", "type": "note"}},
			} {
				callTool(t, cs, schemas, tool.name, tool.args).fails(t, "invalid_request", "agent_id")
			}
			ctx := context.Background()
			if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "engram://agents/mallory/stats"}); err == nil {
				t.Fatal("a bound connection read another agent's stats")
			}
			if _, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "session_start", Arguments: map[string]string{"agent_id": "mallory"}}); err == nil {
				t.Fatal("a bound connection got another agent's session_start")
			}
			var page struct{ Memories []any }
			s.must(http.StatusOK, "GET", "/v1/memories?agent_id=mallory", aliceKey, nil).must(t, http.StatusOK, &page)
			if len(page.Memories) != 0 {
				t.Fatalf("mallory has %d memories", len(page.Memories))
			}
			if rev.session {
				// The session, carried to /mcp without the binding or to
				// another user's key, is refused.
				for _, c := range []struct{ key, query string }{{aliceKey, ""}, {bobKey, "?agent_id=claire"}, {aliceKey, "?agent_id=claire"}} {
					body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"}}}`
					req, _ := http.NewRequest("POST", s.srv.URL+"/mcp"+c.query, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+c.key)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Mcp-Session-Id", cs.ID())
					req.Header.Set("Mcp-Protocol-Version", rev.want)
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					res.Body.Close()
					// Only the session's own user and binding are answered.
					if own := c.key == aliceKey && c.query != ""; (res.StatusCode == http.StatusOK) != own {
						t.Fatalf("session of alice bound to claire, as %s%s: %d", c.key, c.query, res.StatusCode)
					}
				}
			}
		})
	}
}

// No credential or a bad one is 401 with a challenge naming the
// protected-resource metadata, and a bad one costs the client IP what it
// costs on the API: the IP's bucket is the same.
func TestMCPAuthentication(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, ipLimit: api.RateLimit{PerSecond: 0.001, Burst: 2}})
	post := func(key string) response {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		req, _ := http.NewRequest("POST", s.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		return s.send(req)
	}
	metadata := s.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	none := post("")
	wantError(t, none, http.StatusUnauthorized, "unauthorized")
	if got := none.header.Get("WWW-Authenticate"); !strings.Contains(got, `Bearer `) || !strings.Contains(got, `resource_metadata="`+metadata+`"`) {
		t.Fatalf("WWW-Authenticate %q", got)
	}
	bad := post("not-a-key")
	wantError(t, bad, http.StatusUnauthorized, "unauthorized")
	if got := bad.header.Get("WWW-Authenticate"); !strings.Contains(got, `error="invalid_token"`) || !strings.Contains(got, "resource_metadata=") {
		t.Fatalf("WWW-Authenticate %q", got)
	}
	// The bad credential on /mcp and one on the API spend the IP's burst
	// of 2: /mcp refuses the IP now, and so does the API, whatever the
	// credential.
	wantError(t, s.call("GET", "/v1/agents", "still-not-a-key", nil), http.StatusUnauthorized, "unauthorized")
	wantError(t, post("not-a-key"), http.StatusTooManyRequests, "rate_limited")
	wantError(t, post(aliceKey), http.StatusTooManyRequests, "rate_limited")
	wantError(t, s.call("GET", "/v1/agents", aliceKey, nil), http.StatusTooManyRequests, "rate_limited")

	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		res, err := http.Get(s.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Resource       string   `json:"resource"`
			BearerMethods  []string `json:"bearer_methods_supported"`
			AuthorizeSrvrs []string `json:"authorization_servers"`
		}
		err = json.NewDecoder(res.Body).Decode(&doc)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || doc.Resource != s.srv.URL+"/mcp" || !slices.Equal(doc.BearerMethods, []string{"header"}) {
			t.Fatalf("%s: %d %+v %v", path, res.StatusCode, doc, err)
		}
	}
}

// The credential's rate limit counts MCP requests like API requests: one
// bucket per credential.
func TestMCPRateLimit(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, userLimit: api.RateLimit{PerSecond: 0.001, Burst: 8}})
	cs := s.mcpClient(t, aliceKey, "", "2026-07-28")
	var err error
	calls := 0
	for ; calls < 10 && err == nil; calls++ {
		_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "memory_status", Arguments: map[string]any{"agent_id": "claire"}})
	}
	if err == nil || !strings.Contains(err.Error(), "429") && !strings.Contains(err.Error(), "Too Many Requests") && !strings.Contains(err.Error(), "rate") {
		t.Fatalf("after %d calls: %v", calls, err)
	}
	wantError(t, s.call("GET", "/v1/agents", aliceKey, nil), http.StatusTooManyRequests, "rate_limited")
	// Another credential has its own bucket.
	s.must(http.StatusOK, "GET", "/v1/agents", bobKey, nil)
}

// An MCP write is a command like any other: its audit entry names the
// credential's actor, and a captured raw entry says source mcp.
func TestMCPAudit(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	cs := s.mcpClient(t, aliceKey, "", "2025-11-25")
	schemas := toolSchemas(t, cs)
	added := callTool(t, cs, schemas, "add_memory", map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "audited"}}).ok(t)
	captured := callTool(t, cs, schemas, "capture", map[string]any{"agent_id": "claire", "text": "jotted"}).ok(t)
	var page struct {
		Entries []struct {
			Operation string `json:"operation"`
			MemoryID  string `json:"memory_id"`
			Actor     string `json:"actor"`
			Source    string `json:"source"`
		} `json:"entries"`
	}
	var rest struct {
		ID string `json:"id"`
	}
	s.request(t, "POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "by REST"}}).must(t, http.StatusCreated, &rest)
	s.must(http.StatusOK, "GET", "/v1/agents/claire/audit", aliceKey, nil).must(t, http.StatusOK, &page)
	seen := map[string]string{}
	for _, e := range page.Entries {
		seen[e.MemoryID] = e.Actor + " " + e.Source
	}
	for id, want := range map[string]string{
		str(added.data, "id"):    "key:key-" + alice + " mcp",
		str(captured.data, "id"): "key:key-" + alice + " mcp",
		rest.ID:                  "key:key-" + alice + " api",
	} {
		if seen[id] != want {
			t.Fatalf("audit actor and source of %s = %q, want %q: %+v", id, seen[id], want, page.Entries)
		}
	}
	var raw struct {
		Content struct{ Source string } `json:"content"`
	}
	s.must(http.StatusOK, "GET", "/v1/memories/"+str(captured.data, "id"), aliceKey, nil).must(t, http.StatusOK, &raw)
	if raw.Content.Source != "mcp" {
		t.Fatalf("source %q, want mcp", raw.Content.Source)
	}
}

// 20 MCP sessions, of both revisions and two users (each user has
// sessions of both), write and search at once beside REST writers:
// nothing is lost, and no session sees another's memories. Twenty keep
// every agent written by several sessions of each user at once; fifty
// cost 2.5 times the CPU under the race detector and proved nothing more.
func TestMCPConcurrentSessions(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	const sessions, perSession, restWriters, perWriter = 20, 3, 5, 6
	keys := []string{aliceKey, bobKey}
	var wg sync.WaitGroup
	errs := make(chan error, sessions+restWriters)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- mcpSessionWorkload(s, keys[i%2], mcpRevisions[i/2%len(mcpRevisions)].requested, i, perSession)
		}()
	}
	for w := range restWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perWriter {
				r := s.request(t, "POST", "/v1/memories", keys[w%2], map[string]any{"agent_id": fmt.Sprintf("agent-%d", w%5), "type": "note", "content": map[string]any{"content": fmt.Sprintf("rest writer %d note %d", w, j)}, "tags": []string{"rest"}})
				if r.status != http.StatusCreated {
					errs <- fmt.Errorf("REST write: %d %s", r.status, r.raw)
					return
				}
			}
			errs <- nil
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// Every write is there, in its user's agents only.
	total := map[string]int{}
	for _, key := range keys {
		for a := range 5 {
			var st struct{ Total int }
			s.must(http.StatusOK, "GET", fmt.Sprintf("/v1/agents/agent-%d/stats", a), key, nil).must(t, http.StatusOK, &st)
			total[key] += st.Total
		}
	}
	// Writers 0, 2 and 4 are alice's, 1 and 3 bob's.
	wantAlice, wantBob := sessions/2*perSession+3*perWriter, sessions/2*perSession+2*perWriter
	if total[aliceKey] != wantAlice || total[bobKey] != wantBob {
		t.Fatalf("memories per user %v, want alice %d and bob %d", total, wantAlice, wantBob)
	}
}

// mcpSessionWorkload is one session's part: it adds perSession memories
// tagged with its own tag, then finds exactly those by the tag.
func mcpSessionWorkload(s *stack, key, revision string, i, perSession int) error {
	cs, err := s.connectMCP(key, "", revision)
	if err != nil {
		return fmt.Errorf("session %d: connect: %w", i, err)
	}
	defer cs.Close()
	ctx := context.Background()
	agent, tag := fmt.Sprintf("agent-%d", i%5), fmt.Sprintf("session-%d", i)
	var ids []string
	for j := range perSession {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "add_memory", Arguments: map[string]any{
			"agent_id": agent, "type": "note", "content": map[string]any{"content": fmt.Sprintf("concurrency probe %d of session %d", j, i)}, "tags": []string{tag},
		}})
		if err != nil || res.IsError {
			return fmt.Errorf("session %d: add: %v %v", i, err, res)
		}
		var c apimcp.Created
		raw, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(raw, &c)
		ids = append(ids, c.ID)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_memories", Arguments: map[string]any{"agent_id": agent, "query": "concurrency probe", "tags": []string{tag}, "mode": "keyword"}})
	if err != nil || res.IsError {
		return fmt.Errorf("session %d: search: %v %v", i, err, res)
	}
	var found apimcp.SearchResults
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &found)
	var got []string
	for _, r := range found.Results {
		got = append(got, r.ID)
	}
	slices.Sort(got)
	slices.Sort(ids)
	if !slices.Equal(got, ids) {
		return fmt.Errorf("session %d found %v, wrote %v", i, got, ids)
	}
	return nil
}

// Over a transport that authenticates nothing (stdio, in memory) the
// server acts for the backend's own caller and its Options.Agent binds.
func TestMCPInMemoryTransport(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	local := apimcp.Caller{Actor: domain.Actor{Kind: domain.ActorUser, ID: alice, UserID: alice}, RequestID: "mcp"}
	server := apimcp.NewServer(apimcp.NewServiceBackend(s.mcp, local), apimcp.Options{Agent: "claire", Version: "test"})
	serverT, clientT := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := server.Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if guide := cs.InitializeResult().Instructions; !strings.Contains(guide, `agent "claire"`) {
		t.Fatalf("instructions do not name the agent: %s", guide)
	}
	schemas := toolSchemas(t, cs)
	added := callTool(t, cs, schemas, "add_memory", map[string]any{"agent_id": "claire", "type": "goal", "content": map[string]any{"title": "ship the MCP server", "status": "active"}}).ok(t)
	found := callTool(t, cs, schemas, "search_memories", map[string]any{"agent_id": "claire", "query": "ship MCP server"}).ok(t)
	if results := found.data["results"].([]any); len(results) != 1 || str(results[0].(map[string]any), "id") != str(added.data, "id") {
		t.Fatalf("search: %v", found.data)
	}
	callTool(t, cs, schemas, "memory_status", map[string]any{"agent_id": "bob-agent"}).fails(t, "invalid_request", "agent_id")
	// The write is alice's, as the REST API sees it.
	s.must(http.StatusOK, "GET", "/v1/memories/"+str(added.data, "id"), aliceKey, nil)
	prompt, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "session_start", Arguments: map[string]string{"agent_id": "claire"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := prompt.Messages[0].Content.(*sdk.TextContent).Text; !strings.Contains(text, "## Active goals") || !strings.Contains(text, "ship the MCP server") {
		t.Fatalf("session_start:\n%s", text)
	}
}

// A server on loopback behind a reverse proxy sees the public host name:
// /mcp answers it like the API does (the bearer credential, not the Host,
// is what a DNS-rebound page lacks).
func TestMCPBehindProxy(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest("POST", s.srv.URL+"/mcp", strings.NewReader(body))
	req.Host = "engram.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize through a proxy: %d", res.StatusCode)
	}
}

// /mcp is bounded like the API: its body limit, quotas (an isError result
// with the API's code) and no standing GET stream holding an in-flight
// slot.
func TestMCPLimits(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, maxBody: 2048, quotas: memory.Quotas{MemoriesPerAgent: 1}})
	post := func(body string) response {
		req, _ := http.NewRequest("POST", s.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		return s.send(req)
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + strings.Repeat("x", 4096) + `","version":"1"}}}`
	wantError(t, post(big), http.StatusRequestEntityTooLarge, "payload_too_large")

	req, _ := http.NewRequest("GET", s.srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(res.Header.Get("Allow"), "POST") {
		t.Fatalf("GET /mcp: %d, Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}

	cs := s.mcpClient(t, aliceKey, "", "2026-07-28")
	schemas := toolSchemas(t, cs)
	callTool(t, cs, schemas, "add_memory", map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "one"}}).ok(t)
	callTool(t, cs, schemas, "capture", map[string]any{"agent_id": "claire", "text": "two"}).fails(t, "quota_memories_per_agent", "")
}

// A malformed message is answered with a JSON-RPC error, over both
// revisions: a parse error for a body that is not JSON, invalid request
// for a request without its params, method not found for an unknown one.
func TestMCPMalformedMessages(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	for _, c := range []struct {
		name, revision, body string
		status               int
		code                 float64
	}{
		{"not JSON", "", `{not json`, http.StatusBadRequest, -32700},
		{"not JSON, stateless", "2026-07-28", `{not json`, http.StatusBadRequest, -32700},
		{"call without params", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, http.StatusBadRequest, -32600},
		{"unknown method, stateless", "2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, http.StatusNotFound, -32601},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", s.srv.URL+"/mcp", strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+aliceKey)
			if c.revision != "" {
				req.Header.Set("Mcp-Protocol-Version", c.revision)
			}
			r := s.send(req)
			rpcErr, _ := r.body["error"].(map[string]any)
			if r.status != c.status || r.body["jsonrpc"] != "2.0" || rpcErr["code"] != c.code || rpcErr["message"] == "" {
				t.Fatalf("%d %s, want %d with JSON-RPC error %v", r.status, r.raw, c.status, c.code)
			}
		})
	}
}

// A tool that wrote names, in its result's _meta, the consistency token of
// its last event, in both revisions (in session mode the HTTP response that
// carries the result is not the request the write ran under, so its header
// cannot carry the token); a read names none.
func TestMCPConsistencyToken(t *testing.T) {
	t.Parallel()
	for _, rev := range mcpRevisions {
		t.Run(rev.name, func(t *testing.T) {
			s := newStack(t, stackOptions{fixedAuth: true})
			cs := s.mcpClient(t, aliceKey, "", rev.requested)
			schemas := toolSchemas(t, cs)
			added := callTool(t, cs, schemas, "add_memory", map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "tokened"}}).ok(t)
			token, _ := added.res.Meta[apimcp.ConsistencyTokenMeta].(string)
			if !strings.HasPrefix(token, "v1.") {
				t.Fatalf("add_memory _meta %v: no consistency token", added.res.Meta)
			}
			searched := callTool(t, cs, schemas, "search_memories", map[string]any{"agent_id": "claire", "query": "tokened"}).ok(t)
			if _, ok := searched.res.Meta[apimcp.ConsistencyTokenMeta]; ok {
				t.Fatalf("search_memories wrote nothing but names a token: %v", searched.res.Meta)
			}
		})
	}
}

// /mcp answers a stateless (2026-07-28) tools/call in the HTTP request's
// goroutine, without the SDK's per-request session; what it answers must
// be what the SDK answers. Two stacks holding the same memory, one served
// wholly by the SDK, get the same requests — plain calls the direct path
// takes, and calls it leaves to the SDK — and must give the same status,
// headers and body, ids and times aside.
func TestMCPDirectCallsAnswerAsTheSDK(t *testing.T) {
	t.Parallel()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	call := func(id, name, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,` + meta + `}}`
	}
	cases := []struct {
		name       string
		body       string
		nameHeader string // Mcp-Name
	}{
		{"search", call("7", "search_memories", `{"agent_id":"claire","query":"cache latency","limit":5}`), "search_memories"},
		{"string id", call(`"abc"`, "search_memories", `{"agent_id":"claire","query":"cache"}`), "search_memories"},
		{"write, with a consistency token", call("8", "add_memory", `{"agent_id":"claire","type":"belief","content":{"statement":"caches help"}}`), "add_memory"},
		{"tool failure", call("9", "search_memories", `{"agent_id":"claire","query":"cache","limit":0}`), "search_memories"},
		{"unknown argument", call("10", "get_memory", `{"agent_id":"claire","type":"note","id":"x","colour":"red"}`), "get_memory"},
		{"another user's agent", call("11", "memory_status", `{"agent_id":"bobs"}`), "memory_status"},
		{"no arguments", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"memory_status",` + meta + `}}`, "memory_status"},
		{"unknown tool", call("13", "nope", `{}`), "nope"},
		{"Mcp-Name mismatch", call("14", "search_memories", `{"agent_id":"claire","query":"cache"}`), "get_memory"},
		{"no protocol version in _meta", `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"}}}`, "memory_status"},
		{"unknown member", `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"},"task":{},` + meta + `}}`, "memory_status"},
		{"no client capabilities", `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "memory_status"},
		{"client info not an object", `{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":"t","io.modelcontextprotocol/clientCapabilities":{}}}}`, "memory_status"},
		{"only client capabilities", `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}}}`, "memory_status"},
		{"fractional id", call("17.5", "memory_status", `{"agent_id":"claire"}`), "memory_status"},
		// The direct path walks the request's bytes: what it must read as
		// the SDK does, or leave to it.
		{"null id", call("null", "memory_status", `{"agent_id":"claire"}`), "memory_status"},
		{"negative zero id", call("-0", "memory_status", `{"agent_id":"claire"}`), "memory_status"},
		{"negative id", call("-21", "memory_status", `{"agent_id":"claire"}`), "memory_status"},
		{"id in exponent form", call("2e1", "memory_status", `{"agent_id":"claire"}`), "memory_status"},
		{"string id with escapes", call(`"a\u0062c\n"`, "memory_status", `{"agent_id":"claire"}`), "memory_status"},
		{"string id with HTML characters", call(`"<a&b>"`, "memory_status", `{"agent_id":"claire"}`), "memory_status"},
		{"string id not ASCII", call(`"idé"`, "memory_status", `{"agent_id":"claire"}`), "memory_status"},
		{"string id with a line separator", call(`"a\u2028b<"`, "memory_status", `{"agent_id":"claire"}`), "memory_status"},
		{"a member twice", `{"jsonrpc":"2.0","id":22,"id":23,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"},` + meta + `}}`, "memory_status"},
		{"arguments twice", `{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"bobs"},"arguments":{"agent_id":"claire"},` + meta + `}}`, "memory_status"},
		{"a member in capitals", `{"jsonrpc":"2.0","id":25,"Method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"},` + meta + `}}`, "memory_status"},
		{"a key written with escapes", `{"jsonrpc":"2.0","id":26,"metho\u0064":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"},` + meta + `}}`, "memory_status"},
		{"a name written with escapes", call("27", `search\u005fmemories`, `{"agent_id":"claire","query":"cache"}`), "search_memories"},
		{"spaces and newlines", "{ \"jsonrpc\" : \"2.0\",\n \"id\" : 28 ,\"method\":\"tools/call\", \"params\" : { \"name\" : \"memory_status\" , \"arguments\" : { \"agent_id\" : \"claire\" } , " + meta + " }\n}\n", "memory_status"},
		{"quotes and brackets in strings", call("29", "search_memories", `{"agent_id":"claire","query":"cache \"}]{[\\ latency","tags":["a}"]}`), "search_memories"},
		{"not JSON after the object", call("30", "memory_status", `{"agent_id":"claire"}`) + `}`, "memory_status"},
		{"the Go SDK client's _meta", `{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"memory_status","arguments":{"agent_id":"claire"}}}`, "memory_status"},
		{"client info with icons", `{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1","icons":[{"src":"https://x/i.png"}]},"io.modelcontextprotocol/clientCapabilities":{}}}}`, "memory_status"},
		{"client info of the wrong type", `{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":5},"io.modelcontextprotocol/clientCapabilities":{}}}}`, "memory_status"},
		{"null capabilities", `{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"memory_status","arguments":{"agent_id":"claire"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}}}`, "memory_status"},
		{"null params", `{"jsonrpc":"2.0","id":35,"method":"tools/call","params":null}`, "memory_status"},
		{"null arguments", `{"jsonrpc":"2.0","id":36,"method":"tools/call","params":{"name":"memory_status","arguments":null,` + meta + `}}`, "memory_status"},
	}
	type answer struct {
		Status                    int
		ContentType, CacheControl string
		Token                     string
		Body                      string
	}
	answers := func(sdkOnly bool) []answer {
		s := newStack(t, stackOptions{fixedAuth: true, mcpSDKOnly: sdkOnly})
		s.request(t, "POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "the cache cut latency"}}).must(t, http.StatusCreated, nil)
		s.request(t, "POST", "/v1/memories", bobKey, map[string]any{"agent_id": "bobs", "type": "note", "content": map[string]any{"content": "bob's"}}).must(t, http.StatusCreated, nil)
		var out []answer
		for _, c := range cases {
			req, _ := http.NewRequest("POST", s.srv.URL+"/mcp", strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+aliceKey)
			req.Header.Set("Mcp-Protocol-Version", apimcp.StatelessRevision)
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", c.nameHeader)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, answer{res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Cache-Control"), res.Header.Get("Engram-Consistency-Token"), anonymous(string(body))})
		}
		return out
	}
	direct, reference := answers(false), answers(true)
	for i, c := range cases {
		if direct[i] != reference[i] {
			t.Errorf("%s:\n direct %+v\n sdk    %+v", c.name, direct[i], reference[i])
		}
	}
	if !strings.Contains(direct[0].Body, `the cache cut latency`) || !strings.HasPrefix(direct[2].Token, "v1.") {
		t.Fatalf("the plain calls did not run: search %s, write token %q", direct[0].Body, direct[2].Token)
	}
}

// anonymous is an answer with its memory ids, times, request ids,
// strengths (which decay with the seconds since the write) and query times
// replaced by placeholders, so that two stacks' answers compare.
func anonymous(body string) string {
	body = uuidPattern.ReplaceAllString(body, "<id>")
	body = timePattern.ReplaceAllString(body, "<time>")
	body = strengthPattern.ReplaceAllString(body, `"strength":<strength>`)
	body = queryTimePattern.ReplaceAllString(body, `"query_time_$1":<time>`)
	return requestIDPattern.ReplaceAllString(body, "<request>")
}

var (
	uuidPattern      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timePattern      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	requestIDPattern = regexp.MustCompile(`req_[0-9a-f]+`)
	strengthPattern  = regexp.MustCompile(`"strength":[0-9.eE+-]+`)
	queryTimePattern = regexp.MustCompile(`"query_time_(ms|us)":\d+`)
)
