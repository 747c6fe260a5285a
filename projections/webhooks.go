package projections

import (
	"context"
	"fmt"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/webhook"
)

// WebhooksProjectionName names the webhooks read model.
const WebhooksProjectionName = "webhooks"

// NewWebhooks returns the projection of the log into the webhooks read
// model: the registrations, and one delivery per event a registration
// subscribes to, enqueued in the batch's transaction with the checkpoint.
// The engine's watermill router feeds it like every projection, so the
// outbox follows the log from its checkpoint: after a restart, or a failed
// batch, it resumes where it stood and skips nothing. Sending is the
// dispatcher's (workers.WebhookDispatcher), so no receiver slows a write.
func NewWebhooks(store webhook.ReadModel) Projection {
	return &readModel[webhook.ReadModelTx]{name: WebhooksProjectionName, store: store, apply: applyWebhookEvent}
}

func applyWebhookEvent(ctx context.Context, tx webhook.ReadModelTx, e domain.Event) error {
	switch e.Type {
	case webhook.TypeRegistered:
		var p webhook.Registered
		if err := e.Decode(&p); err != nil {
			return fmt.Errorf("webhooks: decode %s: %w", e.Type, err)
		}
		return tx.Register(ctx, p)
	case webhook.TypeDeleted:
		var p webhook.Deleted
		if err := e.Decode(&p); err != nil {
			return fmt.Errorf("webhooks: decode %s: %w", e.Type, err)
		}
		return tx.Delete(ctx, p.UserID, p.WebhookID)
	}
	n, ok, err := webhook.NotificationOf(e)
	if err != nil || !ok {
		return err
	}
	subscribers, err := tx.Subscribers(ctx, n.UserID, n.Event)
	if err != nil {
		return err
	}
	for _, id := range subscribers {
		d := webhook.Enqueued{
			ID: webhook.DeliveryID(id, e.ID), UserID: n.UserID, WebhookID: id, Event: n.Event, EventID: e.ID, Position: e.Position, CreatedAt: e.Time,
		}
		if d.Body, err = webhook.MarshalBody(webhook.Body{DeliveryID: d.ID, WebhookID: id, Event: n.Event, EventID: e.ID, OccurredAt: e.Time, Data: n.Data}); err != nil {
			return fmt.Errorf("webhooks: encode delivery: %w", err)
		}
		if err := tx.Enqueue(ctx, d); err != nil {
			return err
		}
	}
	return nil
}
