package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/webhook"
)

// Webhooks is the webhooks read model (webhook.ReadModel) with its outbox
// (webhook.Outbox) in PostgreSQL, shared by every node. Its reset and
// export cover the registrations only: the deliveries record attempts,
// which no replay reproduces.
type Webhooks struct {
	tableModel
}

var (
	_ webhook.ReadModel = (*Webhooks)(nil)
	_ webhook.Outbox    = (*Webhooks)(nil)
)

// NewWebhooks returns the webhooks read model stored in db.
func NewWebhooks(db *DB) *Webhooks {
	return &Webhooks{tableModel{db: db, name: "webhooks", tables: []string{"webhooks"}}}
}

// Apply implements webhook.ReadModel.
func (s *Webhooks) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, webhook.ReadModelTx, domain.Event) error) error {
	return applyBatch(ctx, s.db, s.name, events, func(b batchTx) webhook.ReadModelTx {
		return &webhooksTx{batchTx: b, registrations: map[string][]registration{}}
	}, apply)
}

// webhooksTx is webhook.ReadModelTx over one batch's transaction.
type webhooksTx struct {
	batchTx
	// registrations caches, within the batch, each user's webhooks that
	// Subscribers read: every notifying event asks, and each read would
	// cost a round trip, after sending the writes queued before it (an
	// import of 10,000 memories asks 20,000 times). Only Register and
	// Delete change them, which drop their user's entry.
	registrations map[string][]registration
}

// registration is one webhook with the events it subscribes to.
type registration struct {
	webhookID string
	events    []string
}

func (t *webhooksTx) Register(ctx context.Context, r webhook.Registered) error {
	events, err := json.Marshal(r.Events)
	if err != nil {
		return err
	}
	delete(t.registrations, r.UserID)
	return t.run(ctx, `INSERT INTO webhooks (webhook_id, user_id, url, events, secret, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
		r.WebhookID, r.UserID, r.URL, string(events), r.Secret, r.CreatedAt.UTC())
}

func (t *webhooksTx) Delete(ctx context.Context, userID, webhookID string) error {
	delete(t.registrations, userID)
	if err := t.run(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND user_id = $2`, webhookID, userID); err != nil {
		return err
	}
	return t.run(ctx, `DELETE FROM webhooks WHERE webhook_id = $1 AND user_id = $2`, webhookID, userID)
}

func (t *webhooksTx) Subscribers(ctx context.Context, userID, event string) ([]string, error) {
	regs, known := t.registrations[userID]
	if !known {
		var err error
		if regs, err = t.registrationsOf(ctx, userID); err != nil {
			return nil, err
		}
		t.registrations[userID] = regs
	}
	var ids []string
	for _, r := range regs {
		if slices.Contains(r.events, event) {
			ids = append(ids, r.webhookID)
		}
	}
	return ids, nil
}

// registrationsOf reads the user's webhooks in id order.
func (t *webhooksTx) registrationsOf(ctx context.Context, userID string) ([]registration, error) {
	rows, err := t.query(ctx, `SELECT webhook_id, events FROM webhooks WHERE user_id = $1 ORDER BY webhook_id`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var regs []registration
	for rows.Next() {
		var r registration
		var events string
		if err := rows.Scan(&r.webhookID, &events); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(events), &r.events); err != nil {
			return nil, fmt.Errorf("postgres: webhook %s events: %w", r.webhookID, err)
		}
		regs = append(regs, r)
	}
	return regs, rows.Err()
}

func (t *webhooksTx) Enqueue(ctx context.Context, d webhook.Enqueued) error {
	return t.run(ctx, `INSERT INTO webhook_deliveries (delivery_id, webhook_id, user_id, event, event_id, position, body, status, created_at, next_attempt_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) ON CONFLICT DO NOTHING`,
		d.ID, d.WebhookID, d.UserID, d.Event, d.EventID, int64(d.Position), string(d.Body), string(webhook.StatusPending), d.CreatedAt.UTC())
}

// Webhooks lists the user's webhooks, oldest first.
func (s *Webhooks) Webhooks(ctx context.Context, userID string) ([]webhook.View, error) {
	return s.views(ctx, `SELECT webhook_id, url, events, created_at FROM webhooks WHERE user_id = $1 ORDER BY created_at, webhook_id`, userID)
}

// Webhook returns one of the user's webhooks (found is false for another
// user's).
func (s *Webhooks) Webhook(ctx context.Context, userID, webhookID string) (webhook.View, bool, error) {
	views, err := s.views(ctx, `SELECT webhook_id, url, events, created_at FROM webhooks WHERE user_id = $1 AND webhook_id = $2`, userID, webhookID)
	if err != nil || len(views) == 0 {
		return webhook.View{}, false, err
	}
	return views[0], true, nil
}

func (s *Webhooks) views(ctx context.Context, query string, args ...any) ([]webhook.View, error) {
	rows, err := s.db.Pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: webhooks: %w", err)
	}
	defer rows.Close()
	views := []webhook.View{}
	for rows.Next() {
		var v webhook.View
		var events string
		if err := rows.Scan(&v.ID, &v.URL, &events, &v.CreatedAt); err != nil {
			return nil, fmt.Errorf("postgres: webhooks: %w", err)
		}
		if err := json.Unmarshal([]byte(events), &v.Events); err != nil {
			return nil, fmt.Errorf("postgres: webhook %s events: %w", v.ID, err)
		}
		v.CreatedAt = v.CreatedAt.UTC()
		views = append(views, v)
	}
	return views, rows.Err()
}

// Deliveries returns a page of one of the user's webhooks' deliveries,
// newest event first; the cursor is the log position of the last one of
// the previous page.
func (s *Webhooks) Deliveries(ctx context.Context, q webhook.DeliveryQuery) (webhook.DeliveryPage, error) {
	limit, before, err := q.Bounds()
	if err != nil {
		return webhook.DeliveryPage{}, err
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT delivery_id, webhook_id, event, event_id, position, status, attempts, created_at, next_attempt_at, last_status_code, last_error, delivered_at
		FROM webhook_deliveries WHERE webhook_id = $1 AND user_id = $2 AND position < $3 ORDER BY position DESC LIMIT $4`, q.WebhookID, q.UserID, before, limit+1)
	if err != nil {
		return webhook.DeliveryPage{}, fmt.Errorf("postgres: webhook deliveries: %w", err)
	}
	defer rows.Close()
	page := webhook.DeliveryPage{Deliveries: []webhook.Delivery{}}
	for rows.Next() {
		var d webhook.Delivery
		var position int64
		var status string
		if err := rows.Scan(&d.ID, &d.WebhookID, &d.Event, &d.EventID, &position, &status, &d.Attempts, &d.CreatedAt, &d.NextAttemptAt, &d.LastStatusCode, &d.LastError, &d.DeliveredAt); err != nil {
			return webhook.DeliveryPage{}, fmt.Errorf("postgres: webhook deliveries: %w", err)
		}
		d.Position, d.Status, d.CreatedAt = uint64(position), webhook.Status(status), d.CreatedAt.UTC()
		d.NextAttemptAt, d.DeliveredAt = utcOrNil(d.NextAttemptAt), utcOrNil(d.DeliveredAt)
		page.Deliveries = append(page.Deliveries, d)
	}
	if err := rows.Err(); err != nil {
		return webhook.DeliveryPage{}, fmt.Errorf("postgres: webhook deliveries: %w", err)
	}
	if len(page.Deliveries) > limit {
		page.Deliveries = page.Deliveries[:limit]
		page.NextCursor = strconv.FormatUint(page.Deliveries[limit-1].Position, 10)
	}
	return page, nil
}

// Claim implements webhook.Outbox: SKIP LOCKED lets dispatchers on several
// nodes claim at once without waiting for each other.
func (s *Webhooks) Claim(ctx context.Context, now, until time.Time, limit int) ([]webhook.Pending, error) {
	rows, err := s.db.Pool.Query(ctx, `WITH due AS (
			SELECT delivery_id FROM webhook_deliveries
			WHERE status = 'pending' AND next_attempt_at <= $1 AND claimed_until <= $1
			ORDER BY next_attempt_at, position LIMIT $3 FOR UPDATE SKIP LOCKED),
		claimed AS (
			UPDATE webhook_deliveries d SET claimed_until = $2 FROM due WHERE d.delivery_id = due.delivery_id
			RETURNING d.delivery_id, d.user_id, d.webhook_id, d.event, d.body, d.attempts, d.next_attempt_at, d.position)
		SELECT c.delivery_id, c.user_id, c.webhook_id, c.event, w.url, w.secret, c.body, c.attempts
		FROM claimed c JOIN webhooks w ON w.webhook_id = c.webhook_id ORDER BY c.next_attempt_at, c.position`,
		now.UTC(), until.UTC(), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim webhook deliveries: %w", err)
	}
	claimed, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (webhook.Pending, error) {
		var p webhook.Pending
		var body string
		err := row.Scan(&p.ID, &p.UserID, &p.WebhookID, &p.Event, &p.URL, &p.Secret, &body, &p.Attempts)
		p.Body = json.RawMessage(body)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: claim webhook deliveries: %w", err)
	}
	return claimed, nil
}

// Record implements webhook.Outbox.
func (s *Webhooks) Record(ctx context.Context, deliveryID string, o webhook.Outcome) error {
	var next, delivered *time.Time
	if !o.Next.IsZero() {
		n := o.Next.UTC()
		next = &n
	}
	if o.Delivered {
		at := o.At.UTC()
		delivered = &at
	}
	_, err := s.db.Pool.Exec(ctx, `UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, next_attempt_at = $2, claimed_until = '-infinity',
		last_status_code = $3, last_error = $4, delivered_at = $5 WHERE delivery_id = $6 AND status = 'pending'`,
		string(o.Status()), next, o.StatusCode, o.Error, delivered, deliveryID)
	if err != nil {
		return fmt.Errorf("postgres: record webhook delivery %s: %w", deliveryID, err)
	}
	return nil
}

// Release implements webhook.Outbox.
func (s *Webhooks) Release(ctx context.Context, deliveryID string) error {
	if _, err := s.db.Pool.Exec(ctx, `UPDATE webhook_deliveries SET claimed_until = '-infinity' WHERE delivery_id = $1 AND status = 'pending'`, deliveryID); err != nil {
		return fmt.Errorf("postgres: release webhook delivery %s: %w", deliveryID, err)
	}
	return nil
}
