package mail_test

import (
	"bytes"
	"context"
	"io"
	"mime"
	netmail "net/mail"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/mail"
)

// Both senders must satisfy the caller-owned Sender interface.
var (
	_ interface {
		Send(context.Context, mail.Message) error
	} = (*mail.SMTPSender)(nil)
	_ interface {
		Send(context.Context, mail.Message) error
	} = (*mail.OutboxSender)(nil)
)

const testToken = "Zx9fK2mQ7vLwP4rT8yB1nC6dH3jE5gA0sU2iO7kW"

// verificationText looks like the mail the account service sends: the token
// in a link and alone on a line (decisions §8). The leading-dot line checks
// SMTP dot-stuffing round-trips.
func verificationText() string {
	return strings.Join([]string{
		"Welcome to Engram.",
		"",
		"Confirm your e-mail address by opening this link:",
		"https://engram.example/auth/verify?token=" + testToken,
		"",
		"Or paste this token:",
		testToken,
		"",
		". a line that starts with a dot",
		"The token expires in 24 hours.",
	}, "\n")
}

func verificationMessage(to string) mail.Message {
	return mail.Message{To: to, Subject: "Verify your Engram account", Text: verificationText()}
}

// parsed is a received or written message reduced to what tests compare.
type parsed struct {
	header  netmail.Header
	subject string // RFC 2047-decoded
	body    string // LF line endings, transfer encoding as on the wire
	raw     []byte
}

func parseMessage(t *testing.T, data []byte) parsed {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("net/mail.ReadMessage: %v\n%s", err, data)
	}
	body, err := io.ReadAll(msg.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		t.Fatalf("decode subject: %v", err)
	}
	return parsed{
		header:  msg.Header,
		subject: subject,
		body:    strings.ReplaceAll(string(body), "\r\n", "\n"),
		raw:     data,
	}
}

// checkVerificationMail asserts the headers and that every body line arrived
// verbatim, in particular the token on a line of its own.
func checkVerificationMail(t *testing.T, p parsed, wantTo string) {
	t.Helper()
	if got := p.subject; got != "Verify your Engram account" {
		t.Errorf("Subject = %q", got)
	}
	to, err := p.header.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Address != wantTo {
		t.Errorf("To = %v (err %v), want %s", to, err, wantTo)
	}
	if _, err := p.header.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	if p.header.Get("Message-Id") == "" {
		t.Error("no Message-ID")
	}
	if got := p.header.Get("Mime-Version"); got != "1.0" {
		t.Errorf("MIME-Version = %q", got)
	}
	mt, params, err := mime.ParseMediaType(p.header.Get("Content-Type"))
	if err != nil || mt != "text/plain" || !strings.EqualFold(params["charset"], "utf-8") {
		t.Errorf("Content-Type = %q", p.header.Get("Content-Type"))
	}
	if got := p.header.Get("Content-Transfer-Encoding"); got != "8bit" {
		t.Errorf("Content-Transfer-Encoding = %q, want 8bit", got)
	}
	if got, want := strings.TrimRight(p.body, "\n"), verificationText(); got != want {
		t.Errorf("body differs\n got: %q\nwant: %q", got, want)
	}
	lines := strings.Split(p.body, "\n")
	if !slices.Contains(lines, testToken) {
		t.Errorf("token not on a line of its own:\n%s", p.body)
	}
	if !slices.Contains(lines, "https://engram.example/auth/verify?token="+testToken) {
		t.Errorf("link line not intact:\n%s", p.body)
	}
}
