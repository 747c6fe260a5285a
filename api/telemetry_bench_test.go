package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/infra/metrics"
	"github.com/engram-memory/engram/infra/tracing"
)

// BenchmarkRequestTelemetry is the CPU a request's metrics and span add,
// alone: GET /healthz through the API's whole middleware chain, in
// process, with metrics and tracing off, each alone, and both (spans go
// through the SDK's batcher to an exporter that drops them).
func BenchmarkRequestTelemetry(b *testing.B) {
	for _, mode := range []struct {
		name             string
		metrics, tracing bool
	}{{"off", false, false}, {"metrics", true, false}, {"tracing", false, true}, {"both", true, true}} {
		b.Run("telemetry="+mode.name, func(b *testing.B) {
			cfg := api.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if mode.metrics {
				cfg.Requests = metrics.New()
			}
			if mode.tracing {
				tp := tracing.NewProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), "bench")
				b.Cleanup(func() { _ = tp.Shutdown(b.Context()) })
				cfg.Tracer = tp
			}
			h := api.New(cfg).Handler()
			req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
			req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}
