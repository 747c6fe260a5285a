package readmodeltest

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/webhook"
)

// Webhooks is a webhooks read model store with its outbox and the queries
// the API reads it by (commands.WebhookReadModel).
type Webhooks interface {
	webhook.ReadModel
	webhook.Outbox
	Webhooks(ctx context.Context, userID string) ([]webhook.View, error)
	Webhook(ctx context.Context, userID, webhookID string) (webhook.View, bool, error)
	Deliveries(ctx context.Context, q webhook.DeliveryQuery) (webhook.DeliveryPage, error)
	Export(ctx context.Context, w io.Writer) error
}

type webhookOp = op[webhook.ReadModelTx]

func registered(userID, webhookID string, events ...string) webhookOp {
	return func(ctx context.Context, tx webhook.ReadModelTx) error {
		return tx.Register(ctx, webhook.Registered{UserID: userID, WebhookID: webhookID, URL: "https://hooks.example.com/" + webhookID,
			Events: events, Secret: "whsec_" + webhookID, CreatedAt: t0})
	}
}

// enqueued enqueues the delivery of the event at position to the webhook.
func enqueued(userID, webhookID string, position uint64) webhookOp {
	return func(ctx context.Context, tx webhook.ReadModelTx) error {
		eventID := "event-" + strconv.FormatUint(position, 10)
		return tx.Enqueue(ctx, webhook.Enqueued{ID: webhook.DeliveryID(webhookID, eventID), UserID: userID, WebhookID: webhookID,
			Event: webhook.MemoryCreated, EventID: eventID, Position: position, Body: json.RawMessage(`{"event_id":"` + eventID + `"}`), CreatedAt: t0})
	}
}

// RunWebhooks runs the suite against the stores open returns.
func RunWebhooks(t *testing.T, open func(t *testing.T) Webhooks) {
	ctx := context.Background()
	t.Run("UnitOfWork", unitOfWork[webhook.ReadModelTx]{
		open: func(t *testing.T) domain.ReadModelStore[webhook.ReadModelTx] { return open(t) },
		put: func(ctx context.Context, tx webhook.ReadModelTx, i int) error {
			return registered("u1", id("w", i), webhook.MemoryCreated)(ctx, tx)
		},
		seen: func(t *testing.T, s domain.ReadModelStore[webhook.ReadModelTx], i int) bool {
			_, found, err := s.(Webhooks).Webhook(ctx, "u1", id("w", i))
			if err != nil {
				t.Fatal(err)
			}
			return found
		},
	}.run)

	t.Run("RegistrationsAndSubscribersAreTheUsersOwn", func(t *testing.T) {
		s := open(t)
		var subscribed []string
		mustApply(t, s, 1,
			registered("u1", "w1", webhook.MemoryCreated, webhook.KeyRevoked),
			registered("u1", "w2", webhook.MemoryForgotten),
			registered("u2", "w3", webhook.MemoryCreated),
			func(ctx context.Context, tx webhook.ReadModelTx) (err error) {
				subscribed, err = tx.Subscribers(ctx, "u1", webhook.MemoryCreated)
				return err
			})
		if !slices.Equal(subscribed, []string{"w1"}) {
			t.Fatalf("u1's subscribers to memory.created: %v, want [w1]", subscribed)
		}
		views, err := s.Webhooks(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		if len(views) != 2 || views[0].ID != "w1" || views[1].ID != "w2" || !slices.Equal(views[0].Events, []string{webhook.MemoryCreated, webhook.KeyRevoked}) ||
			views[0].URL != "https://hooks.example.com/w1" || !views[0].CreatedAt.Equal(t0) {
			t.Fatalf("u1's webhooks %+v", views)
		}
		if _, found, err := s.Webhook(ctx, "u2", "w1"); err != nil || found {
			t.Fatalf("u2 sees u1's webhook: %v %v", found, err)
		}
		if got, err := s.Webhooks(ctx, "u3"); err != nil || got == nil || len(got) != 0 {
			t.Fatalf("a user without webhooks: %v %v, want an empty list", got, err)
		}
	})

	t.Run("SubscribersFollowRegistrationsAndDeletesWithinABatch", func(t *testing.T) {
		s := open(t)
		var seen [][]string
		subscribers := func(ctx context.Context, tx webhook.ReadModelTx) error {
			ids, err := tx.Subscribers(ctx, "u1", webhook.MemoryCreated)
			seen = append(seen, ids)
			return err
		}
		mustApply(t, s, 1,
			subscribers,
			registered("u1", "w1", webhook.MemoryCreated),
			subscribers,
			registered("u1", "w2", webhook.MemoryCreated),
			subscribers,
			func(ctx context.Context, tx webhook.ReadModelTx) error { return tx.Delete(ctx, "u1", "w1") },
			subscribers)
		want := [][]string{nil, {"w1"}, {"w1", "w2"}, {"w2"}}
		if !slices.EqualFunc(seen, want, slices.Equal) {
			t.Fatalf("u1's subscribers as the batch went: %v, want %v", seen, want)
		}
	})

	t.Run("ClaimRecordRelease", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, registered("u1", "w1", webhook.MemoryCreated), enqueued("u1", "w1", 2), enqueued("u1", "w1", 3), enqueued("u1", "w1", 4))
		now := t0.Add(time.Second)
		claimed := mustClaim(t, s, now, now.Add(time.Minute), 2)
		if len(claimed) != 2 || claimed[0].ID != "w1.event-2" || claimed[1].ID != "w1.event-3" {
			t.Fatalf("claimed %+v, want the two oldest", claimed)
		}
		if p := claimed[0]; p.URL != "https://hooks.example.com/w1" || p.Secret != "whsec_w1" || p.UserID != "u1" || p.WebhookID != "w1" ||
			p.Event != webhook.MemoryCreated || string(p.Body) != `{"event_id":"event-2"}` || p.Attempts != 0 {
			t.Fatalf("claimed %+v", p)
		}
		if again := mustClaim(t, s, now, now.Add(time.Minute), 10); len(again) != 1 || again[0].ID != "w1.event-4" {
			t.Fatalf("a second claim got %+v, want only the one not claimed", again)
		}
		if err := s.Record(ctx, "w1.event-2", webhook.Outcome{At: now, Delivered: true, StatusCode: 204}); err != nil {
			t.Fatal(err)
		}
		retryAt := now.Add(10 * time.Second)
		if err := s.Record(ctx, "w1.event-3", webhook.Outcome{At: now, StatusCode: 500, Error: "receiver answered 500", Next: retryAt}); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, "w1.event-4"); err != nil {
			t.Fatal(err)
		}
		if got := mustClaim(t, s, now, now.Add(time.Minute), 10); len(got) != 1 || got[0].ID != "w1.event-4" {
			t.Fatalf("after the outcomes: %+v, want the released one only (the failed one waits for its retry)", got)
		}
		if got := mustClaim(t, s, retryAt, retryAt.Add(time.Minute), 10); len(got) != 1 || got[0].ID != "w1.event-3" || got[0].Attempts != 1 {
			t.Fatalf("at the retry: %+v, want the failed one with one attempt", got)
		}
		// A claim not recorded expires: another dispatcher takes it then.
		if got := mustClaim(t, s, now.Add(2*time.Minute), now.Add(3*time.Minute), 10); len(got) != 2 {
			t.Fatalf("after the claims expired: %+v, want both pending ones", got)
		}
		if err := s.Record(ctx, "w1.event-3", webhook.Outcome{At: retryAt, StatusCode: 500, Error: "receiver answered 500"}); err != nil {
			t.Fatal(err)
		}
		page, err := s.Deliveries(ctx, webhook.DeliveryQuery{UserID: "u1", WebhookID: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]webhook.Delivery{}
		for _, d := range page.Deliveries {
			byID[d.ID] = d
		}
		if d := byID["w1.event-2"]; d.Status != webhook.StatusDelivered || d.Attempts != 1 || d.LastStatusCode != 204 || d.DeliveredAt == nil || !d.DeliveredAt.Equal(now) || d.NextAttemptAt != nil {
			t.Fatalf("delivered: %+v", d)
		}
		if d := byID["w1.event-3"]; d.Status != webhook.StatusFailed || d.Attempts != 2 || d.LastStatusCode != 500 || d.LastError != "receiver answered 500" || d.NextAttemptAt != nil || d.DeliveredAt != nil {
			t.Fatalf("failed: %+v", d)
		}
		if d := byID["w1.event-4"]; d.Status != webhook.StatusPending || d.Attempts != 0 || d.NextAttemptAt == nil || d.Position != 4 || d.EventID != "event-4" {
			t.Fatalf("pending: %+v", d)
		}
		// An outcome for a delivery that is no longer pending changes nothing.
		if err := s.Record(ctx, "w1.event-2", webhook.Outcome{At: now, StatusCode: 500, Next: retryAt}); err != nil {
			t.Fatal(err)
		}
		if got := mustClaim(t, s, retryAt.Add(time.Hour), retryAt.Add(2*time.Hour), 10); len(got) != 1 || got[0].ID != "w1.event-4" {
			t.Fatalf("a delivered delivery came back: %+v", got)
		}
	})

	t.Run("EnqueueIsIdempotentAndAResetKeepsTheDeliveries", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, registered("u1", "w1", webhook.MemoryCreated), enqueued("u1", "w1", 2), enqueued("u1", "w1", 2))
		if err := s.Record(ctx, "w1.event-2", webhook.Outcome{At: t0, Delivered: true, StatusCode: 200}); err != nil {
			t.Fatal(err)
		}
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if pos, err := s.Checkpoint(ctx); err != nil || pos != 0 {
			t.Fatalf("checkpoint after reset: %d %v", pos, err)
		}
		if views, err := s.Webhooks(ctx, "u1"); err != nil || len(views) != 0 {
			t.Fatalf("webhooks after reset: %v %v", views, err)
		}
		// The rebuild enqueues the delivery again: it stays delivered.
		mustApply(t, s, 1, registered("u1", "w1", webhook.MemoryCreated), enqueued("u1", "w1", 2))
		page, err := s.Deliveries(ctx, webhook.DeliveryQuery{UserID: "u1", WebhookID: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Deliveries) != 1 || page.Deliveries[0].Status != webhook.StatusDelivered {
			t.Fatalf("after the rebuild: %+v, want the one delivery, delivered", page.Deliveries)
		}
		if got := mustClaim(t, s, t0.Add(time.Hour), t0.Add(2*time.Hour), 10); len(got) != 0 {
			t.Fatalf("the rebuild made %+v due again", got)
		}
	})

	t.Run("DeleteDropsTheDeliveries", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, registered("u1", "w1", webhook.MemoryCreated), registered("u2", "w2", webhook.MemoryCreated),
			enqueued("u1", "w1", 3), enqueued("u2", "w2", 4),
			func(ctx context.Context, tx webhook.ReadModelTx) error { return tx.Delete(ctx, "u2", "w1") }, // another user's: nothing
			func(ctx context.Context, tx webhook.ReadModelTx) error { return tx.Delete(ctx, "u1", "w1") })
		if _, found, err := s.Webhook(ctx, "u1", "w1"); err != nil || found {
			t.Fatalf("deleted webhook found: %v %v", found, err)
		}
		got := mustClaim(t, s, t0.Add(time.Second), t0.Add(time.Minute), 10)
		if len(got) != 1 || got[0].ID != "w2.event-4" {
			t.Fatalf("claimable after the delete: %+v, want only u2's", got)
		}
	})

	t.Run("DeliveriesPageNewestFirst", func(t *testing.T) {
		s := open(t)
		ops := []webhookOp{registered("u1", "w1", webhook.MemoryCreated)}
		for pos := uint64(2); pos <= 6; pos++ {
			ops = append(ops, enqueued("u1", "w1", pos))
		}
		mustApply(t, s, 1, ops...)
		var positions []uint64
		q := webhook.DeliveryQuery{UserID: "u1", WebhookID: "w1", Limit: 2}
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("pages do not end")
			}
			page, err := s.Deliveries(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range page.Deliveries {
				positions = append(positions, d.Position)
			}
			if page.NextCursor == "" {
				break
			}
			q.Cursor = page.NextCursor
		}
		if !slices.Equal(positions, []uint64{6, 5, 4, 3, 2}) {
			t.Fatalf("positions %v, want 6 down to 2", positions)
		}
		if page, err := s.Deliveries(ctx, webhook.DeliveryQuery{UserID: "u2", WebhookID: "w1"}); err != nil || len(page.Deliveries) != 0 {
			t.Fatalf("another user's deliveries: %+v %v", page, err)
		}
		if _, err := s.Deliveries(ctx, webhook.DeliveryQuery{UserID: "u1", WebhookID: "w1", Cursor: "x"}); domain.ErrorKind(err) != domain.KindInvalid {
			t.Fatalf("a bad cursor: %v, want invalid", err)
		}
	})

	t.Run("ConcurrentClaimsNeverShareADelivery", func(t *testing.T) {
		s := open(t)
		ops := []webhookOp{registered("u1", "w1", webhook.MemoryCreated)}
		const deliveries = 40
		for pos := uint64(2); pos < 2+deliveries; pos++ {
			ops = append(ops, enqueued("u1", "w1", pos))
		}
		mustApply(t, s, 1, ops...)
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					got, err := s.Claim(ctx, t0.Add(time.Second), t0.Add(time.Minute), 3)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, p := range got {
						seen[p.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != deliveries {
			t.Fatalf("claimed %d deliveries, want %d", len(seen), deliveries)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("%s claimed %d times", id, n)
			}
		}
	})
}

func mustClaim(t *testing.T, s Webhooks, now, until time.Time, limit int) []webhook.Pending {
	t.Helper()
	got, err := s.Claim(context.Background(), now, until, limit)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
