package webhookhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/webhook"
	"github.com/engram-memory/engram/infra/webhookhttp"
)

// countingReceiver counts the requests that reach it and answers status.
func countingReceiver(t *testing.T, status int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func pending(target string) webhook.Pending {
	return webhook.Pending{ID: "hook.event", WebhookID: "hook", Event: webhook.MemoryCreated, URL: target, Secret: "whsec_test", Body: []byte(`{"event":"memory.created"}`)}
}

// TestTheDialerRefusesPrivateAddresses: a target that resolves to
// loopback (here the receiver's own 127.0.0.1, as a rebound name would)
// is refused when the connection is made, and the receiver hears nothing.
func TestTheDialerRefusesPrivateAddresses(t *testing.T) {
	srv, hits := countingReceiver(t, http.StatusOK)
	strict := webhookhttp.New(webhookhttp.Options{Timeout: 5 * time.Second})
	_, err := strict.Post(context.Background(), pending(srv.URL), time.Now())
	if !errors.Is(err, webhookhttp.ErrForbiddenAddress) {
		t.Fatalf("post to %s: %v, want ErrForbiddenAddress", srv.URL, err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the receiver got %d requests", hits.Load())
	}
	allowed := webhookhttp.New(webhookhttp.Options{Timeout: 5 * time.Second, AllowPrivate: true})
	if status, err := allowed.Post(context.Background(), pending(srv.URL), time.Now()); err != nil || status != http.StatusOK {
		t.Fatalf("with AllowPrivate: %d, %v", status, err)
	}
}

func TestARedirectIsTheAnswerNotFollowed(t *testing.T) {
	target, hits := countingReceiver(t, http.StatusOK)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusFound))
	t.Cleanup(redirect.Close)
	c := webhookhttp.New(webhookhttp.Options{AllowPrivate: true})
	status, err := c.Post(context.Background(), pending(redirect.URL), time.Now())
	if err != nil || status != http.StatusFound {
		t.Fatalf("got %d, %v; want the 302 itself", status, err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the redirect's target got %d requests", hits.Load())
	}
}

func TestAnAttemptEndsAtTheTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	t.Cleanup(func() { close(release); slow.Close() })
	c := webhookhttp.New(webhookhttp.Options{AllowPrivate: true, Timeout: 100 * time.Millisecond})
	if _, err := c.Post(context.Background(), pending(slow.URL), time.Now()); err == nil {
		t.Fatal("a receiver that never answers: no error")
	}
}

func TestPostSignsTheBody(t *testing.T) {
	var got http.Header
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, body = r.Header.Clone(), must(io.ReadAll(r.Body))
	}))
	t.Cleanup(srv.Close)
	p := pending(srv.URL)
	at := time.Unix(1_800_000_000, 0)
	if _, err := webhookhttp.New(webhookhttp.Options{AllowPrivate: true}).Post(context.Background(), p, at); err != nil {
		t.Fatal(err)
	}
	if got.Get(webhook.TimestampHeader) != strconv.FormatInt(at.Unix(), 10) || string(body) != string(p.Body) {
		t.Fatalf("headers %v body %s", got, body)
	}
	if !webhook.Verify(p.Secret, at.Unix(), body, got.Get(webhook.SignatureHeader)) {
		t.Fatalf("signature %q does not verify", got.Get(webhook.SignatureHeader))
	}
	if got.Get(webhook.DeliveryHeader) != p.ID || got.Get(webhook.EventHeader) != p.Event || got.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCheckTarget(t *testing.T) {
	strict := webhookhttp.New(webhookhttp.Options{})
	for _, tc := range []struct {
		url    string
		refuse bool
	}{
		{"https://127.0.0.1/h", true},
		{"https://localhost/h", true}, // resolves to loopback
		{"https://[::1]/h", true},
		{"https://10.0.0.8/h", true},
		{"https://169.254.169.254/h", true},
		{"https://[::ffff:192.168.1.1]/h", true},
		{"https://93.184.215.14/h", false},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		err = strict.CheckTarget(context.Background(), u)
		if refused := err != nil; refused != tc.refuse {
			t.Errorf("%s: %v, want refused %v", tc.url, err, tc.refuse)
		}
		if err != nil && domain.ErrorKind(err) != domain.KindInvalid {
			t.Errorf("%s: %v is not an invalid_request", tc.url, err)
		}
	}
	u, _ := url.Parse("https://127.0.0.1/h")
	if err := webhookhttp.New(webhookhttp.Options{AllowPrivate: true}).CheckTarget(context.Background(), u); err != nil {
		t.Fatalf("with AllowPrivate: %v", err)
	}
}
