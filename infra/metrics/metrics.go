// Package metrics is Engram's Prometheus adapter: one registry of its own
// (never the client library's global one) holding every metric family,
// the observers the other layers report to, and the collectors that read
// gauges (projection positions, index sizes, jobs) at scrape time.
//
// No label carries a tenant, user, agent, e-mail or text: every label
// value comes from a small, fixed set (a route pattern, a method, a status,
// a projection, a provider and model, a backend, a job state, a tool), so
// the series stay few and the scrape tells nothing about who did what.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "engram"

// Metrics holds the registry and the families the observers feed.
type Metrics struct {
	registry *prometheus.Registry

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	inFlight        prometheus.Gauge
	refused         *prometheus.CounterVec
	authFailures    *prometheus.CounterVec

	appends         *prometheus.CounterVec
	appendedEvents  prometheus.Counter
	groupCommitSize prometheus.Histogram
	commitDuration  prometheus.Histogram
	visibilityWaits *prometheus.HistogramVec

	embedCalls    *prometheus.CounterVec
	embedDuration *prometheus.HistogramVec
	embedErrors   *prometheus.CounterVec

	mcpCalls *prometheus.CounterVec
}

// New returns metrics on a registry of their own, with the Go runtime's
// and the process's collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and method.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5ms … 16s
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "http_requests_in_flight",
			Help: "HTTP requests being served now.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_refused_total",
			Help: "HTTP requests refused before their work: busy (--max-in-flight), rate_limited, quota.",
		}, []string{"reason"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "auth_failures_total",
			Help: "Requests answered 401, by error code.",
		}, []string{"code"}),
		appends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "event_log_appends_total",
			Help: "Appends to the event log, by result (ok, conflict, error).",
		}, []string{"result"}),
		appendedEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "event_log_appended_events_total",
			Help: "Events appended to the event log.",
		}),
		groupCommitSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "event_log_group_commit_appends",
			Help:    "Appends committed together in one transaction of the embedded (SQLite) log.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
		}),
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "event_log_fsync_duration_seconds",
			Help:    "Time of the commit of one group of the embedded (SQLite) log: with --durability durable, the sync to disk.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16), // 0.1ms … 3.3s
		}),
		visibilityWaits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "write_visibility_wait_seconds",
			Help:    "Time a write waited for the projections to apply it, by result (visible, timeout, error).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18), // 0.1ms … 13s
		}, []string{"result"}),
		embedCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "embedding_calls_total",
			Help: "Calls to an embedding provider, by provider and model.",
		}, []string{"provider", "model"}),
		embedDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "embedding_duration_seconds",
			Help:    "Time of one call to an embedding provider, by provider and model.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"provider", "model"}),
		embedErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "embedding_errors_total",
			Help: "Failed calls to an embedding provider, by provider and model.",
		}, []string{"provider", "model"}),
		mcpCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "mcp_tool_calls_total",
			Help: "MCP tool calls, by tool and result (ok, error).",
		}, []string{"tool", "result"}),
	}
	reg.MustRegister(
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.requestDuration, m.inFlight, m.refused, m.authFailures,
		m.appends, m.appendedEvents, m.groupCommitSize, m.commitDuration, m.visibilityWaits,
		m.embedCalls, m.embedDuration, m.embedErrors, m.mcpCalls,
	)
	// The series of every known outcome exist from the start, at zero, so
	// a rate over them needs no first event.
	for _, reason := range []string{"busy", "rate_limited", "quota"} {
		m.refused.WithLabelValues(reason)
	}
	for _, res := range []string{"ok", "conflict", "error"} {
		m.appends.WithLabelValues(res)
	}
	for _, res := range []string{"visible", "timeout", "error"} {
		m.visibilityWaits.WithLabelValues(res)
	}
	m.authFailures.WithLabelValues("unauthorized")
	return m
}

// Handler serves the registry in Prometheus's exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Registry is the registry, for a collector of the wiring's own.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// RequestStarted and RequestFinished implement the API's request observer.
func (m *Metrics) RequestStarted() { m.inFlight.Inc() }

// RequestFinished counts an answered request. route is the route pattern
// ("/v1/memories/{memory_id}"), never the path; refused names why the
// request was refused before its work ("" when it was not).
func (m *Metrics) RequestFinished(route, method string, status int, elapsed time.Duration, refused, errorCode string) {
	m.inFlight.Dec()
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.requestDuration.WithLabelValues(route, method).Observe(elapsed.Seconds())
	if refused != "" {
		m.refused.WithLabelValues(refused).Inc()
	}
	if status == http.StatusUnauthorized {
		m.authFailures.WithLabelValues(errorCode).Inc()
	}
}

// GroupCommitted implements the embedded log's commit observer.
func (m *Metrics) GroupCommitted(appends int, commit time.Duration) {
	m.groupCommitSize.Observe(float64(appends))
	m.commitDuration.Observe(commit.Seconds())
}

// ToolCalled implements the MCP server's tool observer.
func (m *Metrics) ToolCalled(tool string, failed bool) {
	m.mcpCalls.WithLabelValues(tool, result(failed)).Inc()
}

func result(failed bool) string {
	if failed {
		return "error"
	}
	return "ok"
}
