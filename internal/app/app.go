package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	apimcp "github.com/engram-memory/engram/api/mcp"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/embed"
	"github.com/engram-memory/engram/infra/mail"
	"github.com/engram-memory/engram/internal/workers"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/query"
	"github.com/engram-memory/engram/projections/search"
)

// Parts are the parts of the application a caller asks New for. Each
// caller asks only for what it uses: a local keyword search loads the
// keyword index and nothing else, a local capture runs the projection
// engine but no background worker, `engram serve` asks for Server.
type Parts uint

const (
	// Queries is the read side (projections/query) over the read models,
	// brought up to the log's head at open.
	Queries Parts = 1 << iota
	// KeywordSearch is the search service over the keyword index alone:
	// the vector index is not loaded and no embedding model either, so
	// only keyword searches answer (others degrade as with a vector
	// index that is down).
	KeywordSearch
	// Search is the search service over both indexes, with the embedding
	// models that embed queries.
	Search
	// Writes is the write side: the memory commands, sync and the
	// processing pipeline, with the projection engine running so that each
	// write is applied before it returns. It loads the embedding models
	// (a capture embeds inline) but starts no background worker. Without
	// Search (or KeywordSearch) the engine applies the in-process indexes'
	// state alone and loads no index.
	Writes
	// Workers are the background workers of a server: the embedding queue
	// (memories that could not be embedded inline), the re-embedding job
	// runner and the embedding commands over it, and the usage recorder.
	Workers
	// Accounts are the account commands with the mailer (needs Workers:
	// key usage goes through the usage recorder).
	Accounts
)

// Server is every part: what `engram serve` runs.
const Server = Queries | Search | Writes | Workers | Accounts

// unsearched names the in-process indexes no part asked for searches: a
// local capture or read neither loads them nor, with Writes, writes them;
// their projections advance their state alone (docs/snapshots.md). The
// core alone (no part: the maintenance commands, which drive the engine
// themselves) keeps both.
func (p Parts) unsearched() Unsearched {
	if p == 0 {
		return Unsearched{}
	}
	return Unsearched{Keyword: p&(Search|KeywordSearch) == 0, Vector: p&Search == 0}
}

// Components named by App.Components: what was loaded, built or started.
const (
	ComponentKeywordIndex     = "keyword_index"
	ComponentVectorIndex      = "vector_index"
	ComponentEmbeddingModels  = "embedding_models"
	ComponentProjectionEngine = "projection_engine"
	ComponentEmbedQueue       = "embed_queue"
	ComponentJobRunner        = "job_runner"
	ComponentUsageRecorder    = "usage_recorder"
	ComponentMailer           = "mailer"
	ComponentScheduler        = "scheduler"
)

// Settings is the one configuration the application is built from: the
// core's (storage, log, read models, indexes) and the use cases'.
type Settings struct {
	Config
	Embedding Embedding
	Chat      Chat
	// SMTPURL sends mail over SMTP; empty: .eml files in MailOutbox.
	SMTPURL    string
	MailOutbox string
	// Accounts: links in mails, session lifetime, the least time between
	// two verification mails, how often key usage is recorded, and how
	// many active keys one user may have (0: the default).
	PublicURL      string
	SessionTTL     time.Duration
	ResendInterval time.Duration
	UsageFlush     time.Duration
	MaxActiveKeys  int
	// Quotas bound what one agent and one user may keep (zero: none).
	Quotas memory.Quotas
	// SyncMaxPushBytes bounds one sync push (0: the default).
	SyncMaxPushBytes int64
	// Jobs configures the re-embedding job runner (Workers).
	Jobs workers.RunnerConfig
	// Search tunes the search service (tests freeze its clock).
	Search search.Options
	// Providers, when set, are the embedding providers instead of those
	// Embedding configures (the test harnesses' counting, switchable
	// provider); Embedding.Model still names the default model.
	Providers []domain.EmbeddingProvider
	// Processor, when set, runs processing passes instead of the one Chat
	// chooses (a test's scripted chat model).
	Processor commands.Processor
	// Queue tunes the embedding queue's retries (Workers); its writer,
	// reader, embedder and logger are the application's.
	Queue workers.EmbedQueueConfig
	// EmbedTimeout bounds a write's inline embedding call (zero: the
	// memory commands' default).
	EmbedTimeout time.Duration
	// AgentAttempts bounds how often a write decides again when other
	// writes keep reaching its agent stream first (zero: the memory
	// commands' default, 100); a test lowers it to meet the bound cheaply.
	AgentAttempts int
	// Now is the clock of the use cases: expiries, sessions, tokens,
	// throttles, decay (nil: time.Now). Tests move it instead of sleeping.
	Now func() time.Time
	// Held are the background workers New builds but does not start: the
	// caller runs or steps them (App.EmbedQueue, App.JobRunner, App.Usage),
	// as a test does that watches a job one batch at a time or a memory
	// stay pending.
	Held Held
}

// Held names background workers of Workers that New builds without
// starting them.
type Held uint

const (
	// HoldEmbedQueue leaves the embedding queue to the caller.
	HoldEmbedQueue Held = 1 << iota
	// HoldJobRunner leaves the re-embedding job runner to the caller.
	HoldJobRunner
	// HoldUsageRecorder leaves the key-usage recorder to the caller, who
	// flushes it when it chooses (its periodic and final flushes would
	// otherwise race a test that stops the projection engine).
	HoldUsageRecorder
)

// Embedding chooses the embedding providers and the default model.
type Embedding struct {
	// Provider is "local" (default) or "openai".
	Provider string
	// Model is new agents' default model (empty: the provider's default).
	Model string
	// ModelDirs are directories of local models to load.
	ModelDirs []string
	// OpenAI-compatible endpoint, also the chat model's.
	OpenAIBaseURL, OpenAIAPIKey, OpenAIOrg string
	// OpenAIExtraModels are models of an OpenAI-compatible server.
	OpenAIExtraModels []domain.EmbeddingModel
	// Observe, when set, wraps each provider (metrics, traces).
	Observe func(domain.EmbeddingProvider) domain.EmbeddingProvider
}

// Chat chooses the processing pipeline's processor: the chat model of the
// OpenAI-compatible endpoint (Embedding's) when Model is set, else the
// built-in rule-based extractor.
type Chat struct {
	Model   string
	Timeout time.Duration
}

// App is the application built by New: the core and the parts asked for.
// A part not asked for is nil.
type App struct {
	Core *Core
	// Catalog holds the embedding models (Search, Writes, Workers).
	Catalog *embed.Catalog
	// Search answers searches (Search or KeywordSearch).
	Search *search.Service
	// Queries is the read side (Queries).
	Queries *query.Service
	// Memories, Sync and Pipeline are the write side (Writes).
	Memories *commands.Memories
	Sync     *commands.Sync
	Transfer *commands.Transfer
	Pipeline *commands.Pipeline
	// Embeddings are the embedding commands over the job runner (Workers).
	Embeddings *commands.Embeddings
	// EmbedQueue, JobRunner and Usage are the background workers
	// (Workers; Usage with Accounts), running unless Settings.Held holds
	// them.
	EmbedQueue *workers.EmbedQueue
	JobRunner  *workers.JobRunner
	Usage      *workers.UsageRecorder
	// Accounts are the account commands (Accounts).
	Accounts *commands.Accounts
	// MCP are the use cases the MCP tools call, the one place MCP is
	// wired to them (Queries, Search and Writes).
	MCP apimcp.Services
	// Processor is what runs processing passes (Writes, Queries).
	Processor commands.Processor

	logger   *slog.Logger
	parts    Parts
	caughtUp *StartupGate

	mu         sync.Mutex
	components []string
	stopEngine context.CancelFunc
	engineDone chan struct{}
	closeOnce  sync.Once
	closers    []func(context.Context) error
}

// New builds the application from settings with the parts asked for. The
// projection engine runs in the background only for Writes (and so for
// Server); a reader's read models and indexes are brought up to the log's
// head once at open instead, and nothing runs behind it. Close releases
// everything.
func New(ctx context.Context, settings Settings, parts Parts) (*App, error) {
	if parts&Accounts != 0 && parts&Workers == 0 {
		return nil, errors.New("app: Accounts needs Workers (key usage goes through the usage recorder)")
	}
	cfg := settings.Config
	cfg.Unsearched = parts.unsearched()
	cfg.ShortLived = parts != 0 && parts&(Writes|Workers) == 0
	core, err := openCore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a := &App{Core: core, logger: core.Logger, parts: parts, caughtUp: newStartupGate()}
	if err := a.build(ctx, settings); err != nil {
		_ = a.Close(ctx)
		return nil, err
	}
	a.logger.Debug("application opened", "components", a.Components())
	return a, nil
}

func (a *App) build(ctx context.Context, settings Settings) error {
	parts, st := a.parts, a.Core
	switch {
	case parts&(Writes|Workers) != 0:
		a.startEngine(ctx)
	case parts&(Queries|Search|KeywordSearch) != 0:
		if err := a.catchUp(ctx); err != nil {
			return err
		}
	default:
		// The core alone (the maintenance commands): the caller drives
		// the engine.
		a.caughtUp.open(nil)
	}
	if parts&(Search|Writes|Workers) != 0 {
		loading := startStep()
		catalog, err := NewEmbedCatalog(settings.Embedding)
		if len(settings.Providers) > 0 {
			catalog, err = embed.NewCatalog(embed.CatalogOptions{Providers: settings.Providers, DefaultModel: settings.Embedding.Model})
		}
		if err != nil {
			return err
		}
		a.Catalog = catalog
		took, cpu := loading.since()
		a.logger.Debug("embedding models loaded", "took", took, "cpu", cpu)
		a.started(ComponentEmbeddingModels)
	}
	if parts&(Search|KeywordSearch) != 0 {
		opts := settings.Search
		if opts.Now == nil {
			opts.Now = settings.Now
		}
		if err := a.buildSearch(ctx, opts); err != nil {
			return err
		}
	}
	var queue *workers.EmbedQueue
	if parts&Workers != 0 {
		qc := settings.Queue
		qc.Writer, qc.Reader, qc.Embedder, qc.Logger = st.Writer, st.Memories, a.Catalog, a.logger
		var err error
		if queue, err = workers.NewEmbedQueue(qc); err != nil {
			return err
		}
		a.EmbedQueue = queue
		if settings.Held&HoldEmbedQueue == 0 {
			a.runInBackground(ComponentEmbedQueue, queue.Run)
		}
	}
	if parts&(Writes|Queries) != 0 {
		a.Processor = settings.Processor
		if a.Processor == nil {
			processor, err := NewProcessor(settings.Embedding, settings.Chat)
			if err != nil {
				return err
			}
			a.Processor = processor
		}
	}
	if parts&Writes != 0 {
		var kicker commands.Kicker
		if queue != nil {
			kicker = queue
		}
		memories, err := commands.NewMemories(commands.MemoriesConfig{
			Writer: st.Writer, Reader: st.Memories, Embedder: a.Catalog,
			DefaultModel: a.Catalog.DefaultModel(), Queue: kicker, Logger: a.logger, Quotas: settings.Quotas,
			DecidesOn: []string{projections.MemoriesProjectionName}, EmbedTimeout: settings.EmbedTimeout, Now: settings.Now,
			AgentAttempts: settings.AgentAttempts,
		})
		if err != nil {
			return err
		}
		a.Memories = memories
		if a.Sync, err = commands.NewSync(commands.SyncDeps{Writer: st.Writer, Log: st.SyncLog, Owners: st.Memories, Memories: memories, MaxPushBytes: settings.SyncMaxPushBytes}); err != nil {
			return err
		}
		if a.Transfer, err = commands.NewTransfer(commands.TransferDeps{Sync: a.Sync, Suggestions: st.Suggestions}); err != nil {
			return err
		}
		if a.Pipeline, err = commands.NewPipeline(commands.PipelineConfig{
			Writer: st.Writer, Memories: st.Memories, Suggestions: st.Suggestions, Creator: memories, Processor: a.Processor, States: st.ProcessingStates, Logger: a.logger, Now: settings.Now,
		}); err != nil {
			return err
		}
	}
	if parts&Workers != 0 {
		rc := settings.Jobs
		if rc.Queue == nil {
			// A caller's own kicker sees what the runner kicks (a test
			// counting them).
			rc.Queue = queue
		}
		if rc.Logger == nil {
			rc.Logger = a.logger
		}
		runner := workers.NewJobRunner(st.Writer, st.Jobs, st.Memories, a.Catalog, rc)
		a.JobRunner = runner
		if settings.Held&HoldJobRunner == 0 {
			a.runInBackground(ComponentJobRunner, runner.Run)
		}
		a.Embeddings = commands.NewEmbeddings(commands.EmbeddingsDeps{Catalog: a.Catalog, Memories: st.Memories, Jobs: st.Jobs, Writer: st.Writer, Runner: runner})
	}
	if parts&Accounts != 0 {
		if err := a.buildAccounts(settings); err != nil {
			return err
		}
	}
	if parts&Queries != 0 {
		cfg := query.Config{Processor: a.Processor.Info(), Now: settings.Now}
		if a.Catalog != nil {
			cfg.Catalog = a.Catalog
		}
		if a.Search != nil {
			cfg.Similar = a.Search
		}
		queries, err := st.Queries(cfg)
		if err != nil {
			return err
		}
		a.Queries = queries
	}
	a.MCP = apimcp.Services{Queries: a.Queries}
	if a.Search != nil {
		a.MCP.Search = a.Search
	}
	if a.Memories != nil {
		a.MCP.Memories, a.MCP.Cognition, a.MCP.Pipeline = a.Memories, a.Memories, a.Pipeline
	}
	return nil
}

// buildSearch loads the indexes the parts search (the keyword index
// alone for KeywordSearch) and builds the search service over them.
func (a *App) buildSearch(ctx context.Context, opts search.Options) error {
	vectors := a.parts&Search != 0
	if a.parts&(Writes|Workers) == 0 {
		// A reader fills the in-process indexes here; a running engine
		// fills them when it starts.
		if err := a.Core.LoadIndexes(ctx, true, vectors); err != nil {
			return err
		}
	}
	a.started(ComponentKeywordIndex)
	var embedder search.Embedder
	if vectors {
		a.started(ComponentVectorIndex)
		embedder = search.ProviderEmbedder{Provider: a.Catalog}
	} else {
		embedder = keywordOnly{}
	}
	svc, err := a.Core.Search(embedder, opts)
	if err != nil {
		return err
	}
	a.Search = svc
	return nil
}

func (a *App) buildAccounts(settings Settings) error {
	st := a.Core
	sender, err := mail.NewFromConfig(settings.SMTPURL, settings.MailOutbox, a.logger)
	if err != nil {
		return err
	}
	a.started(ComponentMailer)
	usage := workers.NewUsageRecorder(st.Writer, settings.UsageFlush, a.logger)
	a.Usage = usage
	if settings.Held&HoldUsageRecorder == 0 {
		a.runInBackground(ComponentUsageRecorder, usage.Run)
	}
	a.Accounts, err = commands.NewAccounts(commands.AccountsConfig{
		Writer:     st.Writer,
		Reader:     st.Accounts,
		Mailer:     commands.MailerFunc(func(ctx context.Context, m commands.Mail) error { return sender.Send(ctx, mail.Message(m)) }),
		Usage:      usage,
		Agents:     st.Memories,
		Logger:     a.logger,
		PublicURL:  settings.PublicURL,
		SessionTTL: settings.SessionTTL,
		Now:        settings.Now,

		VerificationResendInterval: settings.ResendInterval,
		MaxActiveKeys:              settings.MaxActiveKeys,
	})
	return err
}

// readProjections are the projections a reader's parts read, which it
// brings up to the log's head at open.
func (a *App) readProjections() []string {
	names := []string{
		projections.AccountsProjectionName, projections.MemoriesProjectionName, projections.JobsProjectionName,
		projections.ProvenanceProjectionName, projections.AuditProjectionName, projections.SuggestionsProjectionName,
	}
	if a.parts&(Search|KeywordSearch) != 0 {
		// A keyword search reads the agents' spaces in the vectors'
		// state too (LoadIndexes); catching up a current projection
		// reads its checkpoint, and loads no index.
		names = append(names, projections.KeywordProjectionName, projections.VectorsProjectionName)
	}
	return names
}

// catchUp applies what the log holds beyond the read projections'
// checkpoints (writes of a process that stopped before applying them), so
// a reader without a running engine still reads its writes. It costs one
// read of each checkpoint when they are current. A read-only opener
// writes nothing and reads what the writers applied.
func (a *App) catchUp(ctx context.Context) error {
	if a.Core.Storage == nil {
		a.caughtUp.open(nil)
		return nil
	}
	// A shared log is applied by the nodes that serve it, under leases.
	if a.Core.SharedLog() {
		a.caughtUp.open(nil)
		return nil
	}
	err := a.Core.Engine.CatchUp(ctx, a.readProjections()...)
	a.caughtUp.open(err)
	return err
}

// LoadIndexes fills the in-process search indexes from their projections'
// state (the keyword index, and the vector index when vectors). It is the
// one place a process that does not run the engine loads them.
func (s *Core) LoadIndexes(ctx context.Context, keyword, vectors bool) error {
	if keyword {
		if err := s.Keyword.Load(ctx); err != nil {
			return fmt.Errorf("app: load the keyword index: %w", err)
		}
	}
	if vectors {
		if err := s.Vectors.Load(ctx); err != nil {
			return fmt.Errorf("app: load the vector index: %w", err)
		}
		return nil
	}
	// A keyword search still resolves the agent by its vector space.
	return s.Vectors.LoadAgents(ctx)
}

// keywordOnly is the query embedder of KeywordSearch: no model is loaded,
// so a search that needs a query vector degrades to keyword results.
type keywordOnly struct{}

func (keywordOnly) EmbedQuery(context.Context, string, int, string) ([]float32, error) {
	return nil, domain.Errorf(domain.KindProviderUnavailable, "no embedding model is loaded for a keyword-only search")
}

// startEngine runs the projection engine in the background and opens the
// startup gate once it has applied the log as it stood at start.
func (a *App) startEngine(ctx context.Context) {
	st, logger := a.Core, a.logger
	engineCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stopEngine, a.engineDone = stop, make(chan struct{})
	catchingUp := startStep()
	a.started(ComponentProjectionEngine)
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
				a.caughtUp.serve()
				if err = st.Storage.WaitForSpace(engineCtx); err == nil {
					continue
				}
			}
			// Said before the gate opens: whoever waited on it reads the
			// start log complete (TestStartLogTimesEachPart).
			if err == nil {
				took, cpu := catchingUp.since()
				logger.Info("projections caught up", "position", head, "took", took, "cpu", cpu)
			}
			a.caughtUp.open(err)
			return
		}
	}()
}

// StopEngine stops the background projection engine, for a caller that
// then writes the projections outside it (a rebuild in a test); Close
// skips it afterwards.
func (a *App) StopEngine() {
	if a.stopEngine != nil {
		a.stopEngine()
		<-a.engineDone
		a.stopEngine = nil
	}
}

// CaughtUp is the startup gate: it opens once the projections have
// applied the log as it stood at open.
func (a *App) CaughtUp() *StartupGate { return a.caughtUp }

// StartScheduler runs the processing scheduler in the background, once
// the projections have caught up (a sweep must not decide on read models
// that lag the log). Close stops it before anything it uses. It needs
// Writes.
func (a *App) StartScheduler(interval time.Duration, concurrency int) error {
	if a.Pipeline == nil {
		return errors.New("app: the scheduler needs Writes")
	}
	sched, err := workers.NewScheduler(workers.SchedulerConfig{
		Pipeline: a.Pipeline, Agents: a.Core.Memories, Interval: interval, Concurrency: concurrency, Logger: a.logger,
	})
	if err != nil {
		return err
	}
	a.runInBackground(ComponentScheduler, func(ctx context.Context) error {
		if err := a.caughtUp.wait(ctx); err != nil {
			return err
		}
		return sched.Run(ctx)
	})
	return nil
}

// RunInBackground runs a caller's component until the app closes, stopped
// before the app's own parts (e.g. a server's rate-limit pruning).
func (a *App) RunInBackground(name string, run func(context.Context) error) {
	a.runInBackground(name, run)
}

// runInBackground runs a component until the app closes; its final work
// (e.g. a last flush that waits for projections) finishes before the
// projection engine stops.
func (a *App) runInBackground(name string, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.started(name)
	go func() {
		defer close(done)
		if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			a.logger.Error("background component stopped", "component", name, "error", err)
		}
	}()
	a.closers = append(a.closers, func(context.Context) error {
		cancel()
		<-done
		return nil
	})
}

func (a *App) started(component string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(a.components, component) {
		a.components = append(a.components, component)
	}
}

// Components names what the app loaded, built or started (the
// Component constants), in that order: how a caller sees that a local
// read started no job runner.
func (a *App) Components() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.components)
}

// Close stops everything in dependency order; it is safe to call twice.
func (a *App) Close(ctx context.Context) error {
	var errs []error
	a.closeOnce.Do(func() {
		for i := len(a.closers) - 1; i >= 0; i-- {
			errs = append(errs, a.closers[i](ctx))
		}
		a.StopEngine()
		errs = append(errs, a.Core.Close())
	})
	return errors.Join(errs...)
}

// StartupGate holds work until the projections have applied the log as it
// stood at start, so no read misses a write acknowledged before a restart;
// or until storage turns out to be full, since then they cannot.
type StartupGate struct {
	done chan struct{}
	err  error
	// serving is closed once requests may pass: with done, or earlier
	// when storage is full (serve).
	serving   chan struct{}
	serveOnce sync.Once
}

func newStartupGate() *StartupGate {
	return &StartupGate{done: make(chan struct{}), serving: make(chan struct{})}
}

func (g *StartupGate) open(err error) {
	g.err = err
	close(g.done)
	g.serve()
}

// serve lets requests pass before the projections have caught up.
func (g *StartupGate) serve() { g.serveOnce.Do(func() { close(g.serving) }) }

// Serving is closed once requests may pass.
func (g *StartupGate) Serving() <-chan struct{} { return g.serving }

// WaitServing blocks until requests may pass (see Serving), or ctx ends.
func (g *StartupGate) WaitServing(ctx context.Context) error {
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

// Ready reports whether the projections have caught up.
func (g *StartupGate) Ready(context.Context) error {
	select {
	case <-g.done:
		return g.err
	default:
		return fmt.Errorf("projections are catching up with the event log")
	}
}

// wait blocks until the projections have caught up, or ctx ends.
func (g *StartupGate) wait(ctx context.Context) error {
	select {
	case <-g.done:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
