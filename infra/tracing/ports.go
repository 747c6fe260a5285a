package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/engram-memory/engram/domain"
)

// EventStore traces every append to store as a span "event_log.append"
// with the number of events (and of streams, for a multi-stream append); everything else passes through. The stream
// is not recorded: its name carries tenant ids.
func EventStore(store domain.EventStore) domain.EventStore { return tracedStore{EventStore: store} }

type tracedStore struct{ domain.EventStore }

func (s tracedStore) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	ctx, span := child(ctx, "event_log.append", trace.SpanKindClient, attribute.Int("engram.events", len(events)))
	res, err := s.EventStore.Append(ctx, stream, expected, events)
	if err == nil {
		span.SetAttributes(attribute.Int64("engram.log.position", int64(res.LastPosition)))
	}
	end(span, err)
	return res, err
}

func (s tracedStore) AppendStreams(ctx context.Context, parts []domain.StreamAppend) ([]domain.AppendResult, error) {
	events := 0
	for _, p := range parts {
		events += len(p.Events)
	}
	ctx, span := child(ctx, "event_log.append", trace.SpanKindClient, attribute.Int("engram.events", events), attribute.Int("engram.streams", len(parts)))
	res, err := s.EventStore.AppendStreams(ctx, parts)
	if err == nil {
		span.SetAttributes(attribute.Int64("engram.log.position", int64(res[len(res)-1].LastPosition)))
	}
	end(span, err)
	return res, err
}

// Visibility is what a write waits on for its events to be applied (the
// projection engine; commands.Visibility).
type Visibility interface {
	WaitFor(ctx context.Context, position uint64) error
	WaitForProjections(ctx context.Context, position uint64, names ...string) error
}

// WaitForProjections traces every wait of a write for the projections as a
// span "projections.wait".
func WaitForProjections(v Visibility) Visibility { return tracedVisibility{v: v} }

type tracedVisibility struct{ v Visibility }

func (t tracedVisibility) WaitFor(ctx context.Context, position uint64) error {
	return t.WaitForProjections(ctx, position)
}

func (t tracedVisibility) WaitForProjections(ctx context.Context, position uint64, names ...string) error {
	ctx, span := child(ctx, "projections.wait", trace.SpanKindInternal,
		attribute.Int64("engram.log.position", int64(position)), attribute.StringSlice("engram.projections", names))
	err := t.v.WaitForProjections(ctx, position, names...)
	end(span, err)
	return err
}

// EmbeddingProvider traces every call to p as an embeddings span of
// OpenTelemetry's GenAI conventions ("embeddings {model}", with
// gen_ai.operation.name, gen_ai.provider.name and gen_ai.request.model).
func EmbeddingProvider(p domain.EmbeddingProvider) domain.EmbeddingProvider {
	return tracedProvider{EmbeddingProvider: p}
}

type tracedProvider struct{ domain.EmbeddingProvider }

func (p tracedProvider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	ctx, span := child(ctx, "embeddings "+req.Model, trace.SpanKindClient,
		attribute.String("gen_ai.operation.name", "embeddings"),
		attribute.String("gen_ai.provider.name", p.Name()),
		attribute.String("gen_ai.request.model", req.Model),
		attribute.Int("engram.texts", len(req.Texts)))
	res, err := p.EmbeddingProvider.Embed(ctx, req)
	end(span, err)
	return res, err
}

// KeywordIndex traces every query of ix as a span "keyword_index.search"
// naming the backend; writes pass through untraced.
func KeywordIndex(ix domain.KeywordIndex, backend string) domain.KeywordIndex {
	return tracedKeyword{KeywordIndex: ix, backend: backend}
}

type tracedKeyword struct {
	domain.KeywordIndex
	backend string
}

func (k tracedKeyword) SearchKeyword(ctx context.Context, q domain.KeywordQuery) ([]domain.IndexHit, error) {
	ctx, span := child(ctx, "keyword_index.search", trace.SpanKindClient, attribute.String("engram.index.backend", k.backend))
	hits, err := k.KeywordIndex.SearchKeyword(ctx, q)
	span.SetAttributes(attribute.Int("engram.index.hits", len(hits)))
	end(span, err)
	return hits, err
}

// VectorIndex traces every query of ix as a span "vector_index.search"
// naming the backend; writes pass through untraced.
func VectorIndex(ix domain.VectorIndex, backend string) domain.VectorIndex {
	return tracedVectors{VectorIndex: ix, backend: backend}
}

type tracedVectors struct {
	domain.VectorIndex
	backend string
}

func (v tracedVectors) SearchVectors(ctx context.Context, q domain.VectorQuery) ([]domain.IndexHit, error) {
	ctx, span := child(ctx, "vector_index.search", trace.SpanKindClient, attribute.String("engram.index.backend", v.backend))
	hits, err := v.VectorIndex.SearchVectors(ctx, q)
	span.SetAttributes(attribute.Int("engram.index.hits", len(hits)))
	end(span, err)
	return hits, err
}
