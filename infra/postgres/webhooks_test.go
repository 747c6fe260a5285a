package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/webhook"
	"github.com/engram-memory/engram/infra/postgres"
)

// queryCounter counts the queries whose text contains match (a pgx
// tracer on the pool's connections).
type queryCounter struct {
	match string
	n     atomic.Int64
}

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, c.match) {
		c.n.Add(1)
	}
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// openTracedDB opens a second pool on a fresh database's schema whose
// connections report their queries to tracer.
func openTracedDB(t *testing.T, tracer pgx.QueryTracer) *postgres.DB {
	t.Helper()
	ctx := context.Background()
	var schema string
	if err := openDB(t).Pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(withSearchPath(t, pg.URL(t), schema))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &postgres.DB{Pool: pool}
}

// A batch reads a user's registrations once, however many of its events
// ask who subscribes (each read used to cost a round trip per event), and
// again only after a registration or a delete of that user changed them.
func TestWebhooksReadAUsersRegistrationsOncePerBatch(t *testing.T) {
	cases := []struct {
		name string
		// between is applied to the user in the middle of the batch.
		between   func(ctx context.Context, tx webhook.ReadModelTx, userID string) error
		wantReads int64
	}{
		{name: "registrations unchanged", wantReads: 2},
		{name: "a registration in the middle", wantReads: 4, between: func(ctx context.Context, tx webhook.ReadModelTx, userID string) error {
			return tx.Register(ctx, webhook.Registered{UserID: userID, WebhookID: userID + "-w2", URL: "https://hooks.example.com/w2", Events: []string{webhook.MemoryCreated}, Secret: "whsec_w2", CreatedAt: t0})
		}},
		{name: "a delete in the middle", wantReads: 4, between: func(ctx context.Context, tx webhook.ReadModelTx, userID string) error {
			return tx.Delete(ctx, userID, userID+"-w1")
		}},
	}
	// One store for every case (a database costs its migrations): each
	// case has users of its own, and a batch after the previous one's.
	reads := &queryCounter{match: "FROM webhooks WHERE user_id"}
	s := postgres.NewWebhooks(openTracedDB(t, reads))
	const perUser = 100
	for n, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			reads.n.Store(0)
			users := []string{fmt.Sprintf("c%d-u1", n), fmt.Sprintf("c%d-u2", n)}
			start := uint64(n * 2 * perUser)
			var events []domain.Event
			for i := range 2 * perUser {
				events = append(events, domain.Event{Position: start + uint64(i+1), ID: fmt.Sprintf("e%d", start+uint64(i+1)), Type: "MemoryCreated"})
			}
			err := s.Apply(ctx, events, func(ctx context.Context, tx webhook.ReadModelTx, e domain.Event) error {
				i := e.Position - start
				user := users[i%2]
				if i <= 2 {
					if err := tx.Register(ctx, webhook.Registered{UserID: user, WebhookID: user + "-w1", URL: "https://hooks.example.com/w1", Events: []string{webhook.MemoryCreated}, Secret: "whsec_w1", CreatedAt: t0}); err != nil {
						return err
					}
				}
				if i == perUser+1 || i == perUser+2 {
					if c.between != nil {
						if err := c.between(ctx, tx, user); err != nil {
							return err
						}
					}
				}
				ids, err := tx.Subscribers(ctx, user, webhook.MemoryCreated)
				if err != nil {
					return err
				}
				for _, id := range ids {
					if err := tx.Enqueue(ctx, webhook.Enqueued{ID: webhook.DeliveryID(id, e.ID), UserID: user, WebhookID: id, Event: webhook.MemoryCreated, EventID: e.ID, Position: e.Position, Body: []byte(`{}`), CreatedAt: t0}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := reads.n.Load(); got != c.wantReads {
				t.Errorf("a batch of %d events of %d users read their registrations %d times, want %d", len(events), len(users), got, c.wantReads)
			}
		})
	}
}
