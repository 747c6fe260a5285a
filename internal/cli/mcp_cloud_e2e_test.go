package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/api/mcp"
	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

// mcpTools are the tools every Engram MCP server lists (the contract).
var mcpTools = []string{"add_memory", "capture", "search_memories", "get_memory", "list_memories",
	"update_memory", "forget_memory", "review_suggestions", "memory_status"}

// mcpSession is an MCP client session for one test.
type mcpSession struct {
	t  *testing.T
	cs *sdk.ClientSession
}

// connectCloudBackend serves the cloud Backend over key's account in
// process and connects the SDK's client to it.
func connectCloudBackend(t *testing.T, srv *testserver.Server, key string, opts mcp.Options) *mcpSession {
	t.Helper()
	ctx := context.Background()
	server := mcp.NewServer(newCloudBackend(client.New(srv.APIURL(), key)), opts)
	serverEnd, clientEnd := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	return connectMCP(t, clientEnd)
}

func connectMCP(t *testing.T, transport sdk.Transport) *mcpSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "engram-test", Version: "1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &mcpSession{t: t, cs: cs}
}

// call calls a tool and returns its structured content as JSON objects,
// the short text and whether it is an error result.
func (s *mcpSession) call(name string, args map[string]any) (map[string]any, string, bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s: %v", name, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string]any{}
	_ = json.Unmarshal(raw, &out)
	return out, text, res.IsError
}

// ok calls a tool that must succeed.
func (s *mcpSession) ok(name string, args map[string]any) map[string]any {
	s.t.Helper()
	out, text, isErr := s.call(name, args)
	if isErr {
		s.t.Fatalf("%s(%v) failed: %s", name, args, text)
	}
	return out
}

// fails calls a tool that must fail with the API's code.
func (s *mcpSession) fails(name string, args map[string]any, code string) map[string]any {
	s.t.Helper()
	out, text, isErr := s.call(name, args)
	errObj, _ := out["error"].(map[string]any)
	if !isErr || errObj["code"] != code || !strings.Contains(text, code) {
		s.t.Fatalf("%s(%v) = %v %q (error %v), want an error result with code %s", name, args, out, text, isErr, code)
	}
	return errObj
}

// exerciseTools drives every tool over session on agent, as the contract
// describes them; it is shared by the in-process and stdio tests.
func exerciseTools(t *testing.T, s *mcpSession, agent string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range mcpTools {
		if !slices.Contains(names, want) {
			t.Fatalf("tools %v lack %s", names, want)
		}
	}

	created := s.ok("add_memory", map[string]any{"agent_id": agent, "type": "notes",
		"content": map[string]any{"content": "the staging database password rotates every friday"}, "tags": []string{"ops"}})
	noteID, _ := created["id"].(string)
	if noteID == "" || created["type"] != "note" {
		t.Fatalf("add_memory = %v", created)
	}
	derived := s.ok("add_memory", map[string]any{"agent_id": agent, "type": "belief",
		"content": map[string]any{"statement": "staging credentials change weekly"}, "derived_from": []string{"note:" + noteID}})
	beliefID, _ := derived["id"].(string)
	raw := s.ok("capture", map[string]any{"agent_id": agent, "text": "asked about the friday rotation"})
	if raw["type"] != "raw_entry" {
		t.Fatalf("capture = %v", raw)
	}

	found := s.ok("search_memories", map[string]any{"agent_id": agent, "query": "staging database password rotation", "mode": "keyword", "tags": []string{"ops"}})
	results, _ := found["results"].([]any)
	if len(results) == 0 || results[0].(map[string]any)["id"] != noteID {
		t.Fatalf("search_memories = %v, want the note %s first", found, noteID)
	}
	if us, _ := found["query_time_us"].(float64); us <= 0 {
		t.Fatalf("search_memories does not relay the server's time: %v", found)
	}

	got := s.ok("get_memory", map[string]any{"agent_id": agent, "type": "note", "id": noteID})
	memory, _ := got["memory"].(map[string]any)
	version, _ := memory["version"].(float64)
	if memory["id"] != noteID || version < 1 {
		t.Fatalf("get_memory = %v", got)
	}
	if derivedRefs, _ := got["provenance"].(map[string]any)["derived"].([]any); len(derivedRefs) != 1 || derivedRefs[0].(map[string]any)["id"] != beliefID {
		t.Fatalf("get_memory provenance = %v, want the belief %s derived", got["provenance"], beliefID)
	}

	updated := s.ok("update_memory", map[string]any{"agent_id": agent, "type": "note", "id": noteID, "version": version,
		"patch": map[string]any{"content": map[string]any{"content": "the staging database password rotates every monday"}}})
	if m, _ := updated["memory"].(map[string]any); m == nil {
		updated = map[string]any{"memory": updated} // an update may answer with the memory itself
	}
	if content := updated["memory"].(map[string]any)["content"].(map[string]any); !strings.Contains(content["content"].(string), "monday") {
		t.Fatalf("update_memory = %v", updated)
	}
	s.fails("update_memory", map[string]any{"agent_id": agent, "type": "note", "id": noteID, "version": version,
		"patch": map[string]any{"tags": []string{"stale"}}}, "precondition_failed")

	listed := s.ok("list_memories", map[string]any{"agent_id": agent, "type": "note", "limit": 10})
	if items, _ := listed["items"].([]any); len(items) != 1 {
		t.Fatalf("list_memories = %v", listed)
	}

	forgotten := s.ok("forget_memory", map[string]any{"agent_id": agent, "type": "belief", "id": beliefID})
	if forgotten["memory"].(map[string]any)["forgotten"] != true {
		t.Fatalf("forget_memory = %v", forgotten)
	}
	if again := s.ok("search_memories", map[string]any{"agent_id": agent, "query": "staging credentials weekly", "mode": "keyword"}); slices.ContainsFunc(again["results"].([]any), func(r any) bool { return r.(map[string]any)["id"] == beliefID }) {
		t.Fatalf("a forgotten memory is still found: %v", again)
	}

	if review := s.ok("review_suggestions", map[string]any{"agent_id": agent, "action": "list"}); review == nil {
		t.Fatal("review_suggestions list answered nothing")
	}
	s.fails("review_suggestions", map[string]any{"agent_id": agent, "action": "accept", "suggestion_id": "sug_does_not_exist"}, "not_found")

	status := s.ok("memory_status", map[string]any{"agent_id": agent})
	stats, _ := status["stats"].(map[string]any)
	if total, _ := stats["total"].(float64); total < 2 {
		t.Fatalf("memory_status = %v, want at least the note and the raw entry", status)
	}
	if _, ok := status["anxiety"].(map[string]any)["level"].(string); !ok {
		t.Fatalf("memory_status = %v: no anxiety level", status)
	}

	for _, leaf := range []string{"stats", "settings"} {
		res, err := s.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "engram://agents/" + agent + "/" + leaf})
		if err != nil || len(res.Contents) != 1 || !json.Valid([]byte(res.Contents[0].Text)) {
			t.Fatalf("resource %s: %v %v", leaf, res, err)
		}
	}
	prompt, err := s.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "session_start", Arguments: map[string]string{"agent_id": agent}})
	if err != nil || len(prompt.Messages) == 0 || !strings.Contains(prompt.Messages[0].Content.(*sdk.TextContent).Text, agent) {
		t.Fatalf("session_start = %v, %v; want the agent's briefing", prompt, err)
	}

	s.fails("get_memory", map[string]any{"agent_id": agent, "type": "note", "id": "mem_does_not_exist"}, "not_found")
	for _, limit := range []int{0, -1, 101} {
		if errObj := s.fails("search_memories", map[string]any{"agent_id": agent, "query": "x", "limit": limit}, "invalid_request"); errObj["details"].(map[string]any)["field"] != "limit" {
			t.Fatalf("limit %d: error %v, want the field limit named", limit, errObj)
		}
	}
	errObj := s.fails("add_memory", map[string]any{"agent_id": agent, "type": "note", "content": map[string]any{"content": ""}}, "invalid_request")
	if field, _ := errObj["details"].(map[string]any)["field"].(string); !strings.HasPrefix(field, "content") {
		t.Fatalf("the invalid content's error names %v, want the field", errObj)
	}
}

func TestMCPCloudBackendDrivesEveryToolThroughTheAPI(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	key := testserver.Register(t, srv.APIURL(), srv.DataDir, "mcp-cloud@example.com")
	exerciseTools(t, connectCloudBackend(t, srv, key, mcp.Options{Version: "test"}), "claire")
}

func TestMCPCloudBackendKeepsTenantsApart(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	keyA := testserver.Register(t, srv.APIURL(), srv.DataDir, "mcp-a@example.com")
	keyB := testserver.Register(t, srv.APIURL(), srv.DataDir, "mcp-b@example.com")
	a := connectCloudBackend(t, srv, keyA, mcp.Options{Version: "test"})
	id := a.ok("add_memory", map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "A's secret plan"}})["id"].(string)

	b := connectCloudBackend(t, srv, keyB, mcp.Options{Version: "test"})
	b.fails("get_memory", map[string]any{"agent_id": "claire", "type": "note", "id": id}, "not_found")
	b.fails("memory_status", map[string]any{"agent_id": "claire"}, "not_found")
	b.fails("search_memories", map[string]any{"agent_id": "claire", "query": "secret plan", "mode": "keyword"}, "not_found")
	if listed := b.ok("list_memories", map[string]any{"agent_id": "claire", "type": "note"}); len(listed["items"].([]any)) != 0 {
		t.Fatalf("B lists A's memories: %v", listed)
	}
	b.fails("forget_memory", map[string]any{"agent_id": "claire", "type": "note", "id": id}, "not_found")
	if got := a.ok("get_memory", map[string]any{"agent_id": "claire", "type": "note", "id": id}); got["memory"].(map[string]any)["forgotten"] != false {
		t.Fatalf("B's forget reached A's memory: %v", got)
	}
}

func TestMCPCloudBackendReportsARejectedKeyAndAnUnreachableServer(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	bad := connectCloudBackend(t, srv, "ek_live_not_a_key", mcp.Options{Version: "test"})
	bad.fails("memory_status", map[string]any{"agent_id": "claire"}, "unauthorized")

	srv.Kill()
	key := "ek_live_whatever"
	gone := connectCloudBackend(t, srv, key, mcp.Options{Version: "test"})
	_, text, isErr := gone.call("memory_status", map[string]any{"agent_id": "claire"})
	if !isErr || !strings.Contains(text, "cloud_unreachable") || strings.Contains(text, key) {
		t.Fatalf("memory_status on a stopped server = %q (error %v), want cloud_unreachable without the key", text, isErr)
	}
}

// TestMCPStdioCloudMode runs `engram mcp` as a client starts it, logged in
// to a real server: with cloud.base_url and credentials it acts on the
// cloud agent (what it writes is in the cloud, not in a local stack), and
// --local keeps it on the local stack.
func TestMCPStdioCloudMode(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	h := newCLIHome(t)
	key := loginCLI(t, h, srv, "mcp-stdio@example.com")

	cmd := exec.Command(binPath, "mcp", "-s", "claire")
	cmd.Env = h.env
	s := connectMCP(t, &sdk.CommandTransport{Command: cmd})
	exerciseTools(t, s, "claire")

	api := client.New(srv.APIURL(), key)
	stats, err := api.Stats(context.Background(), "claire")
	if err != nil || stats.Total < 2 {
		t.Fatalf("the cloud agent holds %+v (%v), want what the tools wrote", stats, err)
	}
	if out := h.run("", "stats", "-s", "claire", "--json"); out.code == 0 && strings.Contains(out.stdout, `"total": 2`) {
		t.Fatalf("the tools wrote to the local stack too: %s", out.stdout)
	}

	local := exec.Command(binPath, "mcp", "-s", "claire", "--local")
	local.Env = h.env
	ls := connectMCP(t, &sdk.CommandTransport{Command: local})
	ls.ok("add_memory", map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "only on this machine"}})
	if after, _ := api.Stats(context.Background(), "claire"); after.Total != stats.Total {
		t.Fatalf("--local wrote to the cloud: %d memories, were %d", after.Total, stats.Total)
	}
}

// `engram mcp` on the cloud writes as the local and HTTP modes do: the
// API audits its writes with source mcp (the client declares it with
// Engram-Source), and a tool that wrote names the API's consistency token
// in its result's _meta; a read names none.
func TestMCPStdioCloudWritesAsMCP(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	h := newCLIHome(t)
	key := loginCLI(t, h, srv, "mcp-source@example.com")
	cmd := exec.Command(binPath, "mcp", "-s", "claire")
	cmd.Env = h.env
	s := connectMCP(t, &sdk.CommandTransport{Command: cmd})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	added, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: "add_memory", Arguments: map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "written from stdio"}}})
	if err != nil || added.IsError {
		t.Fatalf("add_memory: %v %v", added, err)
	}
	if token, _ := added.Meta[mcp.ConsistencyTokenMeta].(string); !strings.HasPrefix(token, "v1.") {
		t.Fatalf("add_memory _meta %v: no consistency token", added.Meta)
	}
	searched, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_memories", Arguments: map[string]any{"agent_id": "claire", "query": "stdio"}})
	if err != nil || searched.IsError {
		t.Fatalf("search_memories: %v %v", searched, err)
	}
	if _, ok := searched.Meta[mcp.ConsistencyTokenMeta]; ok {
		t.Fatalf("search_memories wrote nothing but names a token: %v", searched.Meta)
	}
	id := added.StructuredContent.(map[string]any)["id"].(string)

	req, _ := http.NewRequestWithContext(ctx, "GET", srv.APIURL()+"/agents/claire/audit", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var page struct {
		Data struct {
			Entries []struct {
				Operation string `json:"operation"`
				MemoryID  string `json:"memory_id"`
				Source    string `json:"source"`
			} `json:"entries"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("audit: %d %v", res.StatusCode, err)
	}
	for _, e := range page.Data.Entries {
		if e.MemoryID == id && e.Operation == "create" {
			if e.Source != "mcp" {
				t.Fatalf("the cloud audits the stdio write with source %q, want mcp", e.Source)
			}
			return
		}
	}
	t.Fatalf("no create entry of %s in the audit: %+v", id, page.Data.Entries)
}
