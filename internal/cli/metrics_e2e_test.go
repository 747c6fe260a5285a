package cli

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/internal/testserver"
)

var metricsServing = regexp.MustCompile(`msg="metrics serving" addr=(\S+)`)

// scrape reads the metrics endpoint of p's log, with Host set to host
// ("" keeps the address's own), and returns the status and body.
func scrape(t *testing.T, p *testserver.Server, host string) (int, string) {
	t.Helper()
	m := metricsServing.FindStringSubmatch(p.Log())
	if m == nil {
		t.Fatalf("no metrics address in the log:\n%s", p.Log())
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+m[1]+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// sample is the value of the first series of name whose labels contain
// every one of labels (`key="value"`), and whether there is one.
func sample(body, name string, labels ...string) (float64, bool) {
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		metric, labelSet, _ := strings.Cut(series, "{")
		if metric != name {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(labelSet, l)
		}
		if !matches {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		return v, err == nil
	}
	return 0, false
}

// TestServeMetricsAfterTraffic runs the binary with metrics on, sends it
// real traffic (writes, a search, an update, a forget, a quota refusal, a
// bad credential, an MCP tool call) and scrapes /metrics: every family
// the operations page lists is there with values the traffic explains,
// and no tenant, agent, memory, e-mail, key or query text is in it.
func TestServeMetricsAfterTraffic(t *testing.T) {
	t.Parallel()
	p := startServer(t, t.TempDir(), nil, "--metrics-addr", "127.0.0.1:0", "--quota-memories-per-agent", "2")
	const (
		email = "metrics-owner@example.com"
		agent = "agent-who-must-stay-private"
		query = "zebra-crossing-secret-query"
	)
	key := testserver.Register(t, p.BaseURL, p.DataDir, email)
	var created struct {
		ID string `json:"id"`
	}
	if _, err := call(t, http.MethodPost, p.APIURL()+"/memories", key, map[string]any{"agent_id": agent, "type": "note", "content": map[string]any{"content": "a " + query + " note"}}, &created); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, http.MethodPost, p.APIURL()+"/search", key, map[string]any{"agent_id": agent, "query": query}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, http.MethodPatch, p.APIURL()+"/memories/"+created.ID, key, map[string]any{"tags": []string{"edited"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, http.MethodDelete, p.APIURL()+"/memories/"+created.ID, key, nil, nil); err != nil {
		t.Fatal(err)
	}
	// The quota of 2 memories (forgotten ones count) refuses the third.
	if _, err := call(t, http.MethodPost, p.APIURL()+"/memories", key, map[string]any{"agent_id": agent, "type": "note", "content": map[string]any{"content": "second"}}, nil); err != nil {
		t.Fatal(err)
	}
	if status, _ := call(t, http.MethodPost, p.APIURL()+"/memories", key, map[string]any{"agent_id": agent, "type": "note", "content": map[string]any{"content": "third"}}, nil); status != http.StatusForbidden {
		t.Fatalf("third memory: %d, want 403 quota_exceeded", status)
	}
	if status, _ := call(t, http.MethodGet, p.APIURL()+"/memories?agent_id="+agent, "engram_not-a-key", nil, nil); status != http.StatusUnauthorized {
		t.Fatalf("bad key: %d, want 401", status)
	}
	transport := &sdk.StreamableClientTransport{Endpoint: p.BaseURL + "/mcp", HTTPClient: &http.Client{Transport: bearer{key}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), transport, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.Log())
	}
	mcpTool(t, cs, "search_memories", map[string]any{"agent_id": agent, "query": query})
	cs.Close()

	status, body := scrape(t, p, "")
	if status != http.StatusOK {
		t.Fatalf("scrape: %d\n%s", status, body)
	}
	atLeast := []struct {
		name   string
		labels []string
		min    float64
	}{
		{"engram_http_requests_total", []string{`route="/v1/memories"`, `method="POST"`, `status="201"`}, 2},
		{"engram_http_requests_total", []string{`route="/v1/search"`, `method="POST"`, `status="200"`}, 1},
		{"engram_http_requests_total", []string{`route="/v1/memories/{id}"`, `method="PATCH"`, `status="200"`}, 1},
		{"engram_http_requests_total", []string{`route="/v1/memories/{id}"`, `method="DELETE"`, `status="200"`}, 1},
		{"engram_http_request_duration_seconds_count", []string{`route="/v1/search"`, `method="POST"`}, 1},
		{"engram_http_requests_in_flight", nil, 0},
		{"engram_http_requests_refused_total", []string{`reason="quota"`}, 1},
		{"engram_http_requests_refused_total", []string{`reason="busy"`}, 0},
		{"engram_http_requests_refused_total", []string{`reason="rate_limited"`}, 0},
		{"engram_auth_failures_total", nil, 1},
		{"engram_event_log_appends_total", []string{`result="ok"`}, 4},
		{"engram_event_log_appended_events_total", nil, 4},
		{"engram_event_log_group_commit_appends_count", nil, 1},
		{"engram_event_log_fsync_duration_seconds_count", nil, 1},
		{"engram_event_log_head_position", nil, 4},
		{"engram_write_visibility_wait_seconds_count", []string{`result="visible"`}, 4},
		{"engram_projection_position", []string{`projection="memories"`}, 4},
		{"engram_projection_lag_events", []string{`projection="memories"`}, 0},
		{"engram_projection_lag_seconds", []string{`projection="memories"`}, 0},
		{"engram_projection_batches_applied_total", []string{`projection="memories"`}, 1},
		{"engram_projection_failures_total", []string{`projection="memories"`}, 0},
		{"engram_projection_batches_parked_total", []string{`projection="memories"`}, 0},
		{"engram_embedding_calls_total", []string{`provider="local"`, `model="glove-sif-100"`}, 2},
		{"engram_embedding_duration_seconds_count", []string{`provider="local"`, `model="glove-sif-100"`}, 2},
		{"engram_embedding_errors_total", []string{`provider="local"`, `model="glove-sif-100"`}, 0},
		{"engram_index_entries", []string{`backend="embedded"`, `kind="documents"`}, 2},
		{"engram_index_entries", []string{`backend="embedded"`, `kind="vectors"`}, 2},
		{"engram_jobs", []string{`state="queued"`}, 0},
		{"engram_jobs", []string{`state="completed"`}, 0},
		{"engram_mcp_tool_calls_total", []string{`tool="search_memories"`, `result="ok"`}, 1},
	}
	for _, want := range atLeast {
		got, ok := sample(body, want.name, want.labels...)
		if !ok {
			t.Errorf("%s%v: no series", want.name, want.labels)
			continue
		}
		if got < want.min {
			t.Errorf("%s%v = %v, want at least %v", want.name, want.labels, got, want.min)
		}
	}
	if lag, _ := sample(body, "engram_projection_lag_events", `projection="memories"`); lag != 0 {
		t.Errorf("memories projection lags %v events after every write was answered", lag)
	}
	for _, private := range []string{email, agent, query, created.ID, key} {
		if strings.Contains(body, private) {
			t.Errorf("the metrics show %q", private)
		}
	}
	if status, _ := scrape(t, p, "metrics.evil.example"); status != http.StatusMisdirectedRequest {
		t.Errorf("scrape naming another host: %d, want 421", status)
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}
}
