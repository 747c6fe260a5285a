// Package account is the User aggregate: one event stream per user holding
// the address, its verification, the user's API keys and sessions. State is
// folded from the stream; decisions are methods that return the events to
// append, or a *domain.Error saying why not. Decisions take ids, secrets and
// the time as inputs, so they are deterministic and easy to test.
package account

import (
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
)

// User is the state of one user stream.
type User struct {
	// Version is the stream version the state was folded from: the
	// expected version for the next append (-1 for a new stream).
	Version int64

	ID         string
	Email      string
	CreatedAt  time.Time
	Verified   bool
	VerifiedAt time.Time

	tokens   map[string]*verificationToken // by token hash
	keys     map[string]*Key               // by key id
	sessions map[string]*session           // by session id
	// lastTokenIssuedAt is when the newest verification token was issued.
	lastTokenIssuedAt time.Time
}

type verificationToken struct {
	expiresAt time.Time
	used      bool
}

// Key is one API key of the user.
type Key struct {
	ID        string
	Name      string
	Prefix    string
	Hash      string
	CreatedAt time.Time
	RevokedAt time.Time // zero while active
}

// Active reports whether the key can authenticate.
func (k *Key) Active() bool { return k.RevokedAt.IsZero() }

type session struct {
	keyID     string
	expiresAt time.Time
	ended     bool
}

// New is the state of a stream that does not exist yet.
func New() *User {
	return &User{
		Version:  -1,
		tokens:   make(map[string]*verificationToken),
		keys:     make(map[string]*Key),
		sessions: make(map[string]*session),
	}
}

// Load folds a user stream into its state.
func Load(events []domain.Event) (*User, error) {
	u := New()
	for _, e := range events {
		p, err := Decode(e)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, fmt.Errorf("account: unexpected event %s in stream %s", e.Type, e.Stream)
		}
		u.apply(p)
		u.Version = int64(e.Version)
	}
	return u, nil
}

// Exists reports whether the user has registered.
func (u *User) Exists() bool { return u.ID != "" }

// Key returns the user's key with the given id.
func (u *User) Key(id string) (*Key, bool) {
	k, ok := u.keys[id]
	return k, ok
}

// ActiveKeys counts the keys that are not revoked.
func (u *User) ActiveKeys() int {
	n := 0
	for _, k := range u.keys {
		if k.Active() {
			n++
		}
	}
	return n
}

// Apply folds events just decided into the state, so a command can answer
// from the state it produced. Version is not changed: it stays the version
// the events were decided on, the expected version of their append.
func (u *User) Apply(payloads ...domain.Payload) {
	for _, p := range payloads {
		u.apply(p)
	}
}

func (u *User) apply(p domain.Payload) {
	switch e := p.(type) {
	case *UserRegistered:
		u.ID, u.Email, u.CreatedAt = e.UserID, e.Email, e.RegisteredAt
	case *VerificationIssued:
		u.tokens[e.TokenHash] = &verificationToken{expiresAt: e.ExpiresAt}
		u.lastTokenIssuedAt = e.IssuedAt
	case *UserVerified:
		if t := u.tokens[e.TokenHash]; t != nil {
			t.used = true
		}
		u.Verified, u.VerifiedAt = true, e.VerifiedAt
		u.addKey(e.InitialKey)
	case *APIKeyCreated:
		u.addKey(e.Key)
	case *APIKeyRevoked:
		u.revoke(e.KeyID, e.RevokedAt)
	case *APIKeyCycled:
		u.revoke(e.OldKeyID, e.RevokedAt)
		u.addKey(e.NewKey)
	case *SessionStarted:
		u.sessions[e.SessionID] = &session{keyID: e.KeyID, expiresAt: e.ExpiresAt}
	case *APIKeysUsed:
		// Usage is shown by the read model; no decision depends on it.
	}
}

func (u *User) addKey(k KeyRecord) {
	u.keys[k.KeyID] = &Key{ID: k.KeyID, Name: k.Name, Prefix: k.Prefix, Hash: k.KeyHash, CreatedAt: k.CreatedAt}
}

// revoke deactivates a key and ends every session started from it: a
// session is only as good as the key it was exchanged for.
func (u *User) revoke(keyID string, at time.Time) {
	if k := u.keys[keyID]; k != nil {
		k.RevokedAt = at
	}
	for _, s := range u.sessions {
		if s.keyID == keyID {
			s.ended = true
		}
	}
}
