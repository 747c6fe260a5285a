package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain/webhook"
)

// WebhookPoster sends one delivery attempt, signed at now, and returns the
// receiver's HTTP status; err is a failure to get one (refused address,
// timeout, TLS). infra/webhookhttp.Client implements it.
type WebhookPoster interface {
	Post(ctx context.Context, p webhook.Pending, now time.Time) (status int, err error)
}

// WebhookDispatcherConfig wires a WebhookDispatcher. Zero durations and
// counts take the defaults.
type WebhookDispatcherConfig struct {
	Outbox webhook.Outbox
	Poster WebhookPoster
	Logger *slog.Logger
	// PollInterval is how often the outbox is read for due deliveries
	// (default 1s).
	PollInterval time.Duration
	// Backoff is the delay before the second attempt; each later one
	// doubles it, up to MaxBackoff (defaults 30s and 1h).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// MaxAttempts bounds the attempts of one delivery; after the last
	// failure it is marked failed (default 8: about 1h10m of retries at
	// the default backoff).
	MaxAttempts int
	// Concurrency bounds the attempts in flight (default 8).
	Concurrency int
	// AttemptTimeout bounds one attempt (default 10s); a claim lasts a
	// minute longer, so a dispatcher that died mid-attempt releases its
	// deliveries to the others by then.
	AttemptTimeout time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Webhook dispatcher defaults.
const (
	DefaultWebhookPollInterval = time.Second
	DefaultWebhookBackoff      = 30 * time.Second
	DefaultWebhookMaxBackoff   = time.Hour
	DefaultWebhookMaxAttempts  = 8
	defaultWebhookConcurrency  = 8
	defaultWebhookTimeout      = 10 * time.Second
)

// WebhookDispatcher sends the outbox's deliveries (the webhooks
// projection enqueues them from the log) through a watermill router: its
// subscriber claims due deliveries, one message each, and the handler
// posts it and records the outcome. Retries are durable: a failed attempt
// is recorded with the time of the next one (exponential backoff), so a
// restart, here or on another node, resumes the schedule and loses
// nothing. Claims keep dispatchers over one shared outbox (PostgreSQL read
// models) off each other's deliveries, so it is safe to run on every node.
type WebhookDispatcher struct {
	cfg WebhookDispatcherConfig
}

// NewWebhookDispatcher returns a dispatcher.
func NewWebhookDispatcher(cfg WebhookDispatcherConfig) (*WebhookDispatcher, error) {
	if cfg.Outbox == nil || cfg.Poster == nil {
		return nil, errors.New("workers: a webhook dispatcher needs an outbox and a poster")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultWebhookPollInterval
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultWebhookBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultWebhookMaxBackoff
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.Backoff)
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultWebhookMaxAttempts
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = defaultWebhookConcurrency
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = defaultWebhookTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &WebhookDispatcher{cfg: cfg}, nil
}

// webhookTopic names the dispatcher's handler and topic.
const webhookTopic = "webhook-deliveries"

// Run delivers until ctx ends.
func (d *WebhookDispatcher) Run(ctx context.Context) error {
	wmLogger := watermill.NewSlogLoggerWithLevelMapping(d.cfg.Logger.With("component", "watermill"),
		map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug})
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: d.cfg.AttemptTimeout + time.Second}, wmLogger)
	if err != nil {
		return fmt.Errorf("workers: webhook router: %w", err)
	}
	router.AddConsumerHandler(webhookTopic, webhookTopic, &outboxSubscriber{d: d}, d.deliver).
		AddMiddleware(middleware.Recoverer)
	runReturned := make(chan struct{})
	go func() {
		<-ctx.Done()
		select {
		case <-router.Running():
			router.Close()
		case <-runReturned:
		}
	}()
	err = router.Run(ctx)
	close(runReturned)
	if err != nil {
		return err
	}
	return ctx.Err()
}

// backoff is the delay after the attempts-th failed attempt.
func (d *WebhookDispatcher) backoff(attempts int) time.Duration {
	delay := d.cfg.Backoff
	for i := 1; i < attempts && delay < d.cfg.MaxBackoff; i++ {
		delay *= 2
	}
	return min(delay, d.cfg.MaxBackoff)
}

// deliver makes one attempt and records it. A stopping dispatcher gives
// its claim back instead, counting no attempt.
func (d *WebhookDispatcher) deliver(msg *message.Message) error {
	var p webhook.Pending
	if err := json.Unmarshal(msg.Payload, &p); err != nil {
		return fmt.Errorf("workers: webhook message: %w", err)
	}
	ctx := msg.Context()
	attemptCtx, cancel := context.WithTimeout(ctx, d.cfg.AttemptTimeout)
	status, err := d.post(attemptCtx, p)
	cancel()
	if ctx.Err() != nil {
		return d.cfg.Outbox.Release(context.WithoutCancel(ctx), p.ID)
	}
	o := webhook.Outcome{At: d.cfg.Now().UTC(), StatusCode: status, Delivered: err == nil && status >= 200 && status < 300}
	if !o.Delivered {
		if err != nil {
			o.Error = err.Error()
		} else {
			o.Error = fmt.Sprintf("receiver answered %d", status)
		}
		attempts := p.Attempts + 1
		if attempts < d.cfg.MaxAttempts {
			o.Next = o.At.Add(d.backoff(attempts))
			d.cfg.Logger.Warn("webhook delivery failed; retrying", "delivery_id", p.ID, "webhook_id", p.WebhookID, "attempt", attempts, "next_attempt_at", o.Next, "error", o.Error)
		} else {
			d.cfg.Logger.Error("webhook delivery failed for good", "delivery_id", p.ID, "webhook_id", p.WebhookID, "attempts", attempts, "error", o.Error)
		}
	}
	return d.cfg.Outbox.Record(context.WithoutCancel(ctx), p.ID, o)
}

// post makes one attempt. A sender that panics has failed the attempt:
// the panic is an error, recorded and retried with backoff like any
// other, so a delivery that always panics is failed after MaxAttempts
// rather than left to the claim's expiry, which counts no attempt and
// would retry it for ever.
func (d *WebhookDispatcher) post(ctx context.Context, p webhook.Pending) (status int, err error) {
	defer func() {
		if r := recover(); r != nil {
			d.cfg.Logger.Error("webhook sender panicked", "delivery_id", p.ID, "webhook_id", p.WebhookID, "panic", r, "stack", string(debug.Stack()))
			// The delivery log is the user's: it says what failed, the
			// server log says why.
			status, err = 0, errSenderPanicked
		}
	}()
	return d.cfg.Poster.Post(ctx, p, d.cfg.Now())
}

// errSenderPanicked is the error an attempt whose sender panicked records.
var errSenderPanicked = errors.New("the attempt failed inside the server (its log has the details)")

// outboxSubscriber is a watermill Subscriber over the outbox: it claims
// due deliveries while fewer than Concurrency are in flight, and sends
// each as a message. A message nacked (its outcome could not be recorded)
// is not redelivered here: its claim expires and any dispatcher takes it
// again.
type outboxSubscriber struct {
	d *WebhookDispatcher
}

var _ message.Subscriber = (*outboxSubscriber)(nil)

func (s *outboxSubscriber) Subscribe(ctx context.Context, _ string) (<-chan *message.Message, error) {
	out := make(chan *message.Message)
	go func() {
		defer close(out)
		s.feed(ctx, out)
	}()
	return out, nil
}

func (s *outboxSubscriber) feed(ctx context.Context, out chan<- *message.Message) {
	cfg := s.d.cfg
	slots := make(chan struct{}, cfg.Concurrency)
	// freed is signalled when an attempt ends, so a full dispatcher with a
	// backlog claims again at once rather than at the next poll.
	freed := make(chan struct{}, 1)
	claimFor := cfg.AttemptTimeout + time.Minute
	for {
		free := cfg.Concurrency - len(slots)
		claimed := 0
		if free > 0 {
			now := cfg.Now()
			pending, err := cfg.Outbox.Claim(ctx, now, now.Add(claimFor), free)
			if err != nil && ctx.Err() == nil {
				cfg.Logger.Warn("reading the webhook outbox failed; retrying", "error", err)
			}
			claimed = len(pending)
			for _, p := range pending {
				payload, err := json.Marshal(p)
				if err != nil {
					cfg.Logger.Error("webhook delivery not encodable", "delivery_id", p.ID, "error", err)
					continue
				}
				msg := message.NewMessage(uuid.NewString(), payload)
				msg.SetContext(ctx)
				slots <- struct{}{}
				select {
				case out <- msg:
				case <-ctx.Done():
					_ = cfg.Outbox.Release(context.WithoutCancel(ctx), p.ID)
					continue
				}
				go func() {
					select {
					case <-msg.Acked():
					case <-msg.Nacked():
					case <-ctx.Done():
					}
					<-slots
					select {
					case freed <- struct{}{}:
					default:
					}
				}()
			}
		}
		if claimed == free && free > 0 {
			continue // there may be more due at once
		}
		var slotFreed <-chan struct{}
		if free == 0 {
			slotFreed = freed
		}
		select {
		case <-ctx.Done():
			return
		case <-slotFreed:
		case <-time.After(cfg.PollInterval):
		}
	}
}

func (s *outboxSubscriber) Close() error { return nil }
