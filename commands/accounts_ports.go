package commands

import (
	"context"
	"time"

	"github.com/engram-memory/engram/domain/account"
)

// AccountReader is the accounts read model as the account commands use it:
// to find which user stream to load, and to authenticate. It is implemented
// by infra/sqlite.Accounts. Missing rows are (zero, false, nil).
type AccountReader interface {
	UserByID(ctx context.Context, userID string) (account.UserView, bool, error)
	UserByVerificationToken(ctx context.Context, tokenHash string) (account.UserView, bool, error)
	KeyByHash(ctx context.Context, hash string) (account.KeyView, bool, error)
	KeysByUser(ctx context.Context, userID string) ([]account.KeyView, error)
	SessionByHash(ctx context.Context, hash string) (account.SessionView, bool, error)
}

// AgentLister lists the agent ids of a user, for GET /auth/status. The
// memories read model implements it.
type AgentLister interface {
	AgentIDs(ctx context.Context, userID string) ([]string, error)
}

// KeyUsage keeps when each API key was last used, for last_used_at
// (workers.UsageRecorder implements it, recording the uses in batches).
type KeyUsage interface {
	Record(userID, keyID string, at time.Time)
	LastUse(keyID string) (time.Time, bool)
}

// Mail is one plain-text message. Its fields match infra/mail.Message, so
// a mail.Message conversion adapts a mail sender (see MailerFunc).
type Mail struct {
	To      string
	Subject string
	Text    string
}

// Mailer delivers mail.
type Mailer interface {
	Send(ctx context.Context, m Mail) error
}

// MailerFunc adapts a function to Mailer, e.g.
//
//	commands.MailerFunc(func(ctx context.Context, m commands.Mail) error {
//		return sender.Send(ctx, mail.Message(m))
//	})
type MailerFunc func(ctx context.Context, m Mail) error

// Send implements Mailer.
func (f MailerFunc) Send(ctx context.Context, m Mail) error { return f(ctx, m) }
