package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ProjectionState is one projection's progress since the start, as the
// projection engine reports it.
type ProjectionState struct {
	Name     string
	Position uint64
	// Batches applied, failed attempts, batches parked after the quick
	// retries failed.
	Batches, Failures, Parked uint64
}

// IndexSize is how many entries a search index backend holds.
type IndexSize struct {
	// Backend is "embedded", "meilisearch" or "qdrant"; Kind is
	// "documents" (keyword) or "vectors".
	Backend, Kind string
	Entries       int
}

// Sources are what the gauges read at each scrape; a nil field leaves its
// families out.
type Sources struct {
	Projections func() []ProjectionState
	// Head is the log's last position; EventTime the time of the first
	// event after position (false when there is none), for the lag in
	// seconds.
	Head      func(ctx context.Context) (uint64, error)
	EventTime func(ctx context.Context, position uint64) (time.Time, bool, error)
	Indexes   func(ctx context.Context) ([]IndexSize, error)
	// Jobs counts the re-embedding jobs by state.
	Jobs func(ctx context.Context) (map[string]int, error)
	// Timeout bounds one scrape's reads (default 5s); Logger hears of a
	// read that failed (its families are then left out of that scrape).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Watch registers the scrape-time gauges over src.
func (m *Metrics) Watch(src Sources) {
	if src.Timeout <= 0 {
		src.Timeout = 5 * time.Second
	}
	if src.Logger == nil {
		src.Logger = slog.New(slog.DiscardHandler)
	}
	m.registry.MustRegister(&gauges{src: src,
		position:    desc("projection_position", "Last log position the projection applied.", "projection"),
		lagEvents:   desc("projection_lag_events", "Events in the log the projection has not applied yet.", "projection"),
		lagSeconds:  desc("projection_lag_seconds", "Age of the oldest event the projection has not applied yet (0 when caught up).", "projection"),
		batches:     desc("projection_batches_applied_total", "Batches of events the projection applied since the start.", "projection"),
		failures:    desc("projection_failures_total", "Failed attempts to apply a batch since the start.", "projection"),
		parked:      desc("projection_batches_parked_total", "Batches parked after the quick retries failed, since the start.", "projection"),
		head:        desc("event_log_head_position", "Position of the newest event in the log."),
		indexSize:   desc("index_entries", "Entries a search index holds, by backend and kind (documents, vectors).", "backend", "kind"),
		jobsByState: desc("jobs", "Re-embedding jobs by state.", "state"),
	})
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

type gauges struct {
	src                                                     Sources
	position, lagEvents, lagSeconds                         *prometheus.Desc
	batches, failures, parked, head, indexSize, jobsByState *prometheus.Desc
}

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{g.position, g.lagEvents, g.lagSeconds, g.batches, g.failures, g.parked, g.head, g.indexSize, g.jobsByState} {
		ch <- d
	}
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), g.src.Timeout)
	defer cancel()
	if g.src.Projections != nil && g.src.Head != nil {
		g.collectProjections(ctx, ch)
	}
	if g.src.Indexes != nil {
		sizes, err := g.src.Indexes(ctx)
		if err != nil {
			g.src.Logger.Warn("metrics: index sizes", "error", err)
		}
		for _, s := range sizes {
			ch <- prometheus.MustNewConstMetric(g.indexSize, prometheus.GaugeValue, float64(s.Entries), s.Backend, s.Kind)
		}
	}
	if g.src.Jobs != nil {
		counts, err := g.src.Jobs(ctx)
		if err != nil {
			g.src.Logger.Warn("metrics: jobs by state", "error", err)
		}
		for state, n := range counts {
			ch <- prometheus.MustNewConstMetric(g.jobsByState, prometheus.GaugeValue, float64(n), state)
		}
	}
}

func (g *gauges) collectProjections(ctx context.Context, ch chan<- prometheus.Metric) {
	head, err := g.src.Head(ctx)
	if err != nil {
		g.src.Logger.Warn("metrics: event log head", "error", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(g.head, prometheus.GaugeValue, float64(head))
	now := time.Now()
	// The oldest event a projection has not applied is the one after its
	// position; projections at one position share the read.
	ages := map[uint64]float64{}
	for _, p := range g.src.Projections() {
		ch <- prometheus.MustNewConstMetric(g.position, prometheus.GaugeValue, float64(p.Position), p.Name)
		ch <- prometheus.MustNewConstMetric(g.batches, prometheus.CounterValue, float64(p.Batches), p.Name)
		ch <- prometheus.MustNewConstMetric(g.failures, prometheus.CounterValue, float64(p.Failures), p.Name)
		ch <- prometheus.MustNewConstMetric(g.parked, prometheus.CounterValue, float64(p.Parked), p.Name)
		var behind uint64
		if head > p.Position {
			behind = head - p.Position
		}
		ch <- prometheus.MustNewConstMetric(g.lagEvents, prometheus.GaugeValue, float64(behind), p.Name)
		age, known := ages[p.Position]
		if behind > 0 && !known && g.src.EventTime != nil {
			at, ok, err := g.src.EventTime(ctx, p.Position)
			if err != nil {
				g.src.Logger.Warn("metrics: projection lag", "projection", p.Name, "error", err)
			} else if ok {
				age = max(0, now.Sub(at).Seconds())
			}
			ages[p.Position] = age
		}
		ch <- prometheus.MustNewConstMetric(g.lagSeconds, prometheus.GaugeValue, age, p.Name)
	}
}
