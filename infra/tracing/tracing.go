// Package tracing is Engram's OpenTelemetry adapter: the tracer provider
// that exports spans over OTLP when the standard OTEL_EXPORTER_OTLP_*
// variables ask for it, and the decorators that give the request's span
// its children: the append to the event log, the wait for the projections,
// each embedding call and each index query.
//
// The decorators take their tracer from the span in the context (the
// request's, which the API starts): work with no span above it, such as
// the background embedding queue, records nothing, and no tracer is held
// in a package variable.
package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// scope names the instrumentation scope of the decorators' spans.
const scope = "github.com/engram-memory/engram/infra/tracing"

// Enabled reports whether the environment (getenv) names an OTLP endpoint
// for traces: OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. Tracing is off without one.
func Enabled(getenv func(string) string) bool {
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// NewOTLP returns a tracer provider that batches spans to the OTLP/HTTP
// endpoint the standard OTEL_EXPORTER_OTLP_* variables configure (the
// exporter reads them: endpoint, headers, timeout, TLS), naming the
// service "engram" at version. shutdown flushes the spans still buffered.
func NewOTLP(ctx context.Context, version string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	sdk := NewProvider(sdktrace.WithBatcher(exporter), version)
	return sdk, sdk.Shutdown, nil
}

// NewProvider returns an SDK tracer provider over the span processor opt
// (a batcher to an exporter; tests pass a syncer to an in-memory one),
// naming the service "engram" at version.
func NewProvider(opt sdktrace.TracerProviderOption, version string) *sdktrace.TracerProvider {
	res := resource.NewSchemaless(attribute.String("service.name", "engram"), attribute.String("service.version", version))
	return sdktrace.NewTracerProvider(opt, sdktrace.WithResource(res))
}

// child starts a child span of the span in ctx; without one (or with
// tracing off) it is a no-op span.
func child(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	tracer := trace.SpanFromContext(ctx).TracerProvider().Tracer(scope)
	return tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// end ends span, recording err as its status.
func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "failed")
	}
	span.End()
}
