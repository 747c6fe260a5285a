package cli

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/engram-memory/engram/api"
	apimcp "github.com/engram-memory/engram/api/mcp"
	"github.com/engram-memory/engram/infra/postgres"
	"github.com/engram-memory/engram/internal/app"
)

// server is one wired Engram server: the application (internal/app) with
// every part, and the HTTP API over it.
type server struct {
	logger    *slog.Logger
	app       *app.App
	handler   http.Handler
	telemetry *telemetry
}

func newServer(ctx context.Context, cfg serveConfig, logger *slog.Logger) (*server, error) {
	tel, err := newTelemetry(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return wireServer(ctx, cfg, logger, tel)
}

// wireServer wires the server with tel's metrics and traces.
func wireServer(ctx context.Context, cfg serveConfig, logger *slog.Logger, tel *telemetry) (*server, error) {
	settings, err := cfg.settings(logger)
	if err != nil {
		_ = tel.shutdown(ctx)
		return nil, err
	}
	settings.Observe = tel.observers()
	settings.Embedding.Observe = tel.embeddingProvider
	a, err := app.New(ctx, settings, app.Server)
	if err != nil {
		_ = tel.shutdown(ctx)
		return nil, err
	}
	tel.watch(a.Core)
	// The event store URL is never logged: it may carry a password.
	logger.Info("event log opened", "event_store", cmp.Or(cfg.EventStore.Backend, app.SQLiteLog), "read_models", cmp.Or(cfg.ReadModels.Backend, app.SQLiteReadModels), "data_dir", cfg.DataDir, "durability", settings.SQLite.Durability,
		"keyword_index", cmp.Or(cfg.Indexes.Keyword, app.Embedded), "vector_index", cmp.Or(cfg.Indexes.Vector, app.Embedded))
	st := a.Core
	webhooks, err := startWebhooks(cfg.Webhooks, a, logger)
	if err != nil {
		_ = a.Close(ctx)
		return nil, err
	}
	var rateBuckets api.RateBuckets
	if st.Postgres != nil {
		shared := postgres.NewRateBuckets(st.Postgres)
		rateBuckets = shared
		a.RunInBackground("rate_bucket_pruning", func(ctx context.Context) error { return pruneRateBuckets(ctx, shared, cfg, logger) })
	}
	mcpServer := apimcp.NewServer(apimcp.NewServiceBackend(a.MCP, apimcp.Caller{}), apimcp.Options{Version: serverVersion(), Logger: logger, Tools: tel.tools()})
	caughtUp := a.CaughtUp()
	srv := api.New(api.Config{
		Logger:        logger,
		MaxBodyBytes:  cfg.MaxBodyBytes,
		UserRateLimit: api.RateLimit{PerSecond: cfg.RateLimit, Burst: cfg.RateBurst},
		IPRateLimit:   api.RateLimit{PerSecond: cfg.IPRateLimit, Burst: cfg.IPRateBurst},
		Ready:         caughtUp.Ready,
		StorageFull:   st.StorageFull,
		Auth:          a.Accounts,
		Accounts:      a.Accounts,
		Memories:      a.MCP.Memories,
		Embeddings:    a.Embeddings,
		Search:        a.MCP.Search,
		MCP:           apimcp.HTTPHandler(mcpServer, logger),
		PublicURL:     mcpPublicURL(cfg),

		BodyReadTimeout: cfg.BodyReadTimeout,
		WriteTimeout:    cfg.WriteTimeout,
		MaxInFlight:     cfg.MaxInFlight,
		Backends:        st.Backends,
		Projections:     func() any { return st.Engine.Status() },
		Sync:            a.Sync,
		Transfer:        a.Transfer,
		Pipeline:        a.MCP.Pipeline,
		Cognition:       a.MCP.Cognition,
		Queries:         a.MCP.Queries,
		Webhooks:        webhooks,

		Visibility:         st.Engine,
		ConsistencyWait:    cfg.ConsistencyWait,
		LogHead:            st.Store.Head,
		CredentialsCurrent: st.CredentialsCurrent,
		RateBuckets:        rateBuckets,
		Requests:           tel.requests(),
		Tracer:             tel.tracer,
	})
	return &server{logger: logger, app: a, handler: gate(caughtUp, srv.Handler()), telemetry: tel}, nil
}

// pruneRateBuckets drops, every few minutes, the shared rate-limit buckets
// idle long enough to be full again (which is the same as none).
func pruneRateBuckets(ctx context.Context, buckets *postgres.RateBuckets, cfg serveConfig, logger *slog.Logger) error {
	idle := time.Hour
	for _, l := range []struct {
		perSecond float64
		burst     int
	}{{cfg.RateLimit, cfg.RateBurst}, {cfg.IPRateLimit, cfg.IPRateBurst}} {
		if l.perSecond > 0 {
			idle = max(idle, 2*time.Duration(float64(l.burst)/l.perSecond*float64(time.Second)))
		}
	}
	tick := time.NewTicker(5 * time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if err := buckets.Prune(ctx, idle); err != nil && ctx.Err() == nil {
				logger.Warn("pruning rate-limit buckets failed", "error", err)
			}
		}
	}
}

// close stops everything in dependency order; it is safe to call twice.
// The spans of the work stopped are flushed last.
func (a *server) close(ctx context.Context) error {
	return errors.Join(a.app.Close(ctx), a.telemetry.shutdown(ctx))
}

// gate holds API requests (but the health checks) until the projections
// have applied the log as it stood at start (app.StartupGate).
func gate(g *app.StartupGate, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case <-g.Serving():
		case <-r.Context().Done():
			return
		}
		next.ServeHTTP(w, r)
	})
}
