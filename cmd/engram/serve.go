package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// serveConfig is everything `engram serve` can be told.
type serveConfig struct {
	Addr              string
	DataDir           string
	PublicURL         string
	SMTPURL           string
	MailOutbox        string
	SessionTTL        time.Duration
	UsageFlush        time.Duration
	RateLimit         float64
	RateBurst         int
	IPRateLimit       float64
	IPRateBurst       int
	MaxBodyBytes      int64
	EmbedProvider     string
	EmbedModel        string
	EmbedModelDir     string
	OpenAIBaseURL     string
	OpenAIAPIKey      string
	OpenAIOrg         string
	OpenAIExtraModels string
	LogLevel          string
	LogFormat         string
	PprofAddr         string
}

func serveFlags(cfg *serveConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address HOST:PORT")
	fs.StringVar(&cfg.DataDir, "data-dir", filepath.Join(engramHome(), "server"), "data directory (SQLite file, outbox)")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "base URL used in links in e-mails (default http://<addr>)")
	fs.StringVar(&cfg.SMTPURL, "smtp-url", "", "SMTP server for mail, e.g. smtp://user:pass@host:587 (default: write .eml files to the outbox)")
	fs.StringVar(&cfg.MailOutbox, "mail-outbox", "", "directory for .eml files when no SMTP server is set (default <data-dir>/outbox)")
	fs.DurationVar(&cfg.SessionTTL, "session-ttl", 24*time.Hour, "lifetime of session tokens from /auth/login")
	fs.DurationVar(&cfg.UsageFlush, "usage-flush", 30*time.Second, "how often key last_used_at updates are recorded")
	fs.Float64Var(&cfg.RateLimit, "rate-limit", 50, "requests per second per credential (0 disables)")
	fs.IntVar(&cfg.RateBurst, "rate-burst", 100, "burst size per credential")
	fs.Float64Var(&cfg.IPRateLimit, "ip-rate-limit", 1, "register/verify/login requests per second per client IP (0 disables)")
	fs.IntVar(&cfg.IPRateBurst, "ip-rate-burst", 20, "burst size per client IP")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 10<<20, "largest accepted request body")
	fs.StringVar(&cfg.EmbedProvider, "embed-provider", "local", "embedding provider: local or openai")
	fs.StringVar(&cfg.EmbedModel, "embed-model", "", "default embedding model (default: engram-hash-384 for local, text-embedding-3-small for openai)")
	fs.StringVar(&cfg.EmbedModelDir, "embed-model-dir", "", "comma-separated directories of Model2Vec-style static models to load")
	fs.StringVar(&cfg.OpenAIBaseURL, "openai-base-url", "", "OpenAI-compatible API base URL (env OPENAI_BASE_URL also works)")
	fs.StringVar(&cfg.OpenAIOrg, "openai-org", "", "OpenAI organisation")
	fs.StringVar(&cfg.OpenAIExtraModels, "openai-extra-models", "", "extra models of an OpenAI-compatible server, as name:dimensions,... (e.g. nomic-embed-text:768)")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "text or json")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", "", "serve net/http/pprof (/debug/pprof/) on this separate loopback address, e.g. 127.0.0.1:6060, for profiling; unauthenticated, so only loopback is accepted (default off)")
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
	cfg.fillFromStandardEnv()
	logger, err := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, logger)
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
	a, err := newApp(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer a.close(context.Background())

	if cfg.PprofAddr != "" {
		_, stop, err := servePprof(cfg.PprofAddr, logger)
		if err != nil {
			return err
		}
		defer stop()
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
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

// servePprof serves the runtime profiles of net/http/pprof on addr, a
// listener of its own: they are never part of the API handler. The
// endpoints carry no authentication, so addr must be a loopback address.
// It returns the address it listens on.
func servePprof(addr string, logger *slog.Logger) (bound string, stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, fmt.Errorf("--pprof-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return "", nil, fmt.Errorf("--pprof-addr %q: only a loopback address is allowed (the profiles are unauthenticated)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--pprof-addr: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("pprof serving", "addr", ln.Addr().String())
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}
