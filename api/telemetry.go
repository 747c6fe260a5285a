package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/engram-memory/engram/domain"
)

// RequestObserver hears of every request (the metrics adapter implements
// it). route is the route pattern, never the path, so it names no tenant,
// agent or memory; refused is why a request was refused before its work
// (RefusedBusy, RefusedRateLimited, RefusedQuota, or ""); errorCode is the
// error envelope's code ("" on success).
type RequestObserver interface {
	RequestStarted()
	RequestFinished(route, method string, status int, elapsed time.Duration, refused, errorCode string)
}

// Why a request was refused before its work.
const (
	RefusedBusy        = "busy"
	RefusedRateLimited = "rate_limited"
	RefusedQuota       = "quota"
)

// unmatchedRoute labels a request no route matched: its path is never a
// label, since anyone can send any path.
const unmatchedRoute = "unmatched"

// tracerName names the instrumentation scope of the API's spans.
const tracerName = "github.com/engram-memory/engram/api"

// failureNote is where a request's failure is written down for the
// telemetry middleware: the error envelope is written far below it.
type failureNote struct {
	kind domain.Kind
	code string
}

type failureNoteKey struct{}

// noteFailure records err as the request's failure, if the telemetry
// middleware asked for it.
func noteFailure(ctx context.Context, err error) {
	note, _ := ctx.Value(failureNoteKey{}).(*failureNote)
	if note == nil {
		return
	}
	note.kind = domain.ErrorKind(err)
	var de *domain.Error
	if errors.As(err, &de) {
		note.code = de.PublicCode()
	} else {
		note.code = string(domain.KindInternal)
	}
}

func (n *failureNote) refused() string {
	switch {
	case n.code == "server_busy":
		return RefusedBusy
	case n.kind == domain.KindRateLimited:
		return RefusedRateLimited
	case n.kind == domain.KindQuotaExceeded:
		return RefusedQuota
	}
	return ""
}

// withTelemetry is the outermost middleware: it starts the request's span
// (continuing the caller's W3C trace context) when a tracer is configured,
// and reports every request to the observer when one is. With neither it
// is not installed at all.
func (s *Server) withTelemetry(next http.Handler) http.Handler {
	obs, tp := s.cfg.Requests, s.cfg.Tracer
	if obs == nil && tp == nil {
		return next
	}
	var tracer trace.Tracer
	if tp != nil {
		tracer = tp.Tracer(tracerName)
	}
	propagator := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if obs != nil {
			obs.RequestStarted()
		}
		note := &failureNote{}
		ctx := context.WithValue(r.Context(), failureNoteKey{}, note)
		var span trace.Span
		if tracer != nil {
			ctx = propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
				attribute.String("http.request.method", r.Method),
				attribute.String("url.path", r.URL.Path),
			))
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			route := unmatchedRoute
			if rc := chi.RouteContext(ctx); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			if span != nil {
				span.SetName(r.Method + " " + route)
				span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", rec.status))
				if note.code != "" {
					span.SetAttributes(attribute.String("error.type", note.code))
				}
				if rec.status >= 500 {
					span.SetStatus(codes.Error, http.StatusText(rec.status))
				}
				span.End()
			}
			if obs != nil {
				obs.RequestFinished(route, r.Method, rec.status, time.Since(start), note.refused(), note.code)
			}
		}()
		next.ServeHTTP(rec, r.WithContext(ctx))
	})
}

// Operation names of OpenTelemetry's GenAI memory spans
// (https://github.com/open-telemetry/semantic-conventions-genai/blob/main/docs/gen-ai/gen-ai-spans.md#memory).
const (
	opCreateMemory = "create_memory"
	opSearchMemory = "search_memory"
	opUpdateMemory = "update_memory"
	opDeleteMemory = "delete_memory"
)

// memorySpan starts a memory operation's span under the request's span,
// following the GenAI memory conventions (see the operation names above):
// named for the operation, with gen_ai.operation.name, the record's id
// when the operation names one, and on end the records' count and the
// error's code. The query text and the records' content are opt-in in the
// conventions and never recorded. Without tracing the span is a no-op.
func memorySpan(ctx context.Context, operation, recordID string) (context.Context, func(err error, records int)) {
	tracer := trace.SpanFromContext(ctx).TracerProvider().Tracer(tracerName)
	attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", operation)}
	if recordID != "" {
		attrs = append(attrs, attribute.String("gen_ai.memory.record.id", recordID))
	}
	ctx, span := tracer.Start(ctx, operation, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, func(err error, records int) {
		if err != nil {
			f, _, _ := PublicFailure(err)
			span.SetAttributes(attribute.String("error.type", f.Code))
			span.SetStatus(codes.Error, f.Code)
		} else if records >= 0 {
			span.SetAttributes(attribute.Int("gen_ai.memory.record.count", records))
		}
		span.End()
	}
}
