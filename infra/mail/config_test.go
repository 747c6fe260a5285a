package mail_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/mail"
	"github.com/engram-memory/engram/infra/mail/mailtest"
)

func TestNewFromConfig(t *testing.T) {
	srv := mailtest.Start(t, mailtest.WithAuth())
	tests := []struct {
		name      string
		smtpURL   string
		outbox    bool // pass an outbox dir
		want      string
		wantInLog string
	}{
		{name: "smtp when url set", smtpURL: srv.URL(), outbox: true, want: "smtp", wantInLog: srv.Addr()},
		{name: "outbox when url empty", outbox: true, want: "outbox", wantInLog: "outbox"},
		{name: "blank url means unset", smtpURL: " \t", outbox: true, want: "outbox", wantInLog: "outbox"},
		{name: "bad url is an error, not a fallback", smtpURL: "smtp://", outbox: true, want: "error"},
		{name: "neither", want: "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			dir := ""
			if tt.outbox {
				dir = filepath.Join(t.TempDir(), "outbox")
			}
			s, err := mail.NewFromConfig(tt.smtpURL, dir, logger)
			got := "error"
			switch s.(type) {
			case *mail.SMTPSender:
				got = "smtp"
			case *mail.OutboxSender:
				got = "outbox"
			}
			if got != tt.want {
				t.Fatalf("NewFromConfig = %T (err %v), want %s", s, err, tt.want)
			}
			if got == "error" {
				return
			}
			if !strings.Contains(logs.String(), tt.wantInLog) {
				t.Errorf("startup log %q lacks %q", logs.String(), tt.wantInLog)
			}
			if strings.Contains(logs.String(), mailtest.Password) {
				t.Errorf("startup log leaks the SMTP password: %q", logs.String())
			}
			// Whatever was chosen must deliver.
			const to = "frank@example.com"
			if err := s.Send(t.Context(), verificationMessage(to)); err != nil {
				t.Fatalf("Send: %v", err)
			}
			switch got {
			case "smtp":
				if _, err := srv.WaitFor(waitCtx(t), to); err != nil {
					t.Error(err)
				}
			case "outbox":
				if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
					t.Errorf("outbox entries %v (err %v), want 1", entries, err)
				}
			}
		})
	}
}
