package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/domain/memory"
)

// BenchmarkMCPSearch: the same hybrid search of an agent holding
// mcpBenchCorpus notes, as POST /v1/search ("rest") and as the MCP tool
// search_memories over /mcp, statelessly (2026-07-28) and in a session
// (2025-11-25), with 8 clients at once on the loopback server in process.
// p50_µs and p99_µs are the round trips' percentiles, cpu_µs/op the
// process's CPU time (server and client) per call; the MCP layer's cost is
// the difference to rest. "mcp-http" sends the calls as plain HTTP
// requests, read as plainly as rest reads its answers: the server's cost
// alone. "mcp-http 2026-07-28 sdk-only" is the same as "mcp-http
// 2026-07-28" on a stack whose /mcp leaves every call to the SDK
// (apimcp.SDKHTTPHandler): the direct path's gain.
func BenchmarkMCPSearch(b *testing.B) {
	s := newMCPBenchStack(b, false)
	query := func(i int) string {
		return mcpBenchWords[i%len(mcpBenchWords)] + " " + mcpBenchWords[(i+3)%len(mcpBenchWords)]
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	statelessCalls := func(s *stack) func() func(i int) error {
		return func() func(i int) error {
			return func(i int) error {
				return readOK(client.Do(rawStatelessCall(s.srv.URL, i, query(i))))
			}
		}
	}

	b.Run("rest", func(b *testing.B) {
		benchLatencies(b, func() func(i int) error {
			return func(i int) error {
				body := fmt.Sprintf(`{"agent_id":"claire","query":%q,"limit":10}`, query(i))
				req, _ := http.NewRequest("POST", s.srv.URL+"/v1/search", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+aliceKey)
				return readOK(client.Do(req))
			}
		})
	})
	// The same tools/call as plain HTTP requests of a session, read as
	// plainly as rest reads its answers: the server's cost alone.
	b.Run("mcp-http 2025-11-25", func(b *testing.B) {
		benchLatencies(b, func() func(i int) error {
			session := rawMCPSession(b, s.srv.URL, client)
			return func(i int) error {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search_memories","arguments":{"agent_id":"claire","query":%q,"limit":10}}}`, i+10, query(i))
				return readOK(client.Do(rawMCPRequest(s.srv.URL, session, body)))
			}
		})
	})
	b.Run("mcp-http 2026-07-28", func(b *testing.B) { benchLatencies(b, statelessCalls(s)) })
	b.Run("mcp-http 2026-07-28 sdk-only", func(b *testing.B) { benchLatencies(b, statelessCalls(newMCPBenchStack(b, true))) })
	for _, rev := range mcpRevisions {
		b.Run("mcp-sdk "+rev.requested, func(b *testing.B) {
			benchLatencies(b, func() func(i int) error {
				transport := &sdk.StreamableClientTransport{Endpoint: s.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerRoundTripper{aliceKey, client.Transport}}, DisableStandaloneSSE: true}
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), transport, &sdk.ClientSessionOptions{ProtocolVersion: rev.requested})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = cs.Close() })
				return func(i int) error {
					res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search_memories", Arguments: map[string]any{"agent_id": "claire", "query": query(i), "limit": 10}})
					if err == nil && res.IsError {
						err = fmt.Errorf("search failed: %v", res.Content)
					}
					return err
				}
			})
		})
	}
}

// mcpBenchCorpus is how many notes BenchmarkMCPSearch's agent holds, and
// mcpBenchWords the words they and the queries are made of.
const mcpBenchCorpus = 2000

var mcpBenchWords = []string{"latency", "cache", "deploy", "billing", "postgres", "vacuum", "kubernetes", "drain", "queue", "index"}

// newMCPBenchStack is a stack whose agent claire holds mcpBenchCorpus
// notes; sdkOnly serves /mcp with apimcp.SDKHTTPHandler.
func newMCPBenchStack(b *testing.B, sdkOnly bool) *stack {
	s := newStack(b, stackOptions{fixedAuth: true, discardLogs: true, mcpSDKOnly: sdkOnly})
	words := mcpBenchWords
	for start := 0; start < mcpBenchCorpus; start += memory.MaxBatch {
		var batch []any
		for i := start; i < min(start+memory.MaxBatch, mcpBenchCorpus); i++ {
			batch = append(batch, map[string]any{"type": "note", "content": map[string]any{
				"content": fmt.Sprintf("note %d about %s and %s in service %d", i, words[i%len(words)], words[(i/7)%len(words)], i%31)}})
		}
		s.request(b, "POST", "/v1/memories/batch", aliceKey, map[string]any{"agent_id": "claire", "memories": batch}).must(b, http.StatusCreated, nil)
	}
	return s
}

// rawStatelessCall is search_memories as a 2026-07-28 client sends it: no
// session, the revision in a header and in _meta.
func rawStatelessCall(base string, id int, query string) *http.Request {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search_memories","arguments":{"agent_id":"claire","query":%q,"limit":10},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id, query)
	req := rawMCPRequest(base, "", body)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "search_memories")
	return req
}

// readOK reads a round trip's answer to its end, as a client using it
// would, and wants 200 OK.
func readOK(res *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", res.StatusCode, body)
	}
	return err
}

// benchLatencies runs b.N calls from 8 clients at once (each made by
// newClient before the clock starts) and reports the percentiles of their
// round trips.
func benchLatencies(b *testing.B, newClient func() func(i int) error) {
	const clients = 8
	calls := make([]func(int) error, clients)
	for c := range calls {
		calls[c] = newClient()
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		next      int
		wg        sync.WaitGroup
	)
	b.ResetTimer()
	cpuBefore := cpuSeconds()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= b.N {
					return
				}
				start := time.Now()
				if err := calls[c](i); err != nil {
					b.Error(err)
					return
				}
				took := time.Since(start)
				mu.Lock()
				latencies = append(latencies, took)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric((cpuSeconds()-cpuBefore)*1e6/float64(b.N), "cpu_µs/op")
	slices.Sort(latencies)
	if len(latencies) > 0 {
		b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "p50_µs")
		b.ReportMetric(float64(latencies[(len(latencies)*99)/100].Microseconds()), "p99_µs")
	}
}

// bearerRoundTripper adds a bearer credential over a shared transport.
type bearerRoundTripper struct {
	key  string
	next http.RoundTripper
}

func (b bearerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// rawMCPSession opens a 2025-11-25 session with plain HTTP requests and
// returns its id.
func rawMCPSession(b *testing.B, base string, client *http.Client) string {
	b.Helper()
	res, err := client.Do(rawMCPRequest(base, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || session == "" {
		b.Fatalf("initialize: %d, session %q", res.StatusCode, session)
	}
	res, err = client.Do(rawMCPRequest(base, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return session
}

func rawMCPRequest(base, session, body string) *http.Request {
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return req
}
