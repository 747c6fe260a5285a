package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/webhook"
	"github.com/engram-memory/engram/internal/workers"
)

// receiver is a webhook receiver on loopback: it records every request
// and answers with the status its script gives for the n-th one (200
// once the script runs out).
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	script   []int
	received []received
	arrived  chan struct{}
}

type received struct {
	at     time.Time
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, script ...int) *receiver {
	t.Helper()
	rc := &receiver{script: script, arrived: make(chan struct{}, 1000)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		status := http.StatusOK
		if n := len(rc.received); n < len(rc.script) {
			status = rc.script[n]
		}
		rc.received = append(rc.received, received{at: time.Now(), header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		rc.arrived <- struct{}{}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// answer replaces the script: status for every request from now on.
func (rc *receiver) answer(status int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.script = make([]int, len(rc.received)+1000)
	for i := range rc.script {
		rc.script[i] = status
	}
}

// wait returns the requests once n have arrived.
func (rc *receiver) wait(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		rc.mu.Lock()
		got := append([]received(nil), rc.received...)
		rc.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-rc.arrived:
		case <-deadline:
			t.Fatalf("receiver got %d requests, want %d", len(got), n)
		}
	}
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.received)
}

// fastWebhooks runs the dispatcher with quick polls and backoff.
func fastWebhooks(maxAttempts int, backoff time.Duration) workers.WebhookDispatcherConfig {
	return workers.WebhookDispatcherConfig{PollInterval: 10 * time.Millisecond, Backoff: backoff, MaxBackoff: 10 * backoff, MaxAttempts: maxAttempts, AttemptTimeout: 5 * time.Second}
}

type webhookCreated struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	Secret    string   `json:"secret"`
	CreatedAt string   `json:"created_at"`
}

func (s *stack) createWebhook(t *testing.T, bearer, url string, events ...string) webhookCreated {
	t.Helper()
	var c webhookCreated
	s.request(t, "POST", "/v1/webhooks", bearer, map[string]any{"url": url, "events": events}).must(t, http.StatusCreated, &c)
	return c
}

type deliveryJSON struct {
	ID             string  `json:"id"`
	Event          string  `json:"event"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	LastStatusCode int     `json:"last_status_code"`
	DeliveredAt    *string `json:"delivered_at"`
}

type deliveryPage struct {
	Deliveries []deliveryJSON `json:"deliveries"`
	NextCursor *string        `json:"next_cursor"`
}

func (s *stack) deliveries(t *testing.T, bearer, webhookID string) []deliveryJSON {
	t.Helper()
	var page deliveryPage
	s.request(t, "GET", "/v1/webhooks/"+webhookID+"/deliveries", bearer, nil).must(t, http.StatusOK, &page)
	return page.Deliveries
}

// waitDeliveries polls the delivery log until cond holds.
func (s *stack) waitDeliveries(t *testing.T, bearer, webhookID string, cond func([]deliveryJSON) bool) []deliveryJSON {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ds := s.deliveries(t, bearer, webhookID)
		if cond(ds) {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery log never met the condition: %+v", ds)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// verifiedBody checks a request's signature with secret and decodes it.
func verifiedBody(t *testing.T, r received, secret string) webhook.Body {
	t.Helper()
	ts, err := strconv.ParseInt(r.header.Get(webhook.TimestampHeader), 10, 64)
	if err != nil {
		t.Fatalf("%s header: %v", webhook.TimestampHeader, err)
	}
	if d := time.Since(time.Unix(ts, 0)); d < -time.Minute || d > time.Minute {
		t.Fatalf("timestamp %d is %s off", ts, d)
	}
	if !webhook.Verify(secret, ts, r.body, r.header.Get(webhook.SignatureHeader)) {
		t.Fatalf("signature %q does not verify over %s", r.header.Get(webhook.SignatureHeader), r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
	var b webhook.Body
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatal(err)
	}
	if r.header.Get(webhook.DeliveryHeader) != b.DeliveryID || r.header.Get(webhook.EventHeader) != b.Event {
		t.Fatalf("headers %v do not match body %s", r.header, r.body)
	}
	return b
}

func TestWebhooksDeliverSignedEventsToTheirOwnersOnly(t *testing.T) {
	t.Parallel()
	for _, backend := range []struct {
		name     string
		postgres bool
	}{{"sqlite", false}, {"postgres", true}} {
		t.Run(backend.name, func(t *testing.T) { deliverToOwnersOnly(t, backend.postgres) })
	}
}

func deliverToOwnersOnly(t *testing.T, postgres bool) {
	s := newStack(t, stackOptions{postgres: postgres, webhooks: fastWebhooks(3, 20*time.Millisecond)})
	_, keyA := s.user(t, "alice@example.com")
	_, keyB := s.user(t, "bob@example.com")
	recvA, recvB := newReceiver(t), newReceiver(t)
	hookA := s.createWebhook(t, keyA, recvA.srv.URL+"/hooks", "memory.created", "memory.updated", "memory.forgotten", "key.revoked")
	hookB := s.createWebhook(t, keyB, recvB.srv.URL, "memory.created")
	if !strings.HasPrefix(hookA.Secret, "whsec_") || hookA.Secret == hookB.Secret {
		t.Fatalf("secrets %q and %q", hookA.Secret, hookB.Secret)
	}

	note := s.create(t, keyA, "a", "note", map[string]any{"content": "a note"})
	s.must(http.StatusOK, "PATCH", "/v1/memories/"+note.ID, keyA, map[string]any{"tags": []string{"x"}})
	s.must(http.StatusOK, "DELETE", "/v1/memories/"+note.ID, keyA, nil)
	keyID, _ := s.createKey(keyA, "spare")
	s.must(http.StatusOK, "DELETE", "/v1/auth/keys/"+keyID, keyA, nil)
	bobs := s.create(t, keyB, "b", "note", map[string]any{"content": "bob's note"})

	gotA := recvA.wait(t, 4)
	var events []string
	for _, r := range gotA {
		b := verifiedBody(t, r, hookA.Secret)
		if b.WebhookID != hookA.ID {
			t.Fatalf("alice's receiver got webhook %s's delivery", b.WebhookID)
		}
		events = append(events, b.Event)
		switch b.Event {
		case webhook.KeyRevoked:
			if b.Data["key_id"] != keyID {
				t.Fatalf("key.revoked data %v, want key %s", b.Data, keyID)
			}
		default:
			if b.Data["memory_id"] != note.ID || b.Data["agent_id"] != "a" {
				t.Fatalf("%s data %v, want alice's memory %s", b.Event, b.Data, note.ID)
			}
		}
	}
	if want := "memory.created memory.updated memory.forgotten key.revoked"; strings.Join(events, " ") != want {
		t.Fatalf("alice's events %v, want %s", events, want)
	}
	gotB := recvB.wait(t, 1)
	if b := verifiedBody(t, gotB[0], hookB.Secret); b.Data["memory_id"] != bobs.ID {
		t.Fatalf("bob got %v, want his memory %s", b.Data, bobs.ID)
	}
	// A signature under the other user's secret does not verify.
	if verified := webhook.Verify(hookB.Secret, mustAtoi(t, gotA[0].header.Get(webhook.TimestampHeader)), gotA[0].body, gotA[0].header.Get(webhook.SignatureHeader)); verified {
		t.Fatal("alice's delivery verifies under bob's secret")
	}

	ds := s.waitDeliveries(t, keyA, hookA.ID, func(ds []deliveryJSON) bool { return len(ds) == 4 && ds[3].Status == "delivered" })
	for _, d := range ds {
		if d.Status != "delivered" || d.Attempts != 1 || d.LastStatusCode != 200 || d.DeliveredAt == nil || d.NextAttemptAt != nil {
			t.Fatalf("delivery %+v, want delivered at the first attempt", d)
		}
	}
	if ds[0].Event != "key.revoked" {
		t.Fatalf("delivery log starts with %s, want the newest (key.revoked)", ds[0].Event)
	}

	// Neither user sees, lists or deletes the other's webhook.
	var listB struct {
		Webhooks []map[string]any `json:"webhooks"`
	}
	s.request(t, "GET", "/v1/webhooks", keyB, nil).must(t, http.StatusOK, &listB)
	if len(listB.Webhooks) != 1 || listB.Webhooks[0]["id"] != hookB.ID || listB.Webhooks[0]["secret"] != nil {
		t.Fatalf("bob's webhooks %v, want his one without its secret", listB.Webhooks)
	}
	wantError(t, s.call("GET", "/v1/webhooks/"+hookA.ID+"/deliveries", keyB, nil), http.StatusNotFound, "not_found")
	wantError(t, s.call("DELETE", "/v1/webhooks/"+hookA.ID, keyB, nil), http.StatusNotFound, "not_found")
	time.Sleep(100 * time.Millisecond) // nothing more arrives late
	if recvB.count() != 1 || recvA.count() != 4 {
		t.Fatalf("receivers got %d (alice) and %d (bob) requests, want 4 and 1", recvA.count(), recvB.count())
	}

	// A deleted webhook receives nothing more.
	s.must(http.StatusOK, "DELETE", "/v1/webhooks/"+hookA.ID, keyA, nil)
	// The account's audit trail records both, never the secret.
	audit := s.call("GET", "/v1/audit?limit=1000", keyA, nil)
	if raw := string(audit.raw); !strings.Contains(raw, `"operation":"webhook_created"`) || !strings.Contains(raw, `"operation":"webhook_deleted"`) ||
		!strings.Contains(raw, hookA.ID) || strings.Contains(raw, hookA.Secret) {
		t.Fatalf("alice's audit trail: %s", raw)
	}
	s.create(t, keyA, "a", "note", map[string]any{"content": "after the delete"})
	wantError(t, s.call("GET", "/v1/webhooks/"+hookA.ID+"/deliveries", keyA, nil), http.StatusNotFound, "not_found")
	time.Sleep(100 * time.Millisecond)
	if recvA.count() != 4 {
		t.Fatalf("a deleted webhook got %d requests, want 4", recvA.count())
	}
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWebhookDeliveryRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	const backoff = 50 * time.Millisecond
	for _, tc := range []struct {
		name   string
		script []int
		want   deliveryJSON
	}{
		{"a receiver that recovers gets the delivery", []int{500, 503}, deliveryJSON{Status: "delivered", Attempts: 3, LastStatusCode: 200}},
		{"a receiver that keeps failing: marked failed after the last attempt", []int{500, 500, 500, 500}, deliveryJSON{Status: "failed", Attempts: 3, LastStatusCode: 500}},
		{"a redirect is a failure, not followed", []int{302, 302, 302}, deliveryJSON{Status: "failed", Attempts: 3, LastStatusCode: 302}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, stackOptions{webhooks: fastWebhooks(3, backoff)})
			_, key := s.user(t, "alice@example.com")
			rc := newReceiver(t, tc.script...)
			hook := s.createWebhook(t, key, rc.srv.URL, "memory.created")
			s.create(t, key, "a", "note", map[string]any{"content": "retried"})

			ds := s.waitDeliveries(t, key, hook.ID, func(ds []deliveryJSON) bool { return len(ds) == 1 && ds[0].Status != "pending" })
			d := ds[0]
			if d.Status != tc.want.Status || d.Attempts != tc.want.Attempts || d.LastStatusCode != tc.want.LastStatusCode || d.NextAttemptAt != nil {
				t.Fatalf("delivery %+v, want %+v", d, tc.want)
			}
			got := rc.wait(t, 3)
			time.Sleep(3 * backoff)
			if rc.count() != 3 {
				t.Fatalf("receiver got %d attempts, want 3", rc.count())
			}
			for i, r := range got {
				if b := verifiedBody(t, r, hook.Secret); b.DeliveryID != d.ID {
					t.Fatalf("attempt %d carries delivery %s, want %s", i, b.DeliveryID, d.ID)
				}
				if i == 0 {
					continue
				}
				// Exponential: at least backoff, then at least twice it.
				if gap, least := r.at.Sub(got[i-1].at), backoff<<(i-1); gap < least {
					t.Fatalf("attempt %d came %s after the previous one, want at least %s", i+1, gap, least)
				}
			}
		})
	}
}

// TestWebhookRedirectIsNotFollowed: the redirect's target never hears of
// the delivery.
func TestWebhookRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{webhooks: fastWebhooks(1, time.Second)})
	_, key := s.user(t, "alice@example.com")
	target := newReceiver(t)
	redirect := httptest.NewServer(http.RedirectHandler(target.srv.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	hook := s.createWebhook(t, key, redirect.URL, "memory.created")
	s.create(t, key, "a", "note", map[string]any{"content": "redirected"})
	ds := s.waitDeliveries(t, key, hook.ID, func(ds []deliveryJSON) bool { return len(ds) == 1 && ds[0].Status == "failed" })
	if ds[0].LastStatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("delivery %+v, want failed with 307", ds[0])
	}
	if target.count() != 0 {
		t.Fatalf("the redirect's target got %d requests", target.count())
	}
}

// TestWebhookRestartMidBackoffLosesNothing stops the server while a
// delivery waits for its second attempt, and with a second delivery
// enqueued but not sent; a server restarted over the same data dir sends
// both.
func TestWebhookRestartMidBackoffLosesNothing(t *testing.T) {
	t.Parallel()
	// The backoff is long enough that the second attempt is never due
	// before the stop, however slow the machine (at 300 ms a loaded run
	// saw it sent first); the restarted server's clock is moved past it,
	// so that attempt is due at once there.
	const backoff = 20 * time.Second
	rc := newReceiver(t, http.StatusServiceUnavailable)
	s := newStack(t, stackOptions{webhooks: fastWebhooks(5, backoff)})
	_, key := s.user(t, "alice@example.com")
	hook := s.createWebhook(t, key, rc.srv.URL, "memory.created")
	first := s.create(t, key, "a", "note", map[string]any{"content": "first"})
	rc.wait(t, 1)
	s.waitDeliveries(t, key, hook.ID, func(ds []deliveryJSON) bool {
		return len(ds) == 1 && ds[0].Attempts == 1 && ds[0].Status == "pending" && ds[0].NextAttemptAt != nil
	})
	s.stopWebhooks()
	second := s.create(t, key, "a", "note", map[string]any{"content": "second, while no dispatcher runs"})
	dataDir := s.dataDir
	s.closeAll()
	if rc.count() != 1 {
		t.Fatalf("receiver got %d requests before the restart, want 1", rc.count())
	}

	s = newStack(t, stackOptions{dataDir: dataDir})
	s.clock.Advance(backoff)
	restarted := fastWebhooks(5, backoff)
	restarted.Now = s.clock.Now
	s.startWebhooks(restarted)
	got := rc.wait(t, 3)
	ids := map[string]int{}
	for _, r := range got {
		b := verifiedBody(t, r, hook.Secret)
		ids[b.Data["memory_id"].(string)]++
	}
	if ids[first.ID] != 2 || ids[second.ID] != 1 {
		t.Fatalf("deliveries by memory %v, want the first twice (failed, then after the restart) and the second once", ids)
	}
	ds := s.waitDeliveries(t, key, hook.ID, func(ds []deliveryJSON) bool {
		return len(ds) == 2 && ds[0].Status == "delivered" && ds[1].Status == "delivered"
	})
	if ds[1].Attempts != 2 || ds[0].Attempts != 1 {
		t.Fatalf("attempts %d and %d, want 2 (first) and 1 (second)", ds[1].Attempts, ds[0].Attempts)
	}
}

// TestAStoppingDispatcherGivesItsAttemptBack: a dispatcher stopped while
// a receiver holds its request counts no attempt and releases its claim,
// so the next dispatcher sends the delivery at once rather than after the
// claim expires (the attempt timeout plus a minute).
func TestAStoppingDispatcherGivesItsAttemptBack(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var held sync.Once
	rc := newReceiver(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first := false
		held.Do(func() { first = true })
		if first {
			rc.arrived <- struct{}{}
			<-release
			return
		}
		rc.srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { slow.Close() })
	t.Cleanup(func() { close(release) })
	s := newStack(t, stackOptions{webhooks: fastWebhooks(5, time.Hour)})
	_, key := s.user(t, "alice@example.com")
	hook := s.createWebhook(t, key, slow.URL, "memory.created")
	s.create(t, key, "a", "note", map[string]any{"content": "held"})
	<-rc.arrived // the first attempt is in the receiver's hands
	s.stopWebhooks()
	if ds := s.deliveries(t, key, hook.ID); len(ds) != 1 || ds[0].Status != "pending" || ds[0].Attempts != 0 {
		t.Fatalf("after the stop: %+v, want pending with no attempt counted", ds)
	}
	s.startWebhooks(fastWebhooks(5, time.Hour))
	got := rc.wait(t, 1)
	verifiedBody(t, got[0], hook.Secret)
	s.waitDeliveries(t, key, hook.ID, func(ds []deliveryJSON) bool {
		return len(ds) == 1 && ds[0].Status == "delivered" && ds[0].Attempts == 1
	})
}

// panickingPoster is a sender with a bug: every attempt panics.
type panickingPoster struct{ calls atomic.Int32 }

func (p *panickingPoster) Post(context.Context, webhook.Pending, time.Time) (int, error) {
	p.calls.Add(1)
	panic("a bug in the sender")
}

// TestAPanickingSenderFailsTheDeliveryAfterItsAttempts: a sender that
// panics has failed an attempt, counted and retried with backoff like any
// other, so a poison delivery is failed after MaxAttempts rather than
// retried for ever at each claim's expiry (the attempt timeout plus a
// minute) with no attempt counted.
func TestAPanickingSenderFailsTheDeliveryAfterItsAttempts(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, key := s.user(t, "alice@example.com")
	rc := newReceiver(t)
	hook := s.createWebhook(t, key, rc.srv.URL, "memory.created")
	s.create(t, key, "a", "note", map[string]any{"content": "poison"})
	poster := &panickingPoster{}
	cfg := fastWebhooks(3, 20*time.Millisecond)
	cfg.Poster = poster
	s.startWebhooks(cfg)
	ds := s.waitDeliveries(t, key, hook.ID, func(ds []deliveryJSON) bool { return len(ds) == 1 && ds[0].Status == "failed" })
	if ds[0].Attempts != 3 || ds[0].NextAttemptAt != nil {
		t.Fatalf("delivery %+v, want failed after 3 attempts with none due", ds[0])
	}
	var raw struct {
		Deliveries []struct {
			LastError string `json:"last_error"`
		} `json:"deliveries"`
	}
	s.request(t, "GET", "/v1/webhooks/"+hook.ID+"/deliveries", key, nil).must(t, http.StatusOK, &raw)
	if e := raw.Deliveries[0].LastError; e == "" || strings.Contains(e, "a bug in the sender") {
		t.Fatalf("last_error %q, want the failure named without the panic's value (that is for the server log)", e)
	}
	if n := poster.calls.Load(); n != 3 {
		t.Fatalf("the sender was called %d times, want 3", n)
	}

}

// TestABusyDispatcherClaimsAgainAsAttemptsEnd: with every slot taken,
// the dispatcher claims the next due delivery when an attempt ends, not at
// its next poll (an hour here).
func TestABusyDispatcherClaimsAgainAsAttemptsEnd(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, key := s.user(t, "alice@example.com")
	rc := newReceiver(t)
	hook := s.createWebhook(t, key, rc.srv.URL, "memory.created")
	for i := range 4 {
		s.create(t, key, "a", "note", map[string]any{"content": "backlog " + strconv.Itoa(i)})
	}
	cfg := fastWebhooks(3, time.Hour)
	cfg.PollInterval, cfg.Concurrency = time.Hour, 1
	s.startWebhooks(cfg)
	rc.wait(t, 4)
	s.waitDeliveries(t, key, hook.ID, func(ds []deliveryJSON) bool {
		return len(ds) == 4 && !slices.ContainsFunc(ds, func(d deliveryJSON) bool { return d.Status != "delivered" })
	})
}

func TestWebhookBadInputGetsTheEnvelopeAndStoresNothing(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{webhookStrict: true})
	_, key := s.user(t, "alice@example.com")
	long := "https://example.com/" + strings.Repeat("a", webhook.MaxURLLength)
	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"no url", map[string]any{"events": []string{"memory.created"}}, 400, "invalid_request"},
		{"no events", map[string]any{"url": "https://example.com/hook"}, 400, "invalid_webhook_events"},
		{"empty events", map[string]any{"url": "https://example.com/hook", "events": []string{}}, 400, "invalid_webhook_events"},
		{"unknown event", map[string]any{"url": "https://example.com/hook", "events": []string{"memory.exploded"}}, 400, "invalid_webhook_events"},
		{"http", map[string]any{"url": "http://example.com/hook", "events": []string{"memory.created"}}, 400, "invalid_webhook_url"},
		{"loopback", map[string]any{"url": "https://127.0.0.1/hook", "events": []string{"memory.created"}}, 400, "invalid_webhook_url"},
		{"loopback by name", map[string]any{"url": "https://localhost:8443/hook", "events": []string{"memory.created"}}, 400, "invalid_webhook_url"},
		{"private", map[string]any{"url": "https://10.1.2.3/hook", "events": []string{"memory.created"}}, 400, "invalid_webhook_url"},
		{"link-local metadata", map[string]any{"url": "https://169.254.169.254/latest", "events": []string{"memory.created"}}, 400, "invalid_webhook_url"},
		{"IPv6 loopback", map[string]any{"url": "https://[::1]/hook", "events": []string{"memory.created"}}, 400, "invalid_webhook_url"},
		{"credentials", map[string]any{"url": "https://u:p@example.com/hook", "events": []string{"memory.created"}}, 400, "invalid_webhook_url"},
		{"too long", map[string]any{"url": long, "events": []string{"memory.created"}}, 400, "invalid_webhook_url"},
		{"not a URL", map[string]any{"url": "::", "events": []string{"memory.created"}}, 400, "invalid_webhook_url"},
		{"unknown field", map[string]any{"url": "https://example.com/hook", "events": []string{"memory.created"}, "secret": "mine"}, 400, "invalid_request"},
		{"not JSON", "{", 400, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, s.request(t, "POST", "/v1/webhooks", key, tc.body), tc.status, tc.code)
		})
	}
	var list struct {
		Webhooks []map[string]any `json:"webhooks"`
	}
	s.request(t, "GET", "/v1/webhooks", key, nil).must(t, http.StatusOK, &list)
	if len(list.Webhooks) != 0 {
		t.Fatalf("refused registrations stored %v", list.Webhooks)
	}
	wantError(t, s.call("DELETE", "/v1/webhooks/no-such-hook", key, nil), http.StatusNotFound, "not_found")
	wantError(t, s.call("GET", "/v1/webhooks/no-such-hook/deliveries", key, nil), http.StatusNotFound, "not_found")
	wantError(t, s.call("GET", "/v1/webhooks", "", nil), http.StatusUnauthorized, "unauthorized")
}

func TestWebhookLimits(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, key := s.user(t, "alice@example.com")
	rc := newReceiver(t)
	var first webhookCreated
	for i := range webhook.MaxPerUser {
		h := s.createWebhook(t, key, fmt.Sprintf("%s/%d", rc.srv.URL, i), "memory.created")
		if i == 0 {
			first = h
		}
	}
	r := s.call("POST", "/v1/webhooks", key, map[string]any{"url": rc.srv.URL + "/one-too-many", "events": []string{"memory.created"}})
	wantError(t, r, http.StatusForbidden, "webhook_limit")
	if r.details()["limit"] != float64(webhook.MaxPerUser) {
		t.Fatalf("details %v, want the limit", r.details())
	}
	// A deleted webhook frees its place.
	s.must(http.StatusOK, "DELETE", "/v1/webhooks/"+first.ID, key, nil)
	s.createWebhook(t, key, rc.srv.URL+"/again", "memory.created")

	// Deliveries page: limit bounds and cursor.
	wantError(t, s.call("GET", "/v1/webhooks/"+first.ID+"/deliveries", key, nil), http.StatusNotFound, "not_found")
	var list struct {
		Webhooks []webhookCreated `json:"webhooks"`
	}
	s.request(t, "GET", "/v1/webhooks", key, nil).must(t, http.StatusOK, &list)
	id := list.Webhooks[0].ID
	s.call("GET", "/v1/webhooks/"+id+"/deliveries?limit=0", key, nil).invalid(t, "limit")
	s.call("GET", fmt.Sprintf("/v1/webhooks/%s/deliveries?limit=%d", id, webhook.MaxDeliveryLimit+1), key, nil).invalid(t, "limit")
	s.call("GET", "/v1/webhooks/"+id+"/deliveries?cursor=abc", key, nil).invalid(t, "cursor")
}

func TestWebhookDeliveriesPaginate(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{webhooks: fastWebhooks(3, 20*time.Millisecond)})
	_, key := s.user(t, "alice@example.com")
	rc := newReceiver(t)
	hook := s.createWebhook(t, key, rc.srv.URL, "memory.created")
	for i := range 5 {
		s.create(t, key, "a", "note", map[string]any{"content": "note " + strconv.Itoa(i)})
	}
	rc.wait(t, 5)
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		path := "/v1/webhooks/" + hook.ID + "/deliveries?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var page deliveryPage
		s.request(t, "GET", path, key, nil).must(t, http.StatusOK, &page)
		for _, d := range page.Deliveries {
			seen = append(seen, d.ID)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(seen) != 5 {
		t.Fatalf("pages held %d deliveries, want 5: %v", len(seen), seen)
	}
	all := s.deliveries(t, key, hook.ID)
	for i, d := range all {
		if seen[i] != d.ID {
			t.Fatalf("page order %v differs from the whole log's %v", seen, all)
		}
	}
}
