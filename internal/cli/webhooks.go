package cli

import (
	"flag"
	"log/slog"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/infra/webhookhttp"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/workers"
)

// webhookConfig is what `engram serve` is told about webhooks.
type webhookConfig struct {
	AllowPrivate bool
	Timeout      time.Duration
	MaxAttempts  int
	Backoff      time.Duration
	MaxBackoff   time.Duration
}

func webhookFlags(fs *flag.FlagSet, cfg *webhookConfig) {
	fs.BoolVar(&cfg.AllowPrivate, "webhook-allow-private", false, "let webhooks target http URLs and loopback, private and link-local addresses (development and tests only: it opens the server's network to its users)")
	fs.DurationVar(&cfg.Timeout, "webhook-timeout", webhookhttp.DefaultTimeout, "time one webhook delivery attempt may take, connect to answer")
	fs.IntVar(&cfg.MaxAttempts, "webhook-max-attempts", workers.DefaultWebhookMaxAttempts, "attempts of one webhook delivery before it is marked failed")
	fs.DurationVar(&cfg.Backoff, "webhook-backoff", workers.DefaultWebhookBackoff, "delay before a failed webhook delivery's second attempt; it doubles for each later one")
	fs.DurationVar(&cfg.MaxBackoff, "webhook-max-backoff", workers.DefaultWebhookMaxBackoff, "longest delay between two attempts of a webhook delivery")
}

// startWebhooks builds the webhook commands and runs the dispatcher that
// sends the outbox's deliveries.
func startWebhooks(cfg webhookConfig, a *app.App, logger *slog.Logger) (*commands.Webhooks, error) {
	st := a.Core
	client := webhookhttp.New(webhookhttp.Options{Timeout: cfg.Timeout, AllowPrivate: cfg.AllowPrivate, UserAgent: "engram-webhooks/" + serverVersion()})
	hooks, err := commands.NewWebhooks(commands.WebhooksConfig{Writer: st.Writer, Reader: st.Webhooks, Targets: client, AllowPrivate: cfg.AllowPrivate})
	if err != nil {
		return nil, err
	}
	dispatcher, err := workers.NewWebhookDispatcher(workers.WebhookDispatcherConfig{
		Outbox: st.Webhooks, Poster: client, Logger: logger,
		Backoff: cfg.Backoff, MaxBackoff: cfg.MaxBackoff, MaxAttempts: cfg.MaxAttempts, AttemptTimeout: cfg.Timeout,
	})
	if err != nil {
		return nil, err
	}
	a.RunInBackground("webhook_dispatcher", dispatcher.Run)
	return hooks, nil
}
