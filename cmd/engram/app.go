package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/datadir"
	"github.com/engram-memory/engram/infra/llm"
	"github.com/engram-memory/engram/infra/mail"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/search"
)

// app is one wired Engram server on the embedded storage.
type app struct {
	logger  *slog.Logger
	storage *storage
	engine  *projections.Engine
	handler http.Handler

	stopEngine context.CancelFunc
	engineDone chan struct{}
	closeOnce  sync.Once
	closers    []func(context.Context) error
}

// storage is the embedded storage and the projections over it; the server
// and the offline maintenance commands share it.
type storage struct {
	// owner is the data dir's one-writer lock; nil when opened read-only.
	owner    *datadir.Lock
	db       *sqlite.DB
	store    *sqlite.EventStore
	accounts *sqlite.Accounts
	memories *sqlite.Memories
	keyword  *sqlite.Keyword
	vectors  *projections.Vectors
	jobs     *sqlite.Jobs
	// suggestions is the read model of processing suggestions.
	suggestions *sqlite.Suggestions
	// provenance and audit are read models of stack cognition.
	provenance *sqlite.Provenance
	audit      *sqlite.Audit
	// vectorIndex is the in-process vector index behind vectors.
	vectorIndex *vectorindex.Index
}

// openStorage opens the data dir. Unless opts.ReadOnly, it first takes the
// data dir's lock: a second writer (another `engram serve`, a `projections
// rebuild` beside a live server) is refused at once, naming the holder.
// Read-only openers take no lock and never write.
func openStorage(ctx context.Context, dataDir string, opts sqlite.Options, logger *slog.Logger) (*storage, error) {
	var owner *datadir.Lock
	if !opts.ReadOnly {
		var err error
		if owner, err = datadir.Acquire(dataDir); err != nil {
			return nil, err
		}
	}
	db, err := sqlite.Open(ctx, dataDir, opts)
	if err != nil {
		owner.Release()
		return nil, err
	}
	vi := vectorindex.New(vectorindex.Options{})
	return &storage{
		owner:       owner,
		db:          db,
		store:       sqlite.NewEventStore(db, 500*time.Millisecond),
		accounts:    sqlite.NewAccounts(db),
		memories:    sqlite.NewMemories(db),
		keyword:     sqlite.NewKeyword(db),
		vectors:     projections.NewVectors(sqlite.NewVectorStore(db), vi, logger),
		jobs:        sqlite.NewJobs(db),
		suggestions: sqlite.NewSuggestions(db),
		provenance:  sqlite.NewProvenance(db),
		audit:       sqlite.NewAudit(db),
		vectorIndex: vi,
	}, nil
}

// close releases the indexes, the database and then the data dir.
func (st *storage) close() error {
	st.vectorIndex.Close()
	return errors.Join(st.db.Close(), st.owner.Release())
}

// projections lists every projection, in the order they are rebuilt.
func (st *storage) projections() []projections.Projection {
	return []projections.Projection{st.accounts, st.memories, st.keyword, st.vectors, st.jobs, st.provenance, st.audit, st.suggestions}
}

func newApp(ctx context.Context, cfg serveConfig, logger *slog.Logger) (*app, error) {
	durability, err := sqlite.ParseDurability(cfg.Durability)
	if err != nil {
		return nil, fmt.Errorf("--durability: %w", err)
	}
	st, err := openStorage(ctx, cfg.DataDir, sqlite.Options{Durability: durability}, logger)
	if err != nil {
		return nil, err
	}
	logger.Info("event log opened", "data_dir", cfg.DataDir, "durability", durability)
	a := &app{logger: logger, storage: st}
	a.engine = projections.NewEngine(st.store, logger, st.projections()...)
	writer := commands.NewEventWriter(st.store, a.engine)

	caughtUp := newStartupGate()
	engineCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stopEngine, a.engineDone = stop, make(chan struct{})
	go func() {
		defer close(a.engineDone)
		if err := a.engine.Run(engineCtx); err != nil && !errors.Is(err, context.Canceled) {
			logger.Error("projection engine stopped", "error", err)
		}
	}()
	go func() {
		head, err := st.store.Head(engineCtx)
		if err == nil {
			err = a.engine.WaitFor(engineCtx, head)
		}
		caughtUp.open(err)
		if err == nil {
			logger.Info("projections caught up", "position", head)
		}
	}()

	catalog, err := newEmbedCatalog(cfg)
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	queue, err := commands.NewEmbedQueue(commands.EmbedQueueConfig{Writer: writer, Reader: st.memories, Embedder: catalog, Logger: logger})
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	a.runInBackground(queue.Run)
	memories, err := commands.NewMemories(commands.MemoriesConfig{
		Writer: writer, Reader: st.memories, Embedder: catalog,
		DefaultModel: catalog.DefaultModel(), Queue: queue, Logger: logger, Quotas: cfg.Quotas,
	})
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	cognition, err := commands.NewCognition(commands.CognitionConfig{Memories: memories, Provenance: st.provenance, Audit: st.audit, Stats: st.memories, Suggestions: st.suggestions})
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	searcher, err := search.New(st.keyword, st.vectors, search.ProviderEmbedder{Provider: catalog}, st.memories, logger, search.Options{})
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	runner := commands.NewJobRunner(writer, st.jobs, st.memories, catalog, commands.RunnerConfig{Queue: queue, Logger: logger})
	a.runInBackground(runner.Run)
	embeddings := commands.NewEmbeddings(commands.EmbeddingsDeps{
		Catalog: catalog, Memories: st.memories, Jobs: st.jobs, Similar: searcher, Writer: writer, Runner: runner,
	})

	sender, err := mail.NewFromConfig(cfg.SMTPURL, cfg.MailOutbox, logger)
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	usage := commands.NewUsageRecorder(writer, cfg.UsageFlush, logger)
	a.runInBackground(usage.Run)
	accounts, err := commands.NewAccounts(commands.AccountsConfig{
		Writer:     writer,
		Reader:     st.accounts,
		Mailer:     commands.MailerFunc(func(ctx context.Context, m commands.Mail) error { return sender.Send(ctx, mail.Message(m)) }),
		Usage:      usage,
		Agents:     st.memories,
		Logger:     logger,
		PublicURL:  cfg.PublicURL,
		SessionTTL: cfg.SessionTTL,

		VerificationResendInterval: cfg.ResendInterval,
	})
	if err != nil {
		a.close(ctx)
		return nil, err
	}

	processor, err := newProcessor(cfg)
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	pipeline, err := commands.NewPipeline(commands.PipelineConfig{
		Writer: writer, Memories: st.memories, Suggestions: st.suggestions, Creator: memories, Settings: memories, Processor: processor, Logger: logger,
	})
	if err != nil {
		a.close(ctx)
		return nil, err
	}

	srv := api.New(api.Config{
		Logger:          logger,
		MaxBodyBytes:    cfg.MaxBodyBytes,
		BodyReadTimeout: cfg.BodyReadTimeout,
		WriteTimeout:    cfg.WriteTimeout,
		MaxInFlight:     cfg.MaxInFlight,
		UserRateLimit:   api.RateLimit{PerSecond: cfg.RateLimit, Burst: cfg.RateBurst},
		IPRateLimit:     api.RateLimit{PerSecond: cfg.IPRateLimit, Burst: cfg.IPRateBurst},
		Ready:           caughtUp.ready,
		Auth:            accounts,
		Accounts:        accounts,
		Memories:        memories,
		Embeddings:      embeddings,
		Search:          searcher,
		Pipeline:        pipeline,
		Cognition:       api.CognitionService{Memories: memories, Cognition: cognition},
	})
	a.handler = caughtUp.gate(srv.Handler())
	return a, nil
}

// runInBackground runs a component until the app closes; its final work
// (e.g. a last flush that waits for projections) finishes before the
// projection engine stops.
func (a *app) runInBackground(run func(context.Context) error) {
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
func (a *app) close(ctx context.Context) error {
	var errs []error
	a.closeOnce.Do(func() {
		for i := len(a.closers) - 1; i >= 0; i-- {
			errs = append(errs, a.closers[i](ctx))
		}
		a.stopEngine()
		<-a.engineDone
		errs = append(errs, a.storage.close())
	})
	return errors.Join(errs...)
}

// startupGate holds API requests until the projections have applied the log
// as it stood at start, so no read misses a write acknowledged before a
// restart.
type startupGate struct {
	done chan struct{}
	err  error
}

func newStartupGate() *startupGate { return &startupGate{done: make(chan struct{})} }

func (g *startupGate) open(err error) {
	g.err = err
	close(g.done)
}

func (g *startupGate) ready(context.Context) error {
	select {
	case <-g.done:
		return g.err
	default:
		return fmt.Errorf("projections are catching up with the event log")
	}
}

func (g *startupGate) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case <-g.done:
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
