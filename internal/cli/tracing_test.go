package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/engram-memory/engram/infra/tracing"
	"github.com/engram-memory/engram/internal/testserver"
)

// TestTracesFollowTheCallersTraceContext wires the server in process as
// `engram serve` does, with the SDK's in-memory exporter for the OTLP one,
// and sends requests carrying W3C traceparent headers: each request's span
// continues the caller's trace, memory operations are GenAI memory spans
// (create_memory, search_memory, update_memory, delete_memory) with their
// gen_ai.* attributes, and the append, the wait for the projections, the
// embedding and each index query are spans below them. No span carries
// the query text.
func TestTracesFollowTheCallersTraceContext(t *testing.T) {
	ctx := context.Background()
	exporter := tracetest.NewInMemoryExporter()
	provider := tracing.NewProvider(sdktrace.WithSyncer(exporter), "test")
	var cfg serveConfig
	if err := parseFlags(serveFlags(&cfg), []string{"--data-dir", t.TempDir(), "--rate-limit", "0", "--ip-rate-limit", "0", "--metrics-addr", ""}); err != nil {
		t.Fatal(err)
	}
	cfg.fillFromStandardEnv()
	a, err := wireServer(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), &telemetry{tracer: provider, shutdown: provider.Shutdown})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.handler)
	t.Cleanup(func() {
		srv.Close()
		a.close(ctx)
	})
	key, err := testserver.RegisterUser(ctx, srv.URL, cfg.MailOutbox, "traced@example.com")
	if err != nil {
		t.Fatal(err)
	}
	const query = "lighthouse-keeper-secret-query"
	traced := func(t *testing.T, method, path string, body any, out any) trace.TraceID {
		t.Helper()
		exporter.Reset()
		traceID, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
		req := newJSONRequest(t, method, srv.URL+"/v1"+path, key, body)
		req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			raw, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		if out != nil {
			var env struct {
				Data json.RawMessage `json:"data"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(env.Data, out); err != nil {
				t.Fatal(err)
			}
		}
		return traceID
	}

	var created struct {
		ID string `json:"id"`
	}
	tests := []struct {
		name, method, path string
		body               func() any
		route, operation   string
		memoryAttrs        []attribute.KeyValue
		below              []string // spans under the memory operation's span
	}{
		{
			name: "create", method: http.MethodPost, path: "/memories",
			body: func() any {
				return map[string]any{"agent_id": "tracer", "type": "note", "content": map[string]any{"content": "the " + query}}
			},
			route: "/v1/memories", operation: "create_memory",
			below: []string{"event_log.append", "projections.wait"},
		},
		{
			name: "search", method: http.MethodPost, path: "/search",
			body:  func() any { return map[string]any{"agent_id": "tracer", "query": query} },
			route: "/v1/search", operation: "search_memory",
			memoryAttrs: []attribute.KeyValue{attribute.Int("gen_ai.memory.record.count", 1)},
			below:       []string{"embeddings glove-sif-100", "keyword_index.search", "vector_index.search"},
		},
		{
			name: "update", method: http.MethodPatch, path: "/memories/{id}",
			body:  func() any { return map[string]any{"tags": []string{"traced"}} },
			route: "/v1/memories/{id}", operation: "update_memory",
			below: []string{"event_log.append", "projections.wait"},
		},
		{
			name: "forget", method: http.MethodDelete, path: "/memories/{id}",
			body:  func() any { return nil },
			route: "/v1/memories/{id}", operation: "delete_memory",
			below: []string{"event_log.append", "projections.wait"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out any
			if tc.operation == "create_memory" {
				out = &created
			}
			want := tc.memoryAttrs
			if strings.Contains(tc.path, "{id}") {
				want = append(want, attribute.String("gen_ai.memory.record.id", created.ID))
			}
			traceID := traced(t, tc.method, strings.ReplaceAll(tc.path, "{id}", created.ID), tc.body(), out)
			spans := exporter.GetSpans()
			byName := map[string]tracetest.SpanStub{}
			for _, s := range spans {
				byName[s.Name] = s
				if s.SpanContext.TraceID() != traceID {
					t.Errorf("span %s is in trace %s, not the caller's %s", s.Name, s.SpanContext.TraceID(), traceID)
				}
				for _, kv := range s.Attributes {
					if strings.Contains(kv.Value.Emit(), query) {
						t.Errorf("span %s carries the query text in %s", s.Name, kv.Key)
					}
				}
			}
			server, ok := byName[tc.method+" "+tc.route]
			if !ok {
				t.Fatalf("no request span %q among %v", tc.method+" "+tc.route, names(spans))
			}
			if server.SpanKind != trace.SpanKindServer || server.Parent.SpanID().String() != "b7ad6b7169203331" {
				t.Errorf("request span: kind %v, parent %s; want a server span under the caller's b7ad6b7169203331", server.SpanKind, server.Parent.SpanID())
			}
			op, ok := byName[tc.operation]
			if !ok {
				t.Fatalf("no %s span among %v", tc.operation, names(spans))
			}
			if op.Parent.SpanID() != server.SpanContext.SpanID() {
				t.Errorf("%s is not under the request span", tc.operation)
			}
			want = append(want, attribute.String("gen_ai.operation.name", tc.operation))
			for _, kv := range want {
				if !hasAttribute(op.Attributes, kv) {
					t.Errorf("%s lacks %s=%s: %v", tc.operation, kv.Key, kv.Value.Emit(), op.Attributes)
				}
			}
			for _, name := range tc.below {
				s, ok := byName[name]
				if !ok {
					t.Errorf("no %s span among %v", name, names(spans))
					continue
				}
				if !descends(spans, s, op.SpanContext.SpanID()) {
					t.Errorf("%s is not below %s", name, tc.operation)
				}
			}
		})
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func hasAttribute(attrs []attribute.KeyValue, want attribute.KeyValue) bool {
	for _, kv := range attrs {
		if kv.Key == want.Key && kv.Value == want.Value {
			return true
		}
	}
	return false
}

// descends reports whether s is below the span ancestor in spans.
func descends(spans tracetest.SpanStubs, s tracetest.SpanStub, ancestor trace.SpanID) bool {
	for range spans {
		if s.Parent.SpanID() == ancestor {
			return true
		}
		found := false
		for _, p := range spans {
			if p.SpanContext.SpanID() == s.Parent.SpanID() {
				s, found = p, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return false
}
