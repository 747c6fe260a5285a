package cli

import (
	"cmp"
	"context"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/engram-memory/engram/api"
	apimcp "github.com/engram-memory/engram/api/mcp"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/infra/metrics"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/tracing"
	"github.com/engram-memory/engram/internal/app"
)

// telemetry is the server's metrics (nil without --metrics-addr) and
// tracer provider (nil unless OTEL_EXPORTER_OTLP_ENDPOINT is set), and
// the decorators that feed them.
type telemetry struct {
	metrics  *metrics.Metrics
	tracer   trace.TracerProvider
	shutdown func(context.Context) error
}

// newTelemetry builds what cfg and the environment turn on.
func newTelemetry(ctx context.Context, cfg serveConfig) (*telemetry, error) {
	t := &telemetry{shutdown: func(context.Context) error { return nil }}
	if cfg.MetricsAddr != "" {
		t.metrics = metrics.New()
	}
	if tracing.Enabled(os.Getenv) {
		tp, shutdown, err := tracing.NewOTLP(ctx, serverVersion())
		if err != nil {
			return nil, err
		}
		var once sync.Once
		t.tracer = tp
		// Closing the server twice flushes once.
		t.shutdown = func(ctx context.Context) (err error) {
			once.Do(func() { err = shutdown(ctx) })
			return err
		}
	}
	return t, nil
}

// observers wrap the stack's ports: metrics inside, traces outside, so a
// span covers what the metrics time.
func (t *telemetry) observers() app.Observers {
	var o app.Observers
	m, traced := t.metrics, t.tracer != nil
	if m == nil && !traced {
		return o
	}
	o.Appends = func(s domain.EventStore) domain.EventStore {
		if m != nil {
			s = m.EventStore(s)
		}
		if traced {
			s = tracing.EventStore(s)
		}
		return s
	}
	o.Visibility = func(v commands.Visibility) commands.Visibility {
		if m != nil {
			v = m.Visibility(v)
		}
		if traced {
			v = tracing.WaitForProjections(v)
		}
		return v
	}
	if traced {
		o.Keyword, o.Vector = tracing.KeywordIndex, tracing.VectorIndex
	}
	return o
}

// embeddingProvider wraps every embedding provider.
func (t *telemetry) embeddingProvider(p domain.EmbeddingProvider) domain.EmbeddingProvider {
	if t.metrics != nil {
		p = t.metrics.EmbeddingProvider(p)
	}
	if t.tracer != nil {
		p = tracing.EmbeddingProvider(p)
	}
	return p
}

// watch points the stack's ports at the metrics: the embedded log's
// group commits and the scrape-time gauges.
func (t *telemetry) watch(st *app.Core) {
	if t.metrics == nil {
		return
	}
	if log, ok := st.Store.(*sqlite.EventStore); ok {
		log.ObserveCommits(t.metrics)
	}
	t.metrics.Watch(metrics.Sources{
		Projections: func() []metrics.ProjectionState {
			var out []metrics.ProjectionState
			for name, p := range st.Engine.Status() {
				out = append(out, metrics.ProjectionState{Name: name, Position: p.Position, Batches: p.Batches, Failures: p.FailedAttempts, Parked: p.Parked})
			}
			return out
		},
		Head: st.Store.Head,
		EventTime: func(ctx context.Context, position uint64) (time.Time, bool, error) {
			events, err := st.Store.ReadAll(ctx, position, 1)
			if err != nil || len(events) == 0 {
				return time.Time{}, false, err
			}
			return events[0].Time, true, nil
		},
		Indexes: func(ctx context.Context) ([]metrics.IndexSize, error) {
			var out []metrics.IndexSize
			for _, ix := range []struct {
				port          any
				backend, kind string
			}{
				{st.KeywordIndex, cmp.Or(st.IndexChoice().Keyword, app.Embedded), "documents"},
				{st.VectorIndex, cmp.Or(st.IndexChoice().Vector, app.Embedded), "vectors"},
			} {
				counted, ok := ix.port.(interface {
					Entries(context.Context) (int, error)
				})
				if !ok {
					continue
				}
				n, err := counted.Entries(ctx)
				if err != nil {
					return out, err
				}
				out = append(out, metrics.IndexSize{Backend: ix.backend, Kind: ix.kind, Entries: n})
			}
			return out, nil
		},
		Jobs: func(ctx context.Context) (map[string]int, error) {
			counts, err := st.Jobs.CountByStatus(ctx)
			if err != nil {
				return nil, err
			}
			// Every state has its series, at zero while no job is in it.
			for _, state := range []job.Status{job.StatusQueued, job.StatusRunning, job.StatusCompleted, job.StatusFailed, job.StatusCancelled} {
				counts[string(state)] += 0
			}
			return counts, nil
		},
		Logger: st.Logger,
	})
}

// requests is the API's request observer, nil without metrics.
func (t *telemetry) requests() api.RequestObserver {
	if t.metrics == nil {
		return nil
	}
	return t.metrics
}

// tools is the MCP server's tool observer, nil without metrics.
func (t *telemetry) tools() apimcp.ToolObserver {
	if t.metrics == nil {
		return nil
	}
	return t.metrics
}
