package mailtest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/smtp"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/mail/mailtest"
)

// The server is exercised with the standard library client, independent of
// the sender it exists to test.

func send(t *testing.T, addr string, auth smtp.Auth, from string, to []string, body string) error {
	t.Helper()
	msg := "From: " + from + "\r\nTo: " + strings.Join(to, ", ") + "\r\nSubject: hello\r\n\r\n" + body + "\r\n"
	return smtp.SendMail(addr, auth, from, to, []byte(msg))
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestRecordsMessages(t *testing.T) {
	srv := mailtest.Start(t)
	if err := send(t, srv.Addr(), nil, "a@example.com", []string{"x@example.com", "y@example.com"}, "first"); err != nil {
		t.Fatal(err)
	}
	if err := send(t, srv.Addr(), nil, "b@example.com", []string{"x@example.com"}, ".second"); err != nil {
		t.Fatal(err)
	}

	msgs := srv.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	if msgs[0].From != "a@example.com" || strings.Join(msgs[0].To, ",") != "x@example.com,y@example.com" {
		t.Errorf("first envelope = %q -> %v", msgs[0].From, msgs[0].To)
	}
	m, err := msgs[1].Parse()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(m.Body)
	if got := strings.TrimRight(string(body), "\r\n"); got != ".second" {
		t.Errorf("body = %q, want dot-unstuffed %q", got, ".second")
	}

	// Messages returns copies.
	msgs[0].To[0], msgs[0].Data[0] = "changed", 'X'
	if again := srv.Messages(); again[0].To[0] != "x@example.com" || again[0].Data[0] == 'X' {
		t.Error("Messages exposes the server's own slices")
	}

	tests := []struct {
		to       string
		n        int
		wantFrom string
	}{
		{"x@example.com", 1, "a@example.com"},
		{"X@Example.com", 2, "b@example.com"}, // case-insensitive
		{"y@example.com", 1, "a@example.com"},
	}
	for _, tt := range tests {
		got, err := srv.WaitForNth(ctxFor(t, time.Second), tt.to, tt.n)
		if err != nil || got.From != tt.wantFrom {
			t.Errorf("WaitForNth(%s, %d) = %q, %v; want from %s", tt.to, tt.n, got.From, err, tt.wantFrom)
		}
	}
}

func TestWaitFor(t *testing.T) {
	t.Run("blocks until arrival", func(t *testing.T) {
		srv := mailtest.Start(t)
		type result struct {
			r   mailtest.Received
			err error
		}
		done := make(chan result, 1)
		go func() {
			r, err := srv.WaitFor(ctxFor(t, 5*time.Second), "late@example.com")
			done <- result{r, err}
		}()
		// Unrelated mail must not wake the waiter with the wrong message.
		if err := send(t, srv.Addr(), nil, "a@example.com", []string{"other@example.com"}, "no"); err != nil {
			t.Fatal(err)
		}
		if err := send(t, srv.Addr(), nil, "a@example.com", []string{"late@example.com"}, "yes"); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res.err != nil || res.r.To[0] != "late@example.com" {
			t.Fatalf("WaitFor = %+v, %v", res.r, res.err)
		}
	})
	t.Run("ends with the context", func(t *testing.T) {
		srv := mailtest.Start(t)
		_, err := srv.WaitFor(ctxFor(t, 50*time.Millisecond), "nobody@example.com")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
	t.Run("n must be positive", func(t *testing.T) {
		srv := mailtest.Start(t)
		if _, err := srv.WaitForNth(t.Context(), "a@example.com", 0); err == nil {
			t.Fatal("WaitForNth(0) succeeded")
		}
	})
}

func TestAuth(t *testing.T) {
	srv := mailtest.Start(t, mailtest.WithAuth())
	tests := []struct {
		name string
		auth smtp.Auth
		ok   bool
	}{
		{"right credentials", smtp.PlainAuth("", mailtest.Username, mailtest.Password, "127.0.0.1"), true},
		{"wrong password", smtp.PlainAuth("", mailtest.Username, "nope", "127.0.0.1"), false},
		{"no auth", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := send(t, srv.Addr(), tt.auth, "a@example.com", []string{"b@example.com"}, "hi")
			if (err == nil) != tt.ok {
				t.Errorf("err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if n := len(srv.Messages()); n != 1 {
		t.Errorf("%d messages accepted, want 1", n)
	}
}

func TestURL(t *testing.T) {
	tests := []struct {
		name       string
		opts       []mailtest.Option
		wantScheme string
		wantTLS    string
		wantUser   bool
	}{
		{"plain", nil, "smtp", "none", false},
		{"auth", []mailtest.Option{mailtest.WithAuth()}, "smtp", "none", true},
		{"starttls", []mailtest.Option{mailtest.WithSTARTTLS()}, "smtp", "mandatory", false},
		{"implicit", []mailtest.Option{mailtest.WithImplicitTLS(), mailtest.WithAuth()}, "smtps", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mailtest.Start(t, tt.opts...)
			u, err := url.Parse(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			if u.Scheme != tt.wantScheme || u.Host != srv.Addr() || u.Query().Get("tls") != tt.wantTLS {
				t.Errorf("URL() = %s", srv.URL())
			}
			pass, _ := u.User.Password()
			if tt.wantUser != (u.User.Username() == mailtest.Username && pass == mailtest.Password) {
				t.Errorf("URL() credentials = %v", u.User)
			}
			if (srv.ClientTLSConfig() != nil) != (tt.wantScheme == "smtps" || tt.wantTLS == "mandatory") {
				t.Errorf("ClientTLSConfig() = %v", srv.ClientTLSConfig())
			}
		})
	}
}

func TestImplicitTLSHandshake(t *testing.T) {
	srv := mailtest.Start(t, mailtest.WithImplicitTLS())
	conn, err := tls.Dial("tcp", srv.Addr(), srv.ClientTLSConfig())
	if err != nil {
		t.Fatalf("TLS with ClientTLSConfig: %v", err)
	}
	defer conn.Close()
	c, err := smtp.NewClient(conn, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		t.Fatal(err)
	}
}

func TestCloseRefusesConnections(t *testing.T) {
	srv := mailtest.Start(t)
	srv.Close()
	srv.Close() // idempotent; t.Cleanup calls it again too
	if c, err := net.DialTimeout("tcp", srv.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("dial succeeded after Close")
	}
}
