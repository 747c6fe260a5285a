package api_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
	apimcp "github.com/engram-memory/engram/api/mcp"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/embed"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
	"github.com/engram-memory/engram/infra/mail/mailtest"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/infra/webhookhttp"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/testlog"
	"github.com/engram-memory/engram/internal/workers"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/query"
)

// stack is the whole server in process, built by the composition root
// (app.New with app.Server) and served as `engram serve` serves it
// (internal/cli/server.go): the SQLite event log and every read model in a
// data directory, the projection engine, the embedding catalog over the
// real local provider (the built-in model plus a generated static model,
// behind a switch that simulates an outage), the embedding queue, the
// memory, search, embedding and account commands, the job runner, mail to
// an outbox (or SMTP) and the HTTP API on a loopback port. What tests
// control goes in through app.Settings: the clock, the providers, the
// processor, and the queue and runner held for the stack to run or step.
type stack struct {
	t       testing.TB
	dataDir string
	outbox  string
	logs    *testlog.Buffer
	logger  *slog.Logger
	clock   *testClock

	app      *app.App
	wired    *app.Core // storage, indexes, projections, engine
	db       *sqlite.DB
	store    domain.EventStore
	model    app.AccountsReadModel
	memories app.MemoriesReadModel
	vectors  *projections.Vectors
	jobs     app.JobsReadModel
	suggest  app.SuggestionsReadModel
	prov     app.ProvenanceReadModel
	audit    app.AuditReadModel
	engine   *projections.Engine
	writer   *commands.EventWriter

	// mcp are the use cases the MCP server calls.
	mcp apimcp.Services

	provider *testProvider
	catalog  *embed.Catalog
	queue    *workers.EmbedQueue
	memCmds  *commands.Memories
	runner   *workers.JobRunner
	emb      *commands.Embeddings
	pipeline *commands.Pipeline
	queries  *query.Service
	usage    *workers.UsageRecorder
	accounts *commands.Accounts
	hooks    *commands.Webhooks
	smtp     *mailtest.Server // nil unless stackOptions.smtp

	srv     *httptest.Server
	handler http.Handler // the API srv serves, without the OpenAPI check
	opts    stackOptions

	stopEngine func() // stops the engine's Run and waits for it
	stopQueue  func() // stops the embedding queue (a no-op unless it runs)
	stopRunner func() // stops the job runner (a no-op unless it runs)
	// stopWebhooks stops the webhook dispatcher (a no-op unless it runs).
	stopWebhooks func()
	closeAll     func() // closes the whole stack; also run at cleanup
}

// stackOptions choose what differs between tests; the zero value is the
// server with real accounts, mail to the outbox, generous rate limits, the
// job runner running and the embedding queue built but not running (tests
// that need pending embeddings filled in set runQueue).
type stackOptions struct {
	discardLogs bool // drop the logs (benchmarks) instead of collecting them in logs

	// HTTP server.
	maxBody   int64
	ipLimit   api.RateLimit // zero: generous
	userLimit api.RateLimit // zero: generous
	// Slow-client bounds (api.Config); zero: unbounded.
	bodyReadTimeout time.Duration
	writeTimeout    time.Duration
	maxInFlight     int
	// consistencyWait bounds the wait for a consistency token (zero:
	// api.DefaultConsistencyWait).
	consistencyWait time.Duration
	// maxConsistencyWaits bounds one client's token waits (zero:
	// api.DefaultMaxConsistencyWaits).
	maxConsistencyWaits int
	// visibilityTimeout bounds a write's wait for the projections (zero:
	// harnessVisibilityTimeout).
	visibilityTimeout time.Duration
	// fixedAuth authenticates the fixed bearer strings aliceKey and bobKey
	// instead of account credentials.
	fixedAuth bool
	// mcpSDKOnly serves /mcp with apimcp.SDKHTTPHandler: every request
	// through the SDK, stateless tool calls included.
	mcpSDKOnly bool

	// Accounts.
	smtp       bool // send mail over a test SMTP server instead of the outbox
	sessionTTL time.Duration
	maxKeys    int // active keys per user (zero: account.DefaultMaxActiveKeys)

	// Storage.
	dataDir string // reuse a data directory (a restart); empty: a new one
	// postgres puts the log and the read models in a fresh PostgreSQL
	// database (--event-store postgres --read-models postgres) instead of
	// the data directory; the search indexes' state stays there.
	postgres bool
	// kurrentMaxAppend puts the log in a KurrentDB test server that, like
	// the adapter (--kurrentdb-max-append-size), refuses appends over this
	// many bytes (zero: the SQLite log).
	kurrentMaxAppend int
	quotas           memory.Quotas // zero: no limits
	// syncMaxPushBytes bounds one sync push (zero: the default).
	syncMaxPushBytes int64
	// agentAttempts bounds a write's attempts at its agent stream (zero:
	// the server's 100).
	agentAttempts int
	// appends wraps the event log the writes append to (app.Observers'
	// Appends), e.g. to put another node's writes before them.
	appends func(domain.EventStore) domain.EventStore

	// Background components.
	runQueue bool                 // run the embedding queue
	runner   workers.RunnerConfig // defaults: ID test-runner, fast polls and retries
	noRun    bool                 // do not start the runner: the test steps it

	// processor runs processing passes; nil: the rule-based extractor.
	processor commands.Processor
	// providers are the embedding providers (the built-in model stays the
	// default); nil: the stack's testProvider.
	providers []domain.EmbeddingProvider
	// embeddingModel is new agents' default model (--embedding-model);
	// empty: the built-in model.
	embeddingModel string
	// indexes are the search index backends (zero: the embedded ones).
	indexes app.Indexes
	// catchingUp serves before the projections have caught up with the
	// log (/readyz answers 503 not_ready meanwhile); the test waits for
	// them itself (app.CaughtUp).
	catchingUp bool

	// webhooks, when its PollInterval is set, runs the webhook dispatcher
	// with these settings (its outbox and poster are the stack's); the
	// webhooks may target loopback (--webhook-allow-private) either way.
	webhooks workers.WebhookDispatcherConfig
	// webhookStrict refuses http and private webhook targets, as a server
	// without --webhook-allow-private does.
	webhookStrict bool
}

// generous limits keep tests that fire many requests clear of 429.
var generous = api.RateLimit{PerSecond: 1e6, Burst: 1e6}

// The two fixed test users and their bearer credentials (stackOptions.fixedAuth).
const (
	alice    = "user-alice"
	bob      = "user-bob"
	aliceKey = "test-key-alice"
	bobKey   = "test-key-bob"
)

// staticModel is the name of the generated Model2Vec-style model.
const staticModel = "test-static-64"

// publicURL is the public URL of the test server, as mails link to it.
const publicURL = "http://engram.test:8080"

func newStack(t testing.TB, opts stackOptions) *stack {
	t.Helper()
	if opts.ipLimit == (api.RateLimit{}) {
		opts.ipLimit = generous
	}
	if opts.userLimit == (api.RateLimit{}) {
		opts.userLimit = generous
	}
	if opts.runner.ID == "" {
		opts.runner.ID = "test-runner"
	}
	if opts.runner.PollInterval == 0 {
		opts.runner.PollInterval = harnessRunnerPoll
	}
	if opts.runner.RetryBackoff == 0 {
		opts.runner.RetryBackoff = time.Millisecond
	}
	if opts.visibilityTimeout == 0 {
		opts.visibilityTimeout = harnessVisibilityTimeout
	}
	s := &stack{t: t, dataDir: opts.dataDir, clock: &testClock{}, logs: &testlog.Buffer{}, opts: opts}
	if s.dataDir == "" {
		s.dataDir = t.TempDir()
		if !opts.postgres {
			// A new stack starts from the migrated empty database rather
			// than migrating its own: the same file, a fifth of a CPU
			// second less per stack under the race detector.
			sqlitetest.Fill(t, s.dataDir)
		}
	}
	s.outbox = filepath.Join(s.dataDir, "outbox")
	s.logger = slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.discardLogs {
		s.logger = slog.New(slog.DiscardHandler)
	}
	ctx := context.Background()

	// Storage, indexes and projections, as the server wires them.
	// GroupCommit is the SQLite log's poll for appends by another process;
	// this stack's own appends wake its subscribers at once.
	cfg := app.Config{DataDir: s.dataDir, GroupCommit: harnessIdlePoll, VisibilityTimeout: opts.visibilityTimeout, Logger: s.logger, Indexes: opts.indexes,
		Observe: app.Observers{Appends: opts.appends}}
	if opts.postgres {
		cfg.EventStore = app.EventStore{Backend: app.PostgresLog, URL: postgresServer(t).Database(t)}
		cfg.ReadModels = app.ReadModels{Backend: app.PostgresReadModels}
	}
	if opts.kurrentMaxAppend > 0 {
		srv, err := kurrentdbtest.Start(kurrentdbtest.Options{MaxAppendSize: opts.kurrentMaxAppend})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		cfg.EventStore = app.EventStore{Backend: app.KurrentLog, URL: srv.URL(), KurrentMaxAppendSize: opts.kurrentMaxAppend}
	}
	lp, err := local.New(local.Options{ModelDirs: []string{staticModelDir(t)}})
	if err != nil {
		t.Fatal(err)
	}
	s.provider = &testProvider{Provider: lp}
	providers := opts.providers
	if providers == nil {
		providers = []domain.EmbeddingProvider{s.provider}
	}
	if opts.smtp {
		s.smtp = mailtest.Start(t)
	}
	var processor commands.Processor = processing.NewRuleExtractor()
	if opts.processor != nil {
		processor = opts.processor
	}
	// The stack holds the queue and the runner and runs them itself, so
	// that a test may stop, step or run them; key usage is flushed by the
	// tests that read it.
	a, err := app.New(ctx, app.Settings{
		Config:           cfg,
		Embedding:        app.Embedding{Model: cmp.Or(opts.embeddingModel, local.BuiltinModelName)},
		Providers:        providers,
		Processor:        processor,
		SMTPURL:          s.smtpURL(),
		MailOutbox:       s.outbox,
		PublicURL:        publicURL,
		SessionTTL:       opts.sessionTTL,
		MaxActiveKeys:    opts.maxKeys,
		Quotas:           opts.quotas,
		SyncMaxPushBytes: opts.syncMaxPushBytes,
		Jobs:             opts.runner,
		Queue:            workers.EmbedQueueConfig{MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
		EmbedTimeout:     harnessVisibilityTimeout,
		AgentAttempts:    opts.agentAttempts,
		Now:              s.clock.Now,
		Held:             app.HoldEmbedQueue | app.HoldJobRunner | app.HoldUsageRecorder,
	}, app.Server)
	if err != nil {
		t.Fatal(err)
	}
	s.app, s.wired = a, a.Core
	s.db, s.store, s.model, s.memories = a.Core.DB, a.Core.Store, a.Core.Accounts, a.Core.Memories
	s.vectors, s.jobs, s.engine, s.writer = a.Core.Vectors, a.Core.Jobs, a.Core.Engine, a.Core.Writer
	s.suggest, s.prov, s.audit = a.Core.Suggestions, a.Core.Provenance, a.Core.Audit
	s.catalog, s.queue, s.runner, s.usage = a.Catalog, a.EmbedQueue, a.JobRunner, a.Usage
	s.memCmds, s.emb, s.pipeline, s.queries, s.accounts = a.Memories, a.Embeddings, a.Pipeline, a.Queries, a.Accounts
	s.mcp = a.MCP
	s.stopEngine = a.StopEngine
	s.stopQueue, s.stopRunner, s.stopWebhooks = func() {}, func() {}, func() {}
	var once sync.Once
	s.closeAll = func() {
		once.Do(func() {
			if s.srv != nil {
				s.srv.Close()
			}
			s.stopWebhooks()
			s.stopRunner()
			s.stopQueue()
			s.stopEngine()
			if err := a.Close(context.Background()); err != nil {
				t.Errorf("close the stack: %v", err)
			}
		})
	}
	t.Cleanup(func() { s.closeAll() })
	// The server answers once the projections have caught up with the log
	// (the startup gate).
	if !opts.catchingUp {
		if err := a.CaughtUp().WaitServing(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s.hooks, err = commands.NewWebhooks(commands.WebhooksConfig{Writer: s.writer, Reader: s.wired.Webhooks, Targets: webhookhttp.New(webhookhttp.Options{AllowPrivate: !opts.webhookStrict}), AllowPrivate: !opts.webhookStrict, Now: s.clock.Now})
	if err != nil {
		t.Fatal(err)
	}

	s.handler = s.newHandler()
	serve := s.handler
	if _, benchmark := t.(*testing.B); !benchmark {
		// Every exchange of the tests is checked against the OpenAPI
		// document (benchmarks measure the server alone).
		serve = validatingHandler(t, loadOpenAPI(t), serve)
	}
	s.srv = httptest.NewServer(serve)
	if opts.runQueue {
		s.stopQueue = runInBackground(s.queue.Run)
	}
	if !opts.noRun {
		s.startRunner()
	}
	if opts.webhooks.PollInterval > 0 {
		s.startWebhooks(opts.webhooks)
	}
	return s
}

// smtpURL is the test SMTP server's URL, or empty for the outbox.
func (s *stack) smtpURL() string {
	if s.smtp == nil {
		return ""
	}
	return s.smtp.URL()
}

// startWebhooks runs a webhook dispatcher with cfg over the stack's outbox
// until stopWebhooks; it posts with the loopback client unless cfg names a
// poster.
func (s *stack) startWebhooks(cfg workers.WebhookDispatcherConfig) {
	s.t.Helper()
	cfg.Outbox, cfg.Logger = s.wired.Webhooks, s.logger
	if cfg.Poster == nil {
		cfg.Poster = webhookClient()
	}
	dispatcher, err := workers.NewWebhookDispatcher(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.stopWebhooks = runInBackground(dispatcher.Run)
}

// webhookClient delivers to loopback, as --webhook-allow-private lets it.
func webhookClient() *webhookhttp.Client {
	return webhookhttp.New(webhookhttp.Options{Timeout: 5 * time.Second, AllowPrivate: true})
}

// newHandler is the API over the application's parts, as `engram serve`
// wires it (internal/cli/server.go), with MCP over the same use cases.
func (s *stack) newHandler() http.Handler {
	var auth api.Authenticator = s.accounts
	if s.opts.fixedAuth {
		auth = fixedAuth{aliceKey: alice, bobKey: bob}
	}
	mcpServer := apimcp.NewServer(apimcp.NewServiceBackend(s.mcp, apimcp.Caller{}), apimcp.Options{Version: "test", Logger: s.logger})
	mcpHandler := apimcp.HTTPHandler(mcpServer, s.logger)
	if s.opts.mcpSDKOnly {
		mcpHandler = apimcp.SDKHTTPHandler(mcpServer, s.logger)
	}
	return api.New(api.Config{
		Logger:        s.logger,
		MaxBodyBytes:  s.opts.maxBody,
		UserRateLimit: s.opts.userLimit,
		IPRateLimit:   s.opts.ipLimit,
		Ready:         s.app.CaughtUp().Ready,
		StorageFull:   s.wired.StorageFull,
		Auth:          auth,
		Accounts:      s.accounts,
		Memories:      s.memCmds,
		Embeddings:    s.emb,
		Search:        s.mcp.Search,

		BodyReadTimeout:     s.opts.bodyReadTimeout,
		WriteTimeout:        s.opts.writeTimeout,
		MaxInFlight:         s.opts.maxInFlight,
		Backends:            s.wired.Backends,
		Projections:         func() any { return s.engine.Status() },
		Pipeline:            s.pipeline,
		Cognition:           s.memCmds,
		Queries:             s.queries,
		Sync:                s.app.Sync,
		Transfer:            s.app.Transfer,
		Webhooks:            s.hooks,
		LogHead:             s.store.Head,
		MaxConsistencyWaits: s.opts.maxConsistencyWaits,
		Visibility:          s.engine,
		ConsistencyWait:     s.opts.consistencyWait,
		MCP:                 mcpHandler,
	}).Handler()
}

// startRunner runs the stack's runner until stopRunner.
func (s *stack) startRunner() {
	s.stopRunner = runInBackground(s.runner.Run)
}

// runInBackground runs run until the returned stop is called.
func runInBackground(run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = run(ctx)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// fixedAuth maps fixed bearer strings to users.
type fixedAuth map[string]string

func (a fixedAuth) Authenticate(_ context.Context, credential string) (domain.Actor, error) {
	user, ok := a[credential]
	if !ok {
		return domain.Actor{}, domain.Errorf(domain.KindUnauthorized, "unknown credential")
	}
	return domain.Actor{Kind: domain.ActorKey, ID: "key-" + user, UserID: user}, nil
}

// testProvider is the real local provider behind a switch that simulates
// an outage; calls counts the calls answered with vectors.
type testProvider struct {
	*local.Provider
	down  atomic.Bool
	calls atomic.Int64
}

func (p *testProvider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	if p.down.Load() {
		return domain.EmbedResult{}, domain.Errorf(domain.KindProviderUnavailable, "the embedding provider is unavailable")
	}
	res, err := p.Provider.Embed(ctx, req)
	if err == nil {
		p.calls.Add(1)
	}
	return res, err
}

// harnessVisibilityTimeout replaces the 30 s bound on a write's wait for
// the projections (and the 20 s bound on its embedding call) in these
// stacks: under -race on a loaded 2-core machine a batch of 1000 memories
// can take longer than that to apply, which is slowness, not a fault these
// tests look for.
const harnessVisibilityTimeout = 2 * time.Minute

// harnessIdlePoll is how often the stacks' event log looks for appends
// nobody signalled (another process's; the server's default is 500 ms).
const harnessIdlePoll = 250 * time.Millisecond

// harnessRunnerPoll is how often a stack's job runner looks for work
// nobody signalled: in effect never. Within one stack nothing needs the
// poll: creating a job kicks the runner, a retry wakes it when due, and a
// runner started over an existing log (a restart, a takeover) looks at
// once. Every poll is a query the race detector makes dear, and every
// stack runs a runner, jobs or not: at 250 ms the polls were 6 % of the
// package's CPU. A test of a job that only a poll finds (another node's)
// sets its own interval.
const harnessRunnerPoll = time.Hour

// testClock is the service clock; tests move it forward to expire tokens
// and sessions without sleeping.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// staticModelDir writes a small Model2Vec-style model in the real file
// formats (safetensors with an F32 "embeddings" tensor, a WordPiece
// tokenizer.json) and returns its directory, named staticModel.
func staticModelDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), staticModel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	vocab := map[string]int{"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
	words := strings.Fields(`the a an and or of to in on for with is was be it this that deploy deployed
		server database backup restore user users coffee tea morning evening team meeting release bug fix
		fixed test tests cache latency memory memories agent note notes goal plan learn learned prefer likes
		python go rust code review friday monday night alert page oncall rollback config migration`)
	for _, w := range words {
		if _, ok := vocab[w]; !ok {
			vocab[w] = len(vocab)
		}
	}
	for _, suffix := range []string{"s", "ed", "ing", "er"} {
		vocab["##"+suffix] = len(vocab)
	}
	const dims = 64
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 4*dims*len(vocab))
	for i := 0; i < dims*len(vocab); i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(rng.NormFloat64())))
	}
	header, err := json.Marshal(map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"embeddings":   map[string]any{"dtype": "F32", "shape": []int{len(vocab), dims}, "data_offsets": []int{0, len(data)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var st bytes.Buffer
	binary.Write(&st, binary.LittleEndian, uint64(len(header)))
	st.Write(header)
	st.Write(data)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), st.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := json.Marshal(map[string]any{
		"added_tokens":  []map[string]any{{"id": 0, "content": "[PAD]", "special": true}},
		"normalizer":    map[string]any{"type": "BertNormalizer", "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"model":         map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "vocab": vocab},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// --- accounts --------------------------------------------------------------

var (
	tokenLine = regexp.MustCompile(`(?m)^(engv_[0-9A-Za-z]{43})$`)
	linkLine  = regexp.MustCompile(`(?m)^http://engram\.test:8080/v1/auth/verify\?token=(engv_[0-9A-Za-z]{43})$`)
)

// tokenFromMailBody returns the verification token of a mail body and
// checks it appears both in the link and alone on a line.
func tokenFromMailBody(t testing.TB, body string) string {
	t.Helper()
	body = strings.ReplaceAll(body, "\r\n", "\n")
	alone := tokenLine.FindStringSubmatch(body)
	link := linkLine.FindStringSubmatch(body)
	if alone == nil || link == nil || alone[1] != link[1] {
		t.Fatalf("mail body lacks the token alone on a line and in the link:\n%s", body)
	}
	return alone[1]
}

// outboxMails returns the bodies of the outbox mails to addr, oldest first.
func (s *stack) outboxMails(addr string) []string {
	s.t.Helper()
	files, err := filepath.Glob(filepath.Join(s.outbox, "*.eml"))
	if err != nil {
		s.t.Fatal(err)
	}
	sort.Strings(files) // names start with the time
	var bodies []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			s.t.Fatal(err)
		}
		msg, err := netmail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			s.t.Fatal(err)
		}
		to, err := msg.Header.AddressList("To")
		if err != nil || len(to) != 1 {
			s.t.Fatalf("bad To in %s: %v", f, err)
		}
		if to[0].Address != addr {
			continue
		}
		body, _ := io.ReadAll(msg.Body)
		bodies = append(bodies, string(body))
	}
	return bodies
}

// latestToken is the token of the newest outbox mail to addr.
func (s *stack) latestToken(addr string) string {
	s.t.Helper()
	mails := s.outboxMails(addr)
	if len(mails) == 0 {
		s.t.Fatalf("no mail to %s in the outbox", addr)
	}
	return tokenFromMailBody(s.t, mails[len(mails)-1])
}

// signUp registers and verifies addr through the API and returns the user
// id and the initial key.
func (s *stack) signUp(addr string) (userID, apiKey string) {
	s.t.Helper()
	reg := expect(s.t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": addr}), http.StatusOK)
	ver := expect(s.t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": s.latestToken(addr)}), http.StatusOK)
	if ver.str("user_id") != reg.str("user_id") {
		s.t.Fatalf("verify gave user %s, register %s", ver.str("user_id"), reg.str("user_id"))
	}
	return reg.str("user_id"), ver.str("api_key")
}

// user registers and verifies an account through the account commands and
// returns its id and API key.
func (s *stack) user(t testing.TB, email string) (userID, apiKey string) {
	t.Helper()
	ctx := context.Background()
	reg, err := s.accounts.Register(ctx, metaNone(), email)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.accounts.Verify(ctx, metaNone(), s.latestToken(reg.Email))
	if err != nil {
		t.Fatal(err)
	}
	return v.UserID, v.APIKey
}

// createKey creates a key through the API and returns its id and secret.
func (s *stack) createKey(bearer, name string) (id, key string) {
	s.t.Helper()
	r := expect(s.t, s.call("POST", "/v1/auth/keys", bearer, map[string]string{"name": name}), http.StatusCreated)
	return r.str("id"), r.str("key")
}

// listKeys returns the caller's key listing.
func (s *stack) listKeys(bearer string) []map[string]any {
	s.t.Helper()
	r := expect(s.t, s.call("GET", "/v1/auth/keys", bearer, nil), http.StatusOK)
	raw, _ := r.data()["keys"].([]any)
	out := make([]map[string]any, len(raw))
	for i, k := range raw {
		out[i], _ = k.(map[string]any)
	}
	return out
}

// metaNone is the metadata of a request without credential.
func metaNone() domain.Metadata { return domain.Metadata{RequestID: "test"} }

// metaFor is the metadata of a request with userID's key.
func metaFor(userID string) domain.Metadata {
	return domain.Metadata{Actor: domain.Actor{Kind: domain.ActorKey, ID: "key-" + userID, UserID: userID}, RequestID: "test"}
}

// --- memories --------------------------------------------------------------

// memCreated is one entry of a create response.
type memCreated struct {
	Type      string                `json:"type"`
	ID        string                `json:"id"`
	CreatedAt time.Time             `json:"created_at"`
	Embedding memory.EmbeddingState `json:"embedding"`
}

type memList struct {
	Memories   []memory.View `json:"memories"`
	NextCursor *string       `json:"next_cursor"`
}

// create posts one memory and returns the response entry.
func (s *stack) create(t testing.TB, bearer, agentID, typ string, content any) memCreated {
	t.Helper()
	var c memCreated
	s.request(t, "POST", "/v1/memories", bearer, map[string]any{"agent_id": agentID, "type": typ, "content": content}).
		must(t, http.StatusCreated, &c)
	return c
}

func (s *stack) get(t testing.TB, bearer, id string) memory.View {
	t.Helper()
	var v memory.View
	s.request(t, "GET", "/v1/memories/"+id, bearer, nil).must(t, http.StatusOK, &v)
	return v
}

// listAll pages through a listing with the given query and page size.
func (s *stack) listAll(t testing.TB, bearer, query string, limit int) []memory.View {
	t.Helper()
	var all []memory.View
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("listing does not end")
		}
		path := fmt.Sprintf("/v1/memories?%s&limit=%d", query, limit)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var page memList
		s.request(t, "GET", path, bearer, nil).must(t, http.StatusOK, &page)
		all = append(all, page.Memories...)
		if page.NextCursor == nil {
			return all
		}
		cursor = *page.NextCursor
	}
}

// export is the memories read model's export.
func (s *stack) export(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.memories.Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// waitPoll is the pause between two looks of memEventually and waitJob:
// each look is an HTTP exchange checked against the OpenAPI document,
// dear under the race detector, so the loops look a few times per wait
// rather than hundreds.
const waitPoll = 20 * time.Millisecond

// memEventually polls cond until it holds or a few seconds pass.
func memEventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(waitPoll)
	}
}

// --- embeddings ------------------------------------------------------------

// seed creates n notes (and one drive) in the user's agent through the
// memory commands, and returns the note ids in id order.
func (s *stack) seed(userID, agentID string, n int) []string {
	s.t.Helper()
	in := make([]commands.MemoryInput, 0, n+1)
	for i := range n {
		content, _ := json.Marshal(map[string]any{"content": fmt.Sprintf("note %d: the team deployed release %d to the server and fixed a cache bug", i, i)})
		in = append(in, commands.MemoryInput{Type: "notes", Content: content})
	}
	in = append(in, commands.MemoryInput{Type: "drive", Content: json.RawMessage(`{"drive_type":"curiosity","intensity":0.5}`)})
	var ids []string
	for start := 0; start < len(in); start += memory.MaxBatch {
		created, err := s.memCmds.CreateBatch(context.Background(), metaFor(userID), agentID, in[start:min(len(in), start+memory.MaxBatch)])
		if err != nil {
			s.t.Fatal(err)
		}
		for _, c := range created {
			if c.Type == memory.Note {
				ids = append(ids, c.ID)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// jobEvents counts the MemoryEmbedded events of the log that carry jobID,
// and the distinct memories among them.
func (s *stack) jobEvents(jobID string) (events, memories int) {
	s.t.Helper()
	seen := map[string]bool{}
	var after uint64
	for {
		batch, err := s.store.ReadAll(context.Background(), after, 1000)
		if err != nil {
			s.t.Fatal(err)
		}
		if len(batch) == 0 {
			return events, len(seen)
		}
		for _, e := range batch {
			after = e.Position
			if e.Type != (memory.MemoryEmbedded{}).EventType() {
				continue
			}
			var p memory.MemoryEmbedded
			if err := e.Decode(&p); err != nil {
				s.t.Fatal(err)
			}
			if p.JobID == jobID {
				events++
				seen[p.MemoryID] = true
			}
		}
	}
}

// waitJob polls the job until cond holds or the deadline passes.
func (s *stack) waitJob(bearer, jobID string, cond func(map[string]any) bool) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, bearer, nil).data()
		if cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("job %s never reached the expected state: %v", jobID, d)
		}
		time.Sleep(waitPoll)
	}
}

func statusIs(status string) func(map[string]any) bool {
	return func(d map[string]any) bool { return d["status"] == status }
}

type commandsInput = commands.MemoryInput

// num reads a JSON number.
func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// floats reads a JSON array of numbers.
func floats(v any) []float32 {
	arr, _ := v.([]any)
	out := make([]float32, len(arr))
	for i, x := range arr {
		f, _ := x.(float64)
		out[i] = float32(f)
	}
	return out
}
