package mail

import (
	"context"
	"log/slog"
	"strings"
)

// NewFromConfig picks the delivery decisions §3 prescribes: SMTP when smtpURL
// (ENGRAM_SMTP_URL) is set, otherwise the outbox in outboxDir
// (ENGRAM_MAIL_OUTBOX, whose default the caller resolves). It logs which one,
// and where, once. A nil logger discards.
func NewFromConfig(smtpURL, outboxDir string, logger *slog.Logger) (interface {
	Send(context.Context, Message) error
}, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// A blank variable (ENGRAM_SMTP_URL=" ") means unset, not a broken URL.
	if u := strings.TrimSpace(smtpURL); u != "" {
		s, err := NewSMTPSender(u)
		if err != nil {
			return nil, err
		}
		logger.Info("mail delivery via SMTP", "url", s.String(), "tls", s.cfg.tls.String())
		return s, nil
	}
	o, err := NewOutboxSender(outboxDir, logger)
	if err != nil {
		return nil, err
	}
	logger.Info("mail delivery to outbox directory (no SMTP URL set)", "dir", o.Dir())
	return o, nil
}
