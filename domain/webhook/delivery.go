package webhook

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Status is where a delivery stands.
type Status string

// A delivery is pending until the receiver answers 2xx (delivered) or
// every attempt failed (failed).
const (
	StatusPending   Status = "pending"
	StatusDelivered Status = "delivered"
	StatusFailed    Status = "failed"
)

// Delivery is one notification to one webhook, with its attempts so far.
type Delivery struct {
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	Event     string `json:"event"`
	EventID   string `json:"event_id"`
	// Position is the log position of the event.
	Position      uint64     `json:"position"`
	Status        Status     `json:"status"`
	Attempts      int        `json:"attempts"`
	CreatedAt     time.Time  `json:"created_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	// LastStatusCode is the receiver's last HTTP status (0: none came).
	LastStatusCode int        `json:"last_status_code"`
	LastError      string     `json:"last_error"`
	DeliveredAt    *time.Time `json:"delivered_at"`
}

// Limits of a page of deliveries.
const (
	DefaultDeliveryLimit = 50
	MaxDeliveryLimit     = 200
)

// DeliveryQuery selects a page of a webhook's deliveries, newest first;
// Cursor is the previous page's NextCursor.
type DeliveryQuery struct {
	UserID    string
	WebhookID string
	Cursor    string
	Limit     int
}

// Bounds are the query's page size (the default when unset, at most
// MaxDeliveryLimit) and the log position the page starts below (above
// every position without a cursor).
func (q DeliveryQuery) Bounds() (limit int, before int64, err error) {
	limit = q.Limit
	if limit <= 0 {
		limit = DefaultDeliveryLimit
	}
	limit = min(limit, MaxDeliveryLimit)
	if q.Cursor == "" {
		return limit, math.MaxInt64, nil
	}
	before, err = strconv.ParseInt(q.Cursor, 10, 64)
	if err != nil || before < 1 {
		return 0, 0, domain.Invalid("cursor", "cursor must be the next_cursor of the previous page")
	}
	return limit, before, nil
}

// DeliveryPage is one page of deliveries; NextCursor is empty on the last.
type DeliveryPage struct {
	Deliveries []Delivery
	NextCursor string
}

// Pending is a delivery claimed for an attempt, with what the attempt
// needs: the webhook's URL and secret, and the body.
type Pending struct {
	ID        string
	UserID    string
	WebhookID string
	Event     string
	URL       string
	Secret    string
	Body      json.RawMessage
	// Attempts made before this one.
	Attempts int
}

// Outcome is the result of one attempt. Next is when to try again; zero
// when the delivery is done (Delivered) or has failed for good.
type Outcome struct {
	At         time.Time
	Delivered  bool
	StatusCode int
	Error      string
	Next       time.Time
}

// ReadModel is the webhooks read model's store (projections/webhooks.go
// feeds it): the registrations, and the outbox of deliveries, enqueued in
// the transaction that advances the checkpoint, so a delivery is enqueued
// exactly once for each event after the registration, whatever restarts.
//
// Reset empties the registrations and the checkpoint but keeps the
// deliveries: a rebuild enqueues each delivery again by its id
// (DeliveryID), which changes nothing, instead of sending the history
// once more.
type ReadModel = domain.ReadModelStore[ReadModelTx]

// ReadModelTx changes the webhooks read model within one batch.
type ReadModelTx interface {
	Register(ctx context.Context, r Registered) error
	// Delete removes the webhook and its deliveries.
	Delete(ctx context.Context, userID, webhookID string) error
	// Subscribers lists the ids of the user's webhooks subscribed to event.
	Subscribers(ctx context.Context, userID, event string) ([]string, error)
	// Enqueue adds a pending delivery, due at once; one held already (by
	// id) changes nothing.
	Enqueue(ctx context.Context, d Enqueued) error
}

// Enqueued is a delivery as the projection enqueues it.
type Enqueued struct {
	ID        string
	UserID    string
	WebhookID string
	Event     string
	EventID   string
	Position  uint64
	Body      json.RawMessage
	CreatedAt time.Time
}

// Outbox is the deliveries' side of the read model that the dispatcher
// works: claims are held until a time, so several dispatchers over one
// shared store never attempt one delivery at once, and a dispatcher that
// died mid-attempt leaves a claim that expires.
type Outbox interface {
	// Claim takes up to limit pending deliveries due at now and not
	// claimed, oldest event first, and claims them until until.
	Claim(ctx context.Context, now, until time.Time, limit int) ([]Pending, error)
	// Record stores an attempt's outcome and releases the claim.
	Record(ctx context.Context, deliveryID string, o Outcome) error
	// Release gives a claim up without an attempt (the dispatcher is
	// stopping): the delivery is due again at once, here or elsewhere.
	Release(ctx context.Context, deliveryID string) error
}

// Status is the delivery's status after the outcome.
func (o Outcome) Status() Status {
	switch {
	case o.Delivered:
		return StatusDelivered
	case o.Next.IsZero():
		return StatusFailed
	default:
		return StatusPending
	}
}
