package account

import "time"

// The views below are what the accounts read model answers with. Commands
// use them to find the stream to load and to authenticate; decisions are
// always taken on the aggregate loaded from the log, never on a view.

// UserView is a user as the read model shows it.
type UserView struct {
	ID        string
	Email     string
	Stream    string
	Verified  bool
	CreatedAt time.Time
}

// KeyView is an API key as the read model shows it.
type KeyView struct {
	ID         string
	UserID     string
	Name       string
	Prefix     string
	Hash       string
	CreatedAt  time.Time
	RevokedAt  time.Time // zero while active
	LastUsedAt time.Time // zero when never used
}

// Active reports whether the key can authenticate.
func (k KeyView) Active() bool { return k.RevokedAt.IsZero() }

// SessionView is a session as the read model shows it.
type SessionView struct {
	ID        string
	UserID    string
	KeyID     string
	Hash      string
	ExpiresAt time.Time
	// Ended is set when the key the session came from was revoked.
	Ended bool
}

// ValidAt reports whether the session can authenticate at now.
func (s SessionView) ValidAt(now time.Time) bool { return !s.Ended && now.Before(s.ExpiresAt) }
