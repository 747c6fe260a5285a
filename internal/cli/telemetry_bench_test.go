package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/engram-memory/engram/infra/metrics"
	"github.com/engram-memory/engram/infra/tracing"
	"github.com/engram-memory/engram/internal/testserver"
)

// BenchmarkTelemetryOverhead measures POST /v1/memories and POST /v1/search
// end to end over loopback HTTP, one client, with metrics and tracing off,
// each alone, and both: what they add to a request. Tracing exports
// through the SDK's batcher to an exporter that drops the spans (the
// network to a collector is not measured); metrics are not scraped.
func BenchmarkTelemetryOverhead(b *testing.B) {
	modes := []struct {
		name             string
		metrics, tracing bool
	}{{"off", false, false}, {"metrics", true, false}, {"tracing", false, true}, {"both", true, true}}
	for _, route := range []string{"memories", "search"} {
		for _, mode := range modes {
			b.Run(fmt.Sprintf("route=%s/telemetry=%s", route, mode.name), func(b *testing.B) {
				tel := &telemetry{shutdown: func(context.Context) error { return nil }}
				if mode.metrics {
					tel.metrics = metrics.New()
				}
				if mode.tracing {
					tp := tracing.NewProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), "bench")
					tel.tracer, tel.shutdown = tp, tp.Shutdown
				}
				url, key := startWithTelemetry(b, tel)
				client := &http.Client{}
				defer client.CloseIdleConnections()
				body := func(i int) string {
					return fmt.Sprintf(`{"agent_id":"bench","type":"notes","content":{"content":"note %d: the deploy pipeline needs a manual approval step"}}`, i)
				}
				path := "/memories"
				if route == "search" {
					for i := range 200 {
						if err := postMemory(client, url, key, body(i)); err != nil {
							b.Fatal(err)
						}
					}
					path = "/search"
					body = func(int) string { return `{"agent_id":"bench","query":"manual approval for the deploy"}` }
				}
				b.ResetTimer()
				for i := range b.N {
					if err := post(client, url+path, key, body(i)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// startWithTelemetry wires a server in process as `engram serve` does,
// with tel, and returns its API URL and a registered user's key.
func startWithTelemetry(b *testing.B, tel *telemetry) (apiURL, key string) {
	b.Helper()
	ctx := context.Background()
	var cfg serveConfig
	if err := parseFlags(serveFlags(&cfg), []string{"--data-dir", b.TempDir(), "--rate-limit", "0", "--ip-rate-limit", "0", "--process-interval", "0"}); err != nil {
		b.Fatal(err)
	}
	cfg.fillFromStandardEnv()
	a, err := wireServer(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), tel)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(a.handler)
	b.Cleanup(func() {
		srv.Close()
		a.close(ctx)
	})
	key, err = testserver.RegisterUser(ctx, srv.URL, cfg.MailOutbox, "bench@example.com")
	if err != nil {
		b.Fatal(err)
	}
	return srv.URL + "/v1", key
}

func post(client *http.Client, url, key, body string) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		raw, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, raw)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
