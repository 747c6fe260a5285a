package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/engram-memory/engram/api"
	apimcp "github.com/engram-memory/engram/api/mcp"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/embed"
	"github.com/engram-memory/engram/infra/llm"
	"github.com/engram-memory/engram/infra/mail"
	"github.com/engram-memory/engram/infra/postgres"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/workers"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/query"
	"github.com/engram-memory/engram/projections/search"
)

// server is one wired Engram server.
type server struct {
	logger  *slog.Logger
	stack   *app.Core
	handler http.Handler

	// The use cases behind the handler, for the command line, which
	// works on a local stack through the same handlers as the API.
	memories   *commands.Memories
	embeddings *commands.Embeddings
	searcher   *search.Service
	sync       *commands.Sync
	pipeline   *commands.Pipeline
	queries    *query.Service
	catalog    *embed.Catalog
	caughtUp   *startupGate
	// mcp are the use cases the MCP tools call: those the REST handlers
	// are given, the one place MCP is wired to them.
	mcp apimcp.Services

	stopEngine context.CancelFunc
	engineDone chan struct{}
	closeOnce  sync.Once
	closers    []func(context.Context) error
}

func newServer(ctx context.Context, cfg serveConfig, logger *slog.Logger) (*server, error) {
	durability, err := sqlite.ParseDurability(cfg.Durability)
	if err != nil {
		return nil, fmt.Errorf("--durability: %w", err)
	}
	st, err := app.Open(ctx, app.Config{
		DataDir: cfg.DataDir, SQLite: sqlite.Options{Durability: durability}, EventStore: cfg.EventStore, ReadModels: cfg.ReadModels, Indexes: cfg.Indexes, NodeID: cfg.NodeID, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	// The event store URL is never logged: it may carry a password.
	logger.Info("event log opened", "event_store", cmp.Or(cfg.EventStore.Backend, app.SQLiteLog), "read_models", cmp.Or(cfg.ReadModels.Backend, app.SQLiteReadModels), "data_dir", cfg.DataDir, "durability", durability,
		"keyword_index", cmp.Or(cfg.Indexes.Keyword, app.Embedded), "vector_index", cmp.Or(cfg.Indexes.Vector, app.Embedded))
	a := &server{logger: logger, stack: st}
	writer := st.Writer

	caughtUp := newStartupGate()
	a.caughtUp = caughtUp
	engineCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stopEngine, a.engineDone = stop, make(chan struct{})
	go func() {
		defer close(a.engineDone)
		if err := st.Engine.Run(engineCtx); err != nil && !errors.Is(err, context.Canceled) {
			logger.Error("projection engine stopped", "error", err)
		}
	}()
	go func() {
		for {
			head, err := st.Store.Head(engineCtx)
			if err == nil {
				err = st.Engine.WaitFor(engineCtx, head)
			}
			if errors.Is(err, domain.ErrStorageFull) && st.Storage != nil {
				// The projections cannot catch up before space is freed:
				// serve meanwhile (writes are refused, reads may miss what
				// the projections have not applied) rather than hang.
				logger.Warn("storage is full at start: serving reads and refusing writes until space is freed", "error", err)
				caughtUp.serve()
				if err = st.Storage.WaitForSpace(engineCtx); err == nil {
					continue
				}
			}
			caughtUp.open(err)
			if err == nil {
				logger.Info("projections caught up", "position", head)
			}
			return
		}
	}()

	catalog, err := newEmbedCatalog(cfg)
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	queue, err := workers.NewEmbedQueue(workers.EmbedQueueConfig{Writer: writer, Reader: st.Memories, Embedder: catalog, Logger: logger})
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	a.runInBackground(queue.Run)
	memories, err := commands.NewMemories(commands.MemoriesConfig{
		Writer: writer, Reader: st.Memories, Embedder: catalog,
		DefaultModel: catalog.DefaultModel(), Queue: queue, Logger: logger, Quotas: cfg.Quotas,
		DecidesOn: []string{projections.MemoriesProjectionName},
	})
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	searcher, err := st.Search(search.ProviderEmbedder{Provider: catalog}, search.Options{})
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	runner := workers.NewJobRunner(writer, st.Jobs, st.Memories, catalog, workers.RunnerConfig{
		ID: cfg.NodeID, LeaseTimeout: cfg.JobLeaseTimeout, BatchSize: cfg.JobBatchSize, BatchDelay: cfg.JobBatchDelay, Queue: queue, Logger: logger,
	})
	a.runInBackground(runner.Run)
	embeddings := commands.NewEmbeddings(commands.EmbeddingsDeps{
		Catalog: catalog, Memories: st.Memories, Jobs: st.Jobs, Writer: writer, Runner: runner,
	})

	sender, err := mail.NewFromConfig(cfg.SMTPURL, cfg.MailOutbox, logger)
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	usage := workers.NewUsageRecorder(writer, cfg.UsageFlush, logger)
	a.runInBackground(usage.Run)
	accounts, err := commands.NewAccounts(commands.AccountsConfig{
		Writer:     writer,
		Reader:     st.Accounts,
		Mailer:     commands.MailerFunc(func(ctx context.Context, m commands.Mail) error { return sender.Send(ctx, mail.Message(m)) }),
		Usage:      usage,
		Agents:     st.Memories,
		Logger:     logger,
		PublicURL:  cfg.PublicURL,
		SessionTTL: cfg.SessionTTL,

		VerificationResendInterval: cfg.ResendInterval,
	})
	if err != nil {
		a.close(ctx)
		return nil, err
	}

	a.sync, err = commands.NewSync(commands.SyncDeps{Writer: writer, Log: st.SyncLog, Owners: st.Memories, Memories: memories, MaxPushBytes: cfg.SyncMaxPushBytes})
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	a.memories, a.embeddings, a.searcher, a.catalog = memories, embeddings, searcher, catalog
	processor, err := newProcessor(cfg)
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	pipeline, err := commands.NewPipeline(commands.PipelineConfig{
		Writer: writer, Memories: st.Memories, Suggestions: st.Suggestions, Creator: memories, Processor: processor, Logger: logger,
	})
	if err != nil {
		a.close(ctx)
		return nil, err
	}

	queries, err := st.Queries(query.Config{Processor: processor.Info(), Catalog: catalog, Similar: searcher})
	if err != nil {
		a.close(ctx)
		return nil, err
	}

	webhooks, err := a.startWebhooks(cfg.Webhooks, st)
	if err != nil {
		a.close(ctx)
		return nil, err
	}

	var rateBuckets api.RateBuckets
	if st.Postgres != nil {
		shared := postgres.NewRateBuckets(st.Postgres)
		rateBuckets = shared
		a.runInBackground(func(ctx context.Context) error { return pruneRateBuckets(ctx, shared, cfg, logger) })
	}
	a.mcp = apimcp.Services{Memories: memories, Search: searcher, Cognition: memories, Pipeline: pipeline, Queries: queries}
	mcpServer := apimcp.NewServer(apimcp.NewServiceBackend(a.mcp, apimcp.Caller{}), apimcp.Options{Version: serverVersion(), Logger: logger})
	srv := api.New(api.Config{
		Logger:        logger,
		MaxBodyBytes:  cfg.MaxBodyBytes,
		UserRateLimit: api.RateLimit{PerSecond: cfg.RateLimit, Burst: cfg.RateBurst},
		IPRateLimit:   api.RateLimit{PerSecond: cfg.IPRateLimit, Burst: cfg.IPRateBurst},
		Ready:         caughtUp.ready,
		StorageFull:   st.StorageFull,
		Auth:          accounts,
		Accounts:      accounts,
		Memories:      a.mcp.Memories,
		Embeddings:    embeddings,
		Search:        a.mcp.Search,
		MCP:           apimcp.HTTPHandler(mcpServer, logger),
		PublicURL:     mcpPublicURL(cfg),

		BodyReadTimeout: cfg.BodyReadTimeout,
		WriteTimeout:    cfg.WriteTimeout,
		MaxInFlight:     cfg.MaxInFlight,
		Backends:        st.Backends,
		Projections:     func() any { return st.Engine.Status() },
		Sync:            a.sync,
		Pipeline:        a.mcp.Pipeline,
		Cognition:       a.mcp.Cognition,
		Queries:         a.mcp.Queries,
		Webhooks:        webhooks,

		Visibility:         st.Engine,
		ConsistencyWait:    cfg.ConsistencyWait,
		LogHead:            st.Store.Head,
		CredentialsCurrent: st.CredentialsCurrent,
		RateBuckets:        rateBuckets,
	})
	a.pipeline, a.queries = pipeline, queries
	a.handler = caughtUp.gate(srv.Handler())
	return a, nil
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

// runInBackground runs a component until the app closes; its final work
// (e.g. a last flush that waits for projections) finishes before the
// projection engine stops.
func (a *server) runInBackground(run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			a.logger.Error("background component stopped", "error", err)
		}
	}()
	a.closers = append(a.closers, func(context.Context) error {
		cancel()
		<-done
		return nil
	})
}

// close stops everything in dependency order; it is safe to call twice.
func (a *server) close(ctx context.Context) error {
	var errs []error
	a.closeOnce.Do(func() {
		for i := len(a.closers) - 1; i >= 0; i-- {
			errs = append(errs, a.closers[i](ctx))
		}
		a.stopEngine()
		<-a.engineDone
		errs = append(errs, a.stack.Close())
	})
	return errors.Join(errs...)
}

// startupGate holds API requests until the projections have applied the log
// as it stood at start, so no read misses a write acknowledged before a
// restart; or until storage turns out to be full, since then they cannot.
type startupGate struct {
	done chan struct{}
	err  error
	// serving is closed once requests may pass: with done, or earlier
	// when storage is full (serve).
	serving   chan struct{}
	serveOnce sync.Once
}

func newStartupGate() *startupGate {
	return &startupGate{done: make(chan struct{}), serving: make(chan struct{})}
}

func (g *startupGate) open(err error) {
	g.err = err
	close(g.done)
	g.serve()
}

// serve lets requests pass before the projections have caught up.
func (g *startupGate) serve() { g.serveOnce.Do(func() { close(g.serving) }) }

// waitServing blocks until requests may pass (see serve), or ctx ends.
func (g *startupGate) waitServing(ctx context.Context) error {
	select {
	case <-g.serving:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-g.done:
		return g.err
	default:
		return nil
	}
}

func (g *startupGate) ready(context.Context) error {
	select {
	case <-g.done:
		return g.err
	default:
		return fmt.Errorf("projections are catching up with the event log")
	}
}

// wait blocks until the projections have caught up, or ctx ends.
func (g *startupGate) wait(ctx context.Context) error {
	select {
	case <-g.done:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *startupGate) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case <-g.serving:
		case <-r.Context().Done():
			return
		}
		next.ServeHTTP(w, r)
	})
}

// newProcessor is the processing pipeline's processor: the chat model when
// one is configured, else the rule-based extractor.
func newProcessor(cfg serveConfig) (commands.Processor, error) {
	if cfg.ChatModel == "" {
		return processing.NewRuleExtractor(), nil
	}
	chat, err := llm.New(llm.Options{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, Organization: cfg.OpenAIOrg, Model: cfg.ChatModel, Timeout: cfg.ChatTimeout})
	if err != nil {
		return nil, fmt.Errorf("--chat-model: %w", err)
	}
	return chat, nil
}
