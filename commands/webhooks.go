package commands

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/webhook"
)

// WebhookReadModel is the webhooks read model as the commands and their
// listings read it; every lookup is scoped by user.
type WebhookReadModel interface {
	Webhooks(ctx context.Context, userID string) ([]webhook.View, error)
	Webhook(ctx context.Context, userID, webhookID string) (webhook.View, bool, error)
	Deliveries(ctx context.Context, q webhook.DeliveryQuery) (webhook.DeliveryPage, error)
}

// WebhookTargets checks where a webhook may be delivered: a host name
// must resolve to public addresses only (the dialer checks again at every
// delivery, against DNS rebinding). infra/webhookhttp implements it.
type WebhookTargets interface {
	CheckTarget(ctx context.Context, u *url.URL) error
}

// WebhooksConfig wires Webhooks.
type WebhooksConfig struct {
	Writer  *EventWriter
	Reader  WebhookReadModel
	Targets WebhookTargets
	// AllowPrivate accepts http and loopback, private and link-local
	// targets (--webhook-allow-private: development and tests).
	AllowPrivate bool
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Webhooks registers, lists and deletes a user's webhooks.
type Webhooks struct {
	cfg WebhooksConfig
}

// NewWebhooks returns the webhook commands.
func NewWebhooks(cfg WebhooksConfig) (*Webhooks, error) {
	if cfg.Writer == nil || cfg.Reader == nil || cfg.Targets == nil {
		return nil, fmt.Errorf("commands: webhooks need a writer, a reader and a target check")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Webhooks{cfg: cfg}, nil
}

// CreatedWebhook is a new webhook with its secret, shown this once.
type CreatedWebhook struct {
	webhook.View
	Secret string `json:"secret"`
}

// Create registers a webhook of the caller's for url and events.
func (w *Webhooks) Create(ctx context.Context, meta domain.Metadata, rawURL string, events []string) (CreatedWebhook, error) {
	u, err := webhook.ValidateURL(rawURL, w.cfg.AllowPrivate)
	if err != nil {
		return CreatedWebhook{}, err
	}
	// The events are checked before the name is resolved: a refusal
	// should not depend on (nor wait for) the DNS.
	if _, err := webhook.ValidateEvents(events); err != nil {
		return CreatedWebhook{}, err
	}
	if !w.cfg.AllowPrivate {
		if err := w.cfg.Targets.CheckTarget(ctx, u); err != nil {
			return CreatedWebhook{}, err
		}
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		return CreatedWebhook{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return CreatedWebhook{}, fmt.Errorf("commands: webhook id: %w", err)
	}
	userID := meta.Actor.UserID
	var reg webhook.Registered
	err = RetryOnConflict(ctx, func() error {
		subs, err := w.load(ctx, userID)
		if err != nil {
			return err
		}
		if reg, err = subs.Register(id.String(), rawURL, events, secret, w.cfg.AllowPrivate, w.cfg.Now()); err != nil {
			return err
		}
		_, err = w.cfg.Writer.Append(ctx, webhook.Stream(userID), subs.Version(), meta, reg)
		return err
	})
	if err != nil {
		return CreatedWebhook{}, err
	}
	return CreatedWebhook{View: webhook.View{ID: reg.WebhookID, URL: reg.URL, Events: reg.Events, CreatedAt: reg.CreatedAt}, Secret: secret}, nil
}

// Delete removes one of the caller's webhooks; its pending deliveries are
// dropped.
func (w *Webhooks) Delete(ctx context.Context, meta domain.Metadata, webhookID string) error {
	userID := meta.Actor.UserID
	return RetryOnConflict(ctx, func() error {
		subs, err := w.load(ctx, userID)
		if err != nil {
			return err
		}
		del, err := subs.Delete(webhookID, w.cfg.Now())
		if err != nil {
			return err
		}
		_, err = w.cfg.Writer.Append(ctx, webhook.Stream(userID), subs.Version(), meta, del)
		return err
	})
}

func (w *Webhooks) load(ctx context.Context, userID string) (*webhook.Subscriptions, error) {
	events, err := w.cfg.Writer.Store().ReadStream(ctx, webhook.Stream(userID), 0)
	if err != nil {
		return nil, fmt.Errorf("commands: load webhooks of %s: %w", userID, err)
	}
	return webhook.Fold(userID, events)
}

// List returns the caller's webhooks, oldest first, without secrets.
func (w *Webhooks) List(ctx context.Context, actor domain.Actor) ([]webhook.View, error) {
	return w.cfg.Reader.Webhooks(ctx, actor.UserID)
}

// Deliveries returns a page of one of the caller's webhooks' deliveries,
// newest first; another user's webhook is not found.
func (w *Webhooks) Deliveries(ctx context.Context, actor domain.Actor, q webhook.DeliveryQuery) (webhook.DeliveryPage, error) {
	q.UserID = actor.UserID
	if _, found, err := w.cfg.Reader.Webhook(ctx, actor.UserID, q.WebhookID); err != nil || !found {
		if err == nil {
			err = domain.NotFound("webhook")
		}
		return webhook.DeliveryPage{}, err
	}
	return w.cfg.Reader.Deliveries(ctx, q)
}
