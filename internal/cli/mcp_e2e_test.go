package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/internal/testserver"
)

// engramMCP starts `engram -s stack mcp` in h and connects the SDK's client
// to it over stdio; stderr collects the server's logs.
func engramMCP(t *testing.T, h *cliHome, stack string) (*sdk.ClientSession, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(binPath, "-s", stack, "mcp", "--local")
	cmd.Env = h.env
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to engram mcp: %v\nstderr: %s", err, stderr)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, stderr
}

// mcpTool calls a tool and decodes its structured content; isError fails t.
func mcpTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &out)
	if res.IsError {
		t.Fatalf("%s failed: %s", name, raw)
	}
	return out
}

// `engram mcp` serves a local stack over stdio on the CLI's engine: it
// sees the CLI's captures, the CLI sees its writes while it runs, and a
// CLI capture beside its calls waits for the stack instead of failing.
func TestMCPStdioLocalStack(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	h.ok("-s", "claire", "raw", "the CLI captured this about kubernetes upgrades")

	cs, stderr := engramMCP(t, h, "claire")
	// Over stdio the SDK's client and server speak the newest revision.
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q over stdio, want 2026-07-28", v)
	}
	found := mcpTool(t, cs, "search_memories", map[string]any{"agent_id": "claire", "query": "kubernetes upgrades"})
	if results, _ := found["results"].([]any); len(results) != 1 {
		t.Fatalf("the CLI's capture is not found over MCP: %v", found)
	}
	added := mcpTool(t, cs, "add_memory", map[string]any{"agent_id": "claire", "type": "belief", "content": map[string]any{"statement": "upgrades need a drain plan"}})
	// The server holds no lock between calls: the CLI reads and writes.
	if out := h.ok("-s", "claire", "show", added["id"].(string)).stdout; !strings.Contains(out, "drain plan") {
		t.Fatalf("engram show: %s", out)
	}
	captured := mcpTool(t, cs, "capture", map[string]any{"agent_id": "claire", "text": "jotted over stdio"})
	var raw struct {
		Content struct{ Source string } `json:"content"`
	}
	h.json(&raw, "-s", "claire", "show", captured["id"].(string))
	if raw.Content.Source != "mcp" {
		t.Fatalf("source %q, want mcp", raw.Content.Source)
	}

	// CLI captures and MCP writes at once: every one lands.
	const rounds = 4
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range rounds {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "capture", Arguments: map[string]any{"agent_id": "claire", "text": fmt.Sprintf("mcp side %d", i)}})
			if err != nil || res.IsError {
				errs <- fmt.Errorf("mcp capture %d: %v %v", i, err, res)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range rounds {
			if r := h.run("", "-s", "claire", "raw", fmt.Sprintf("cli side %d", i)); r.code != 0 {
				errs <- fmt.Errorf("cli capture %d: exit %d: %s", i, r.code, r.stderr)
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	status := mcpTool(t, cs, "memory_status", map[string]any{"agent_id": "claire"})
	if total := status["stats"].(map[string]any)["total"].(float64); total != 3+2*rounds {
		t.Fatalf("total %v, want %d", total, 3+2*rounds)
	}

	// The stack is the agent: another agent_id is refused.
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "memory_status", Arguments: map[string]any{"agent_id": "other"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "invalid_request") {
		t.Fatalf("another agent: %v %+v", err, res)
	}
	if strings.Contains(stderr.String(), "panic") {
		t.Fatalf("stderr: %s", stderr)
	}
}

// The command line's choices: --local and --cloud exclude each other, and
// --cloud without a configured cloud says so.
func TestMCPCommandFlags(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	h.fails(exitUsage, "", "mcp", "--local", "--cloud")
	if r := h.fails(exitError, "", "mcp", "--cloud"); !strings.Contains(r.stderr, "cloud is not configured") {
		t.Fatalf("stderr: %s", r.stderr)
	}
	if r := h.fails(exitError, "", "-s", "not/a/stack", "mcp"); !strings.Contains(r.stderr, "stack name") {
		t.Fatalf("stderr: %s", r.stderr)
	}
}

// `engram serve` serves /mcp beside /v1 with the API's keys, and the
// protected-resource metadata names the URL the client reached.
func TestServeMCP(t *testing.T) {
	t.Parallel()
	p := startServer(t, t.TempDir(), nil)
	key := testserver.Register(t, p.BaseURL, p.DataDir, "mcp@example.com")

	res, err := http.Post(p.BaseURL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if challenge := res.Header.Get("WWW-Authenticate"); res.StatusCode != http.StatusUnauthorized || !strings.Contains(challenge, `resource_metadata="`+p.BaseURL+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Fatalf("no credential: %d %q", res.StatusCode, challenge)
	}
	res, err = http.Get(p.BaseURL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resource string `json:"resource"`
	}
	_ = json.NewDecoder(res.Body).Decode(&doc)
	res.Body.Close()
	if doc.Resource != p.BaseURL+"/mcp" {
		t.Fatalf("resource %q, want %s/mcp", doc.Resource, p.BaseURL)
	}

	transport := &sdk.StreamableClientTransport{Endpoint: p.BaseURL + "/mcp?agent_id=claire", HTTPClient: &http.Client{Transport: bearer{key}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), transport, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.Log())
	}
	defer cs.Close()
	added := mcpTool(t, cs, "add_memory", map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "served over streamable HTTP"}})
	found := mcpTool(t, cs, "search_memories", map[string]any{"agent_id": "claire", "query": "streamable HTTP"})
	if results, _ := found["results"].([]any); len(results) != 1 || results[0].(map[string]any)["id"] != added["id"] {
		t.Fatalf("search: %v", found)
	}
}

// bearer adds an API key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}
