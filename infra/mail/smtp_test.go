package mail_test

import (
	"context"
	"fmt"
	"io"
	"mime/quotedprintable"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/mail"
	"github.com/engram-memory/engram/infra/mail/mailtest"
)

func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSMTPSenderDelivers(t *testing.T) {
	tests := []struct {
		name    string
		server  []mailtest.Option
		url     func(s *mailtest.Server) string // nil: s.URL()
		wantTLS bool
	}{
		{name: "plain"},
		{name: "auth", server: []mailtest.Option{mailtest.WithAuth()}},
		{name: "starttls mandatory", server: []mailtest.Option{mailtest.WithSTARTTLS()}, wantTLS: true},
		{name: "starttls mandatory with auth", server: []mailtest.Option{mailtest.WithSTARTTLS(), mailtest.WithAuth()}, wantTLS: true},
		{
			// The smtp:// default must upgrade when the server offers STARTTLS.
			name:   "starttls opportunistic by default",
			server: []mailtest.Option{mailtest.WithSTARTTLS()},
			url: func(s *mailtest.Server) string {
				return "smtp://" + s.Addr()
			},
			wantTLS: true,
		},
		{name: "implicit tls", server: []mailtest.Option{mailtest.WithImplicitTLS()}, wantTLS: true},
		{name: "implicit tls with auth", server: []mailtest.Option{mailtest.WithImplicitTLS(), mailtest.WithAuth()}, wantTLS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mailtest.Start(t, tt.server...)
			u := srv.URL()
			if tt.url != nil {
				u = tt.url(srv)
			}
			s, err := mail.NewSMTPSender(u, mail.WithTLSConfig(srv.ClientTLSConfig()))
			if err != nil {
				t.Fatal(err)
			}
			const to = "alice@example.com"
			if err := s.Send(t.Context(), verificationMessage(to)); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got, err := srv.WaitFor(waitCtx(t), to)
			if err != nil {
				t.Fatal(err)
			}
			if got.From != mail.DefaultFrom {
				t.Errorf("envelope from = %q, want %q", got.From, mail.DefaultFrom)
			}
			if len(got.To) != 1 || got.To[0] != to {
				t.Errorf("envelope to = %v", got.To)
			}
			if got.TLS != tt.wantTLS {
				t.Errorf("session TLS = %v, want %v", got.TLS, tt.wantTLS)
			}
			checkVerificationMail(t, parseMessage(t, got.Data), to)
		})
	}
}

func TestSMTPSenderFromAddress(t *testing.T) {
	srv := mailtest.Start(t)
	s, err := mail.NewSMTPSender(srv.URL() + "&from=" + "Engram%20%3Cnoreply%40engram.example%3E")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(t.Context(), verificationMessage("bob@example.com")); err != nil {
		t.Fatal(err)
	}
	got, err := srv.WaitFor(waitCtx(t), "bob@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if got.From != "noreply@engram.example" {
		t.Errorf("envelope from = %q", got.From)
	}
	from, err := parseMessage(t, got.Data).header.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Name != "Engram" || from[0].Address != "noreply@engram.example" {
		t.Errorf("From header = %v (err %v)", from, err)
	}
}

// Non-ASCII travels as 8bit UTF-8 (the test server announces 8BITMIME), and a
// line too long for 8bit falls back to quoted-printable without loss.
func TestSMTPSenderEncodings(t *testing.T) {
	long := strings.Repeat("0123456789", 120) // 1200 octets > 998
	tests := []struct {
		name, subject, text, wantCTE string
	}{
		{"utf-8", "Bestätigung – 確認", "Grüße\n" + testToken + "\n", "8bit"},
		{"long line", "long", long + "\n" + testToken + "\n", "quoted-printable"},
		{"crlf input", "crlf", "one\r\ntwo\r\n" + testToken + "\r\n", "8bit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mailtest.Start(t)
			s, err := mail.NewSMTPSender(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Send(t.Context(), mail.Message{To: "c@example.com", Subject: tt.subject, Text: tt.text}); err != nil {
				t.Fatal(err)
			}
			got, err := srv.WaitFor(waitCtx(t), "c@example.com")
			if err != nil {
				t.Fatal(err)
			}
			p := parseMessage(t, got.Data)
			if p.subject != tt.subject {
				t.Errorf("subject = %q, want %q", p.subject, tt.subject)
			}
			cte := p.header.Get("Content-Transfer-Encoding")
			if cte != tt.wantCTE {
				t.Errorf("Content-Transfer-Encoding = %q, want %q", cte, tt.wantCTE)
			}
			body := p.body
			if cte == "quoted-printable" {
				b, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(body)))
				if err != nil {
					t.Fatal(err)
				}
				body = strings.ReplaceAll(string(b), "\r\n", "\n")
			}
			want := strings.ReplaceAll(tt.text, "\r\n", "\n")
			if strings.TrimRight(body, "\n") != strings.TrimRight(want, "\n") {
				t.Errorf("body = %q, want %q", body, want)
			}
		})
	}
}

func TestSMTPSenderConcurrent(t *testing.T) {
	srv := mailtest.Start(t, mailtest.WithAuth())
	s, err := mail.NewSMTPSender(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- s.Send(t.Context(), verificationMessage(fmt.Sprintf("user%d@example.com", i)))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for i := range n {
		if _, err := srv.WaitFor(waitCtx(t), fmt.Sprintf("user%d@example.com", i)); err != nil {
			t.Error(err)
		}
	}
	if got := len(srv.Messages()); got != n {
		t.Errorf("%d messages received, want %d", got, n)
	}
}
