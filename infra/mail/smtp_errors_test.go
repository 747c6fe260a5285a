package mail_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/mail"
	"github.com/engram-memory/engram/infra/mail/mailtest"
)

// stalledServer accepts connections and never says a word, like a relay
// behind a broken firewall. It returns its address.
func stalledServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// closedAddr is a loopback port nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestSMTPSenderFailures(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T) (url string, opts []mail.SMTPOption)
		wantErr error // checked with errors.Is when set
	}{
		{
			name: "server down",
			setup: func(t *testing.T) (string, []mail.SMTPOption) {
				return "smtp://" + closedAddr(t) + "?tls=none", nil
			},
		},
		{
			name: "server closed after start",
			setup: func(t *testing.T) (string, []mail.SMTPOption) {
				srv := mailtest.Start(t)
				srv.Close()
				return srv.URL(), nil
			},
		},
		{
			name: "server never greets",
			setup: func(t *testing.T) (string, []mail.SMTPOption) {
				return "smtp://" + stalledServer(t) + "?tls=none&timeout=300ms", nil
			},
			wantErr: context.DeadlineExceeded,
		},
		{
			name: "wrong password",
			setup: func(t *testing.T) (string, []mail.SMTPOption) {
				srv := mailtest.Start(t, mailtest.WithAuth())
				return "smtp://" + mailtest.Username + ":wrong@" + srv.Addr() + "?tls=none", nil
			},
		},
		{
			name: "auth required but no credentials",
			setup: func(t *testing.T) (string, []mail.SMTPOption) {
				srv := mailtest.Start(t, mailtest.WithAuth())
				return "smtp://" + srv.Addr() + "?tls=none", nil
			},
		},
		{
			name: "tls mandatory but server has no STARTTLS",
			setup: func(t *testing.T) (string, []mail.SMTPOption) {
				srv := mailtest.Start(t)
				return "smtp://" + srv.Addr() + "?tls=mandatory", nil
			},
		},
		{
			name: "untrusted certificate",
			setup: func(t *testing.T) (string, []mail.SMTPOption) {
				return mailtest.Start(t, mailtest.WithSTARTTLS()).URL(), nil
			},
		},
		{
			name: "implicit tls against plain server",
			setup: func(t *testing.T) (string, []mail.SMTPOption) {
				srv := mailtest.Start(t)
				return "smtps://" + srv.Addr(), []mail.SMTPOption{mail.WithTimeout(2 * time.Second)}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, opts := tt.setup(t)
			s, err := mail.NewSMTPSender(u, opts...)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = s.Send(t.Context(), verificationMessage("dave@example.com"))
			if err == nil {
				t.Fatal("Send succeeded, want error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.wantErr)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("Send took %v; it must fail fast", d)
			}
			t.Logf("error (as intended): %v", err)
		})
	}
}

func TestSMTPSenderContext(t *testing.T) {
	t.Run("already cancelled", func(t *testing.T) {
		srv := mailtest.Start(t)
		s, err := mail.NewSMTPSender(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := s.Send(ctx, verificationMessage("erin@example.com")); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if n := len(srv.Messages()); n != 0 {
			t.Errorf("%d messages delivered after cancellation", n)
		}
	})
	t.Run("cancelled mid-session", func(t *testing.T) {
		// A long timeout proves that the cancel, not the timeout, ends Send.
		s, err := mail.NewSMTPSender("smtp://"+stalledServer(t)+"?tls=none", mail.WithTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		err = s.Send(ctx, verificationMessage("erin@example.com"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Send returned %v after cancel", d)
		}
	})
}

func TestSMTPSenderRejectsBadMessage(t *testing.T) {
	srv := mailtest.Start(t)
	s, err := mail.NewSMTPSender(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range badMessages() {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Send(t.Context(), tt.msg); err == nil {
				t.Fatal("Send succeeded, want error")
			}
		})
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("%d bad messages delivered", n)
	}
}

type badMessage struct {
	name string
	msg  mail.Message
}

// badMessages are refused by both senders before any delivery attempt.
func badMessages() []badMessage {
	return []badMessage{
		{"no recipient", mail.Message{Subject: "s", Text: "t"}},
		{"blank recipient", mail.Message{To: "  ", Subject: "s", Text: "t"}},
		{"malformed recipient", mail.Message{To: "not-an-address", Subject: "s", Text: "t"}},
		{"two recipients", mail.Message{To: "a@example.com, b@example.com", Subject: "s", Text: "t"}},
		{"header injection in subject", mail.Message{To: "a@example.com", Subject: "hi\r\nBcc: evil@example.com", Text: "t"}},
		{"header injection in recipient", mail.Message{To: "a@example.com\nBcc: evil@example.com", Subject: "s", Text: "t"}},
		{"invalid utf-8", mail.Message{To: "a@example.com", Subject: "s", Text: "\xff\xfe"}},
	}
}

func TestNewSMTPSenderRejectsBadURL(t *testing.T) {
	const secret = "hunter2-secret"
	tests := []struct{ name, url string }{
		{"empty", ""},
		{"no scheme", "mail.example.com:587"},
		{"wrong scheme", "http://mail.example.com"},
		{"unparseable", "smtp://user:" + secret + "@mail.example.com:%zz"},
		{"no host", "smtp://"},
		{"no host with port", "smtp://:587"},
		{"port zero", "smtp://mail.example.com:0"},
		{"port too large", "smtp://mail.example.com:70000"},
		{"port not numeric", "smtp://mail.example.com:smtp"},
		{"path", "smtp://mail.example.com/inbox"},
		{"opaque", "smtp:mail.example.com"},
		{"empty user", "smtp://:" + secret + "@mail.example.com"},
		{"unknown tls", "smtp://mail.example.com?tls=maybe"},
		{"smtps with tls=none", "smtps://mail.example.com?tls=none"},
		{"bad from", "smtp://mail.example.com?from=nobody"},
		{"unknown parameter", "smtp://mail.example.com?form=a@example.com"},
		{"repeated parameter", "smtp://mail.example.com?tls=none&tls=mandatory"},
		{"bad timeout", "smtp://mail.example.com?timeout=soon"},
		{"negative timeout", "smtp://mail.example.com?timeout=-1s"},
		{"cleartext password to remote host", "smtp://user:" + secret + "@mail.example.com?tls=none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := mail.NewSMTPSender(tt.url)
			if err == nil {
				t.Fatalf("NewSMTPSender(%q) = %v, want error", tt.url, s)
			}
			if !errors.Is(err, mail.ErrInvalidSMTPURL) {
				t.Errorf("err = %v, want errors.Is ErrInvalidSMTPURL", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error leaks the password: %v", err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestSMTPSenderStringRedactsPassword(t *testing.T) {
	s, err := mail.NewSMTPSender("smtp://user:hunter2@mail.example.com:587")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); strings.Contains(got, "hunter2") || !strings.Contains(got, "mail.example.com:587") {
		t.Errorf("String() = %q", got)
	}
}
