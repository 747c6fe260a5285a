package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/llm"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/loopback"
	"github.com/engram-memory/engram/internal/workers"
)

// serveConfig is everything `engram serve` can be told.
type serveConfig struct {
	Addr              string
	DataDir           string
	Durability        string
	PublicURL         string
	SMTPURL           string
	SMTPURLFile       string
	MailOutbox        string
	SessionTTL        time.Duration
	ResendInterval    time.Duration
	MaxKeysPerUser    int
	UsageFlush        time.Duration
	RateLimit         float64
	RateBurst         int
	IPRateLimit       float64
	IPRateBurst       int
	MaxBodyBytes      int64
	ReadHeaderTimeout time.Duration
	BodyReadTimeout   time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxConnections    int
	MaxInFlight       int
	EmbedProvider     string
	EmbedModel        string
	EmbedModelDir     string
	OpenAIBaseURL     string
	OpenAIAPIKey      string
	OpenAIOrg         string
	OpenAIExtraModels string
	ChatModel         string
	ChatTimeout       time.Duration
	ProcessInterval   time.Duration
	ProcessWorkers    int
	LogLevel          string
	LogFormat         string
	PprofAddr         string
	MetricsAddr       string
	Quotas            memory.Quotas
	SyncMaxPushBytes  int64
	Indexes           app.Indexes
	EventStore        app.EventStore
	ReadModels        app.ReadModels
	NodeID            string
	ConsistencyWait   time.Duration
	JobLeaseTimeout   time.Duration
	JobBatchSize      int
	JobBatchDelay     time.Duration
	JobMaxAttempts    int
	Webhooks          webhookConfig

	// metricsAddrDefault: --metrics-addr was not given, so a default
	// address another process holds turns metrics off with a warning
	// instead of failing the start.
	metricsAddrDefault bool
}

func serveFlags(cfg *serveConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address HOST:PORT")
	fs.StringVar(&cfg.DataDir, "data-dir", filepath.Join(engramHome(), "server"), "data directory (SQLite file, outbox)")
	fs.StringVar(&cfg.Durability, "durability", "durable", "durable: the event log is synced to disk before a write is acknowledged; relaxed: the OS writes it back later (an OS crash or power loss can lose the last acknowledged writes)")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "base URL used in links in e-mails (default http://<addr>)")
	fs.StringVar(&cfg.SMTPURL, "smtp-url", "", "SMTP server for mail, e.g. smtp://user:pass@host:587 (default: write .eml files to the outbox)")
	fs.StringVar(&cfg.SMTPURLFile, "smtp-url-file", "", "read --smtp-url from this file, so the password is not on the command line")
	fs.StringVar(&cfg.MailOutbox, "mail-outbox", "", "directory for .eml files when no SMTP server is set (default <data-dir>/outbox)")
	fs.DurationVar(&cfg.SessionTTL, "session-ttl", 24*time.Hour, "lifetime of session tokens from /auth/login")
	fs.DurationVar(&cfg.ResendInterval, "verification-resend-interval", time.Minute, "least time between two verification mails to one address (re-registering sooner is 429)")
	fs.IntVar(&cfg.MaxKeysPerUser, "max-keys-per-user", account.DefaultMaxActiveKeys, "active API keys one user may have; creating one more is 409 key_limit_reached")
	fs.DurationVar(&cfg.UsageFlush, "usage-flush", 30*time.Second, "how often key last_used_at updates are recorded")
	fs.Float64Var(&cfg.RateLimit, "rate-limit", 50, "requests per second per credential (0 disables)")
	fs.IntVar(&cfg.RateBurst, "rate-burst", 100, "burst size per credential")
	fs.Float64Var(&cfg.IPRateLimit, "ip-rate-limit", 1, "register/verify/login requests per second per client IP (0 disables)")
	fs.IntVar(&cfg.IPRateBurst, "ip-rate-burst", 20, "burst size per client IP")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 10<<20, "largest accepted request body")
	fs.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "time a client has to send the request line and headers")
	fs.DurationVar(&cfg.BodyReadTimeout, "body-read-timeout", time.Minute, "time a client has to send the request body (0: unbounded)")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", time.Minute, "time a client has to take a response once it starts (0: unbounded)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", time.Minute, "how long a keep-alive connection may wait for its next request")
	fs.IntVar(&cfg.MaxConnections, "max-connections", 4096, "most client connections held open at once; more wait to be accepted (0: no cap)")
	fs.IntVar(&cfg.MaxInFlight, "max-in-flight", 256, "most requests served at once; more get 503 server_busy with Retry-After (0: no cap)")
	fs.StringVar(&cfg.EmbedProvider, "embed-provider", "local", "embedding provider: local or openai")
	fs.StringVar(&cfg.EmbedModel, "embed-model", "", "default embedding model of new agents (default: glove-sif-100 for local, text-embedding-3-small for openai)")
	fs.StringVar(&cfg.EmbedModelDir, "embed-model-dir", "", "comma-separated directories of Model2Vec-style static models to load")
	fs.StringVar(&cfg.OpenAIBaseURL, "openai-base-url", "", "OpenAI-compatible API base URL (env OPENAI_BASE_URL also works)")
	fs.StringVar(&cfg.OpenAIOrg, "openai-org", "", "OpenAI organisation")
	fs.StringVar(&cfg.OpenAIExtraModels, "openai-extra-models", "", "extra models of an OpenAI-compatible server, as name:dimensions,... (e.g. nomic-embed-text:768)")
	fs.StringVar(&cfg.ChatModel, "chat-model", "", "chat model of the OpenAI-compatible endpoint (same base URL and key as embeddings) that raw processing uses; empty: the built-in rule-based extractor, which serves only raw_to_episode and raw_to_note")
	fs.DurationVar(&cfg.ChatTimeout, "chat-timeout", llm.DefaultTimeout, "time one processing request to the chat model may take")
	fs.DurationVar(&cfg.ProcessInterval, "process-interval", 5*time.Minute, "how often the background scheduler visits every agent and runs the processing transitions whose triggers fire (0 disables it; then only POST /process runs passes)")
	fs.IntVar(&cfg.ProcessWorkers, "process-concurrency", workers.DefaultSchedulerConcurrency, "agents the background scheduler processes at once")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "text or json")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", "", "serve net/http/pprof (/debug/pprof/) on this separate loopback address, e.g. 127.0.0.1:6060, for profiling; unauthenticated, so only loopback is accepted (default off)")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", DefaultMetricsAddr, "serve Prometheus metrics (/metrics) on this separate address; a loopback address answers only requests naming a loopback host, any other (e.g. :9464 in a pod) is served to whoever reaches it; empty turns metrics off (docs/operations.md#metrics)")
	fs.IntVar(&cfg.Quotas.MemoriesPerAgent, "quota-memories-per-agent", memory.DefaultMemoriesPerAgent, "memories one agent may keep, forgotten ones included (0: no limit)")
	fs.IntVar(&cfg.Quotas.AgentsPerUser, "quota-agents-per-user", memory.DefaultAgentsPerUser, "agents one user may have (0: no limit)")
	fs.Int64Var(&cfg.Quotas.TextBytesPerUser, "quota-text-bytes-per-user", memory.DefaultTextBytesPerUser, "bytes of memory content one user may store (0: no limit)")
	fs.Int64Var(&cfg.SyncMaxPushBytes, "sync-max-push-bytes", commands.DefaultMaxSyncPushBytes, "bytes of event payloads one POST /v1/sync/events may carry, summed (docs/sync.md)")
	indexFlags(fs, &cfg.Indexes)
	eventStoreFlags(fs, &cfg.EventStore)
	readModelFlags(fs, &cfg.ReadModels)
	fs.StringVar(&cfg.NodeID, "node-id", "", "this node's name in the events of the re-embedding jobs it holds; a node restarted under the same name resumes its jobs at once (default HOST/ADDR, distinct per node of one host)")
	fs.DurationVar(&cfg.ConsistencyWait, "consistency-wait", api.DefaultConsistencyWait, "longest a request waits for this node to apply what its Engram-Consistency-Token names (or, over a shared log, the credential changes of other nodes) before 503 not_yet_consistent")
	fs.DurationVar(&cfg.JobLeaseTimeout, "job-lease-timeout", 5*time.Minute, "how long a running re-embedding job may go without progress before another node takes it over (its node died)")
	fs.IntVar(&cfg.JobBatchSize, "job-batch-size", 128, "memories a re-embedding job embeds and records per step")
	fs.DurationVar(&cfg.JobBatchDelay, "job-batch-delay", 0, "pause between two steps of a re-embedding job, to throttle it")
	fs.IntVar(&cfg.JobMaxAttempts, "job-max-attempts", workers.DefaultJobMaxAttempts, "failed attempts in a row at one step of a re-embedding job (each after the embedding provider's own retries) before the job fails")
	webhookFlags(fs, &cfg.Webhooks)
	return fs
}

func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg serveConfig
	fs := serveFlags(&cfg)
	if err := parseCommandFlags(fs, args, "engram serve [flags]", stdout, stderr); err != nil {
		return err
	}
	if err := applyLocalConfig(fs, filepath.Join(engramHome(), "config.json")); err != nil {
		return err
	}
	cfg.metricsAddrDefault = true
	fs.Visit(func(f *flag.Flag) { cfg.metricsAddrDefault = cfg.metricsAddrDefault && f.Name != "metrics-addr" })
	if err := cfg.readSecretFiles(); err != nil {
		return err
	}
	cfg.fillFromStandardEnv()
	readIndexKeys(&cfg.Indexes)
	readEventStoreCredentials(&cfg.EventStore)
	if err := cfg.Indexes.Validate(); err != nil {
		return err
	}
	if err := checkEventStoreSecret(args, cfg.EventStore); err != nil {
		return err
	}
	if err := cfg.EventStore.Validate(); err != nil {
		return err
	}
	if err := checkReadModelsSecret(args, cfg.ReadModels); err != nil {
		return err
	}
	if err := cfg.ReadModels.Validate(cfg.EventStore); err != nil {
		return err
	}
	logger, err := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, logger)
}

// readSecretFiles fills the secrets given as files (--smtp-url-file).
func (cfg *serveConfig) readSecretFiles() error {
	if cfg.SMTPURLFile == "" {
		return nil
	}
	if cfg.SMTPURL != "" {
		return errors.New("--smtp-url and --smtp-url-file are both set; give one")
	}
	raw, err := os.ReadFile(cfg.SMTPURLFile)
	if err != nil {
		return fmt.Errorf("--smtp-url-file: %w", err)
	}
	cfg.SMTPURL = strings.TrimSpace(string(raw))
	if cfg.SMTPURL == "" {
		return fmt.Errorf("--smtp-url-file %s is empty", cfg.SMTPURLFile)
	}
	return nil
}

// fillFromStandardEnv reads the variables OpenAI's own SDKs use.
func (cfg *serveConfig) fillFromStandardEnv() {
	if cfg.OpenAIBaseURL == "" {
		cfg.OpenAIBaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	cfg.OpenAIAPIKey = os.Getenv("OPENAI_API_KEY")
	if cfg.MailOutbox == "" {
		cfg.MailOutbox = filepath.Join(cfg.DataDir, "outbox")
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + cfg.Addr
	}
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// serve runs the API until ctx ends, then shuts down in order: stop taking
// requests, let in-flight ones finish (their writes are durable before they
// are acknowledged), flush buffered usage, stop projections, close storage.
func serve(ctx context.Context, cfg serveConfig, logger *slog.Logger) error {
	// Bound first: the default node id names the address actually bound
	// (--addr 127.0.0.1:0 picks a port), distinct per node of one host.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer ln.Close()
	if cfg.NodeID == "" {
		host, _ := os.Hostname()
		cfg.NodeID = cmp.Or(host, "engram") + "/" + ln.Addr().String()
	}
	a, err := newServer(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer a.close(context.Background())
	stopAdmin, err := serveAdminSocket(cfg.DataDir, a.app.Core, logger)
	if err != nil {
		return err
	}
	defer stopAdmin()

	if err := a.startScheduler(cfg); err != nil {
		return err
	}

	if cfg.PprofAddr != "" {
		_, stop, err := servePprof(cfg.PprofAddr, logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	if a.telemetry.metrics != nil {
		_, stop, err := serveMetrics(cfg.MetricsAddr, a.telemetry.metrics.Handler(), logger)
		switch {
		case err != nil && cfg.metricsAddrDefault:
			logger.Warn("metrics are off: the default --metrics-addr is taken; give --metrics-addr another address (or empty to silence this)", "error", err)
		case err != nil:
			return err
		default:
			defer stop()
		}
	}

	ln = newLimitListener(ln, cfg.MaxConnections)
	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		// No ReadTimeout: it would also cancel the context of a request
		// that runs past it. The API bounds the body's read itself
		// (--body-read-timeout) and the response's write (--write-timeout).
	}
	warnIfExposed(logger, ln.Addr().String())
	logger.Info("engram serving", "addr", ln.Addr().String(), "data_dir", cfg.DataDir, "base_url", "http://"+ln.Addr().String()+"/v1")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("http shutdown", "error", err)
	}
	return a.close(shutdownCtx)
}

// startScheduler runs the processing scheduler in the background when
// --process-interval is set, once the projections have caught up (a sweep
// must not decide on read models that lag the log). Closing the app stops
// it before anything it uses: no agent is started after that, and passes
// under way finish.
func (a *server) startScheduler(cfg serveConfig) error {
	switch {
	case cfg.ProcessInterval < 0:
		return fmt.Errorf("--process-interval must be 0 (off) or positive, got %s", cfg.ProcessInterval)
	case cfg.ProcessInterval == 0:
		return nil
	case cfg.ProcessWorkers < 1:
		return fmt.Errorf("--process-concurrency must be at least 1, got %d", cfg.ProcessWorkers)
	}
	if err := a.app.StartScheduler(cfg.ProcessInterval, cfg.ProcessWorkers); err != nil {
		return err
	}
	a.logger.Info("processing scheduler on", "interval", cfg.ProcessInterval, "concurrency", cfg.ProcessWorkers)
	return nil
}

// warnIfExposed warns when the API listens beyond this machine: anyone who
// can reach the address can register and use it.
func warnIfExposed(logger *slog.Logger, addr string) {
	if !loopback.Addr(addr) {
		logger.Warn("the API is exposed beyond this machine: --addr is not a loopback address, so anyone who can reach it can register and call the API; put it behind a TLS-terminating proxy or bind 127.0.0.1",
			"addr", addr)
	}
}
