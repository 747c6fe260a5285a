package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/engram-memory/engram/domain"
)

// EventStore counts the appends to store and the events they carry, by
// result; everything else passes through.
func (m *Metrics) EventStore(store domain.EventStore) domain.EventStore {
	return countedStore{EventStore: store, m: m}
}

type countedStore struct {
	domain.EventStore
	m *Metrics
}

func (s countedStore) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	res, err := s.EventStore.Append(ctx, stream, expected, events)
	s.count(err, len(events))
	return res, err
}

// AppendStreams counts one append, of all the parts' events.
func (s countedStore) AppendStreams(ctx context.Context, parts []domain.StreamAppend) ([]domain.AppendResult, error) {
	res, err := s.EventStore.AppendStreams(ctx, parts)
	events := 0
	for _, p := range parts {
		events += len(p.Events)
	}
	s.count(err, events)
	return res, err
}

func (s countedStore) count(err error, events int) {
	switch {
	case err == nil:
		s.m.appends.WithLabelValues("ok").Inc()
		s.m.appendedEvents.Add(float64(events))
	case errors.Is(err, domain.ErrWrongExpectedVersion):
		s.m.appends.WithLabelValues("conflict").Inc()
	default:
		s.m.appends.WithLabelValues("error").Inc()
	}
}

// Visibility is what a write waits on for its events to be applied (the
// projection engine; commands.Visibility).
type Visibility interface {
	WaitFor(ctx context.Context, position uint64) error
	WaitForProjections(ctx context.Context, position uint64, names ...string) error
}

// Visibility times every wait of a write for the projections, by result.
func (m *Metrics) Visibility(v Visibility) Visibility { return timedVisibility{v: v, m: m} }

type timedVisibility struct {
	v Visibility
	m *Metrics
}

func (t timedVisibility) WaitFor(ctx context.Context, position uint64) error {
	return t.WaitForProjections(ctx, position)
}

func (t timedVisibility) WaitForProjections(ctx context.Context, position uint64, names ...string) error {
	start := time.Now()
	err := t.v.WaitForProjections(ctx, position, names...)
	outcome := "visible"
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		outcome = "timeout"
	case err != nil:
		outcome = "error"
	}
	t.m.visibilityWaits.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
	return err
}

// EmbeddingProvider counts and times p's calls, by p's name and the model
// asked for (the catalog resolves "default" before it calls a provider).
// The series of each model p serves exist from the start, at zero.
func (m *Metrics) EmbeddingProvider(p domain.EmbeddingProvider) domain.EmbeddingProvider {
	for _, model := range p.Models() {
		m.embedCalls.WithLabelValues(p.Name(), model.Name)
		m.embedDuration.WithLabelValues(p.Name(), model.Name)
		m.embedErrors.WithLabelValues(p.Name(), model.Name)
	}
	return timedProvider{EmbeddingProvider: p, m: m}
}

type timedProvider struct {
	domain.EmbeddingProvider
	m *Metrics
}

func (p timedProvider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	provider := p.Name()
	start := time.Now()
	res, err := p.EmbeddingProvider.Embed(ctx, req)
	p.m.embedCalls.WithLabelValues(provider, req.Model).Inc()
	p.m.embedDuration.WithLabelValues(provider, req.Model).Observe(time.Since(start).Seconds())
	if err != nil {
		p.m.embedErrors.WithLabelValues(provider, req.Model).Inc()
	}
	return res, err
}
