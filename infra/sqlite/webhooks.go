package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/webhook"
)

// webhooksCheckpoint keys the webhooks read model's checkpoint.
const webhooksCheckpoint = "webhooks"

// Webhooks is the webhooks read model (webhook.ReadModel) with its outbox
// (webhook.Outbox). Its reset and export cover the registrations only:
// the deliveries record attempts, which no replay reproduces.
type Webhooks struct {
	tableModel
}

var (
	_ webhook.ReadModel = (*Webhooks)(nil)
	_ webhook.Outbox    = (*Webhooks)(nil)
)

// webhookTables are the tables a reset empties and an export writes: the
// registrations, not the outbox.
func webhookTables() []exportTable {
	return []exportTable{{name: "webhooks", orderBy: "webhook_id"}}
}

// NewWebhooks returns the webhooks read model stored in db.
func NewWebhooks(db *DB) *Webhooks {
	return &Webhooks{tableModel{db: db, name: webhooksCheckpoint, tables: webhookTables()}}
}

// Apply implements webhook.ReadModel.
func (s *Webhooks) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, webhook.ReadModelTx, domain.Event) error) error {
	return applyBatch(ctx, s.db, webhooksCheckpoint, events, func(b *batchTx) webhook.ReadModelTx {
		return &webhooksTx{batchTx: b, registrations: map[string][]registration{}}
	}, apply, nil)
}

// webhooksTx is webhook.ReadModelTx over one batch's transaction.
type webhooksTx struct {
	*batchTx
	// registrations caches, within the batch, each user's webhooks that
	// Subscribers read: every notifying event asks (an import of 10,000
	// memories asks 20,000 times), and only Register and Delete change
	// them, which drop their user's entry.
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
	return t.run(`INSERT INTO webhooks (webhook_id, user_id, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		r.WebhookID, r.UserID, r.URL, string(events), r.Secret, dbTime(r.CreatedAt))
}

func (t *webhooksTx) Delete(ctx context.Context, userID, webhookID string) error {
	delete(t.registrations, userID)
	if err := t.run(`DELETE FROM webhook_deliveries WHERE webhook_id = ? AND user_id = ?`, webhookID, userID); err != nil {
		return err
	}
	return t.run(`DELETE FROM webhooks WHERE webhook_id = ? AND user_id = ?`, webhookID, userID)
}

func (t *webhooksTx) Subscribers(ctx context.Context, userID, event string) ([]string, error) {
	regs, known := t.registrations[userID]
	if !known {
		var err error
		if regs, err = t.registrationsOf(userID); err != nil {
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
func (t *webhooksTx) registrationsOf(userID string) ([]registration, error) {
	st, err := t.stmt(`SELECT webhook_id, events FROM webhooks WHERE user_id = ? ORDER BY webhook_id`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(t.ctx, userID)
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
			return nil, fmt.Errorf("sqlite: webhook %s events: %w", r.webhookID, err)
		}
		regs = append(regs, r)
	}
	return regs, rows.Err()
}

func (t *webhooksTx) Enqueue(ctx context.Context, d webhook.Enqueued) error {
	return t.run(`INSERT INTO webhook_deliveries (delivery_id, webhook_id, user_id, event, event_id, position, body, status, created_at, next_attempt_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		d.ID, d.WebhookID, d.UserID, d.Event, d.EventID, d.Position, string(d.Body), webhook.StatusPending, dbTime(d.CreatedAt), dbTime(d.CreatedAt))
}

// Webhooks lists the user's webhooks, oldest first.
func (s *Webhooks) Webhooks(ctx context.Context, userID string) ([]webhook.View, error) {
	return s.views(ctx, `SELECT webhook_id, url, events, created_at FROM webhooks WHERE user_id = ? ORDER BY created_at, webhook_id`, userID)
}

// Webhook returns one of the user's webhooks (found is false for another
// user's).
func (s *Webhooks) Webhook(ctx context.Context, userID, webhookID string) (webhook.View, bool, error) {
	views, err := s.views(ctx, `SELECT webhook_id, url, events, created_at FROM webhooks WHERE user_id = ? AND webhook_id = ?`, userID, webhookID)
	if err != nil || len(views) == 0 {
		return webhook.View{}, false, err
	}
	return views[0], true, nil
}

func (s *Webhooks) views(ctx context.Context, query string, args ...any) ([]webhook.View, error) {
	rows, err := s.db.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: webhooks: %w", err)
	}
	defer rows.Close()
	views := []webhook.View{}
	for rows.Next() {
		var v webhook.View
		var events string
		var created sql.NullString
		if err := rows.Scan(&v.ID, &v.URL, &events, &created); err != nil {
			return nil, fmt.Errorf("sqlite: webhooks: %w", err)
		}
		if err := json.Unmarshal([]byte(events), &v.Events); err != nil {
			return nil, fmt.Errorf("sqlite: webhook %s events: %w", v.ID, err)
		}
		if v.CreatedAt, err = parseDBTime(created); err != nil {
			return nil, err
		}
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
	rows, err := s.db.read.QueryContext(ctx, `SELECT delivery_id, webhook_id, event, event_id, position, status, attempts, created_at, next_attempt_at, last_status_code, last_error, delivered_at
		FROM webhook_deliveries WHERE webhook_id = ? AND user_id = ? AND position < ? ORDER BY position DESC LIMIT ?`, q.WebhookID, q.UserID, before, limit+1)
	if err != nil {
		return webhook.DeliveryPage{}, fmt.Errorf("sqlite: webhook deliveries: %w", err)
	}
	defer rows.Close()
	page := webhook.DeliveryPage{Deliveries: []webhook.Delivery{}}
	for rows.Next() {
		var d webhook.Delivery
		var created, next, delivered sql.NullString
		if err := rows.Scan(&d.ID, &d.WebhookID, &d.Event, &d.EventID, &d.Position, &d.Status, &d.Attempts, &created, &next, &d.LastStatusCode, &d.LastError, &delivered); err != nil {
			return webhook.DeliveryPage{}, fmt.Errorf("sqlite: webhook deliveries: %w", err)
		}
		if d.CreatedAt, err = parseDBTime(created); err != nil {
			return webhook.DeliveryPage{}, err
		}
		if d.NextAttemptAt, err = optionalDBTime(next); err != nil {
			return webhook.DeliveryPage{}, err
		}
		if d.DeliveredAt, err = optionalDBTime(delivered); err != nil {
			return webhook.DeliveryPage{}, err
		}
		page.Deliveries = append(page.Deliveries, d)
	}
	if err := rows.Err(); err != nil {
		return webhook.DeliveryPage{}, fmt.Errorf("sqlite: webhook deliveries: %w", err)
	}
	if len(page.Deliveries) > limit {
		page.Deliveries = page.Deliveries[:limit]
		page.NextCursor = strconv.FormatUint(page.Deliveries[limit-1].Position, 10)
	}
	return page, nil
}

func optionalDBTime(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseDBTime(s)
	return &t, err
}

// Claim implements webhook.Outbox.
func (s *Webhooks) Claim(ctx context.Context, now, until time.Time, limit int) ([]webhook.Pending, error) {
	// Polls find nothing due most of the time: a read says so without
	// taking the database's one writer.
	var due int
	err := s.db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries
		WHERE status = 'pending' AND next_attempt_at <= ? AND claimed_until <= ? LIMIT 1)`, dbTime(now), dbTime(now)).Scan(&due)
	if err != nil || due == 0 {
		return nil, err
	}
	var claimed []webhook.Pending
	err = s.db.WriteTx(ctx, func(tx *sql.Tx) error {
		claimed = claimed[:0]
		rows, err := tx.QueryContext(ctx, `SELECT d.delivery_id, d.user_id, d.webhook_id, d.event, w.url, w.secret, d.body, d.attempts
			FROM webhook_deliveries d JOIN webhooks w ON w.webhook_id = d.webhook_id
			WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND d.claimed_until <= ?
			ORDER BY d.next_attempt_at, d.position LIMIT ?`, dbTime(now), dbTime(now), limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var p webhook.Pending
			var body string
			if err := rows.Scan(&p.ID, &p.UserID, &p.WebhookID, &p.Event, &p.URL, &p.Secret, &body, &p.Attempts); err != nil {
				rows.Close()
				return err
			}
			p.Body = json.RawMessage(body)
			claimed = append(claimed, p)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for _, p := range claimed {
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET claimed_until = ? WHERE delivery_id = ?`, dbTime(until), p.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim webhook deliveries: %w", err)
	}
	return claimed, nil
}

// Record implements webhook.Outbox.
func (s *Webhooks) Record(ctx context.Context, deliveryID string, o webhook.Outcome) error {
	var delivered time.Time
	if o.Delivered {
		delivered = o.At
	}
	err := s.db.WriteTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, next_attempt_at = ?, claimed_until = '',
			last_status_code = ?, last_error = ?, delivered_at = ? WHERE delivery_id = ? AND status = 'pending'`,
			o.Status(), nullableDBTime(o.Next), o.StatusCode, o.Error, nullableDBTime(delivered), deliveryID)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: record webhook delivery %s: %w", deliveryID, err)
	}
	return nil
}

// Release implements webhook.Outbox.
func (s *Webhooks) Release(ctx context.Context, deliveryID string) error {
	err := s.db.WriteTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET claimed_until = '' WHERE delivery_id = ? AND status = 'pending'`, deliveryID)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: release webhook delivery %s: %w", deliveryID, err)
	}
	return nil
}

func nullableDBTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return dbTime(t)
}
