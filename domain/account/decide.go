package account

import (
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-memory/engram/domain"
)

// Limits of the account rules.
const (
	// MaxKeyNameLen is the longest key name, in characters.
	MaxKeyNameLen = 100
	// DefaultMaxActiveKeys bounds the active keys of one user unless the
	// server is configured otherwise, so a leaked key cannot mint keys
	// without limit.
	DefaultMaxActiveKeys = 100
	// InitialKeyName names the key created by verification.
	InitialKeyName = "default"
)

// KeyMaterial is a newly generated key as the aggregate sees it: an id and
// the hash and display prefix of the secret, never the secret.
type KeyMaterial struct {
	ID     string
	Prefix string
	Hash   string
}

func (m KeyMaterial) record(name string, now time.Time) KeyRecord {
	return KeyRecord{KeyID: m.ID, Name: name, Prefix: m.Prefix, KeyHash: m.Hash, CreatedAt: now}
}

// Registration is the input of Register.
type Registration struct {
	// UserID is used only if the stream is new: an address keeps the
	// user id of its first registration.
	UserID    string
	Email     string // normalised (NormalizeEmail)
	TokenHash string
	Now       time.Time
	TokenTTL  time.Duration
	// ResendInterval is the least time between two verification mails to
	// one address, so that nobody can mail-bomb an address through
	// registration; zero allows any rate.
	ResendInterval time.Duration
}

// Register opens the account, or re-sends verification for an address that
// is registered but not verified (same user id, new token; earlier tokens
// stay valid until they expire). A verified address is a conflict; a
// re-send sooner than ResendInterval after the last token is rate_limited,
// with the seconds to wait in the detail retry_after_seconds. The time of
// the last token is in the log (VerificationIssued.IssuedAt), so the
// throttle holds across restarts and across servers sharing the log.
func (u *User) Register(r Registration) ([]domain.Payload, error) {
	if u.Verified {
		return nil, domain.Conflict("email_already_registered", "this e-mail address is already registered and verified; log in with one of its API keys")
	}
	if next := u.lastTokenIssuedAt.Add(r.ResendInterval); u.Exists() && r.Now.Before(next) {
		wait := int(math.Ceil(next.Sub(r.Now).Seconds()))
		return nil, domain.Errorf(domain.KindRateLimited,
			"a verification e-mail was sent to this address less than %s ago; check the inbox or retry after the time in Retry-After", r.ResendInterval).
			WithDetail(domain.DetailRetryAfterSeconds, wait)
	}
	issued := &VerificationIssued{TokenHash: r.TokenHash, IssuedAt: r.Now, ExpiresAt: r.Now.Add(r.TokenTTL)}
	if u.Exists() {
		issued.UserID = u.ID
		return []domain.Payload{issued}, nil
	}
	issued.UserID = r.UserID
	return []domain.Payload{&UserRegistered{UserID: r.UserID, Email: r.Email, RegisteredAt: r.Now}, issued}, nil
}

// Verify consumes a verification token and creates the initial key, named
// "default". Once the address is verified every token of it is spent.
func (u *User) Verify(tokenHash string, initial KeyMaterial, now time.Time) (domain.Payload, error) {
	t, ok := u.tokens[tokenHash]
	switch {
	case !ok:
		return nil, ErrUnknownToken()
	case t.used || u.Verified:
		return nil, &domain.Error{Kind: domain.KindGone, Code: "token_used", Message: "this verification token has already been used; the e-mail address is verified"}
	case !now.Before(t.expiresAt):
		return nil, &domain.Error{Kind: domain.KindGone, Code: "token_expired", Message: "this verification token has expired; register again to receive a new one"}
	}
	return &UserVerified{UserID: u.ID, TokenHash: tokenHash, VerifiedAt: now, InitialKey: initial.record(InitialKeyName, now)}, nil
}

// ErrUnknownToken is the answer to a verification token nobody issued.
func ErrUnknownToken() *domain.Error {
	return domain.Invalid("token", "unknown verification token: use the token from the most recent verification e-mail")
}

// ErrInvalidCredential is the answer to a credential that is unknown,
// revoked or expired. It never says which, so it leaks nothing.
func ErrInvalidCredential() *domain.Error {
	return domain.Errorf(domain.KindUnauthorized, "invalid, revoked or expired credential")
}

// StartSession exchanges an active key, identified by the hash of the
// presented secret, for a session.
func (u *User) StartSession(keyHash, sessionID, tokenHash string, now time.Time, ttl time.Duration) (domain.Payload, error) {
	var found *Key
	for _, k := range u.keys {
		// Compare with every key so the time taken says nothing about
		// which, if any, matched.
		if SameHash(k.Hash, keyHash) {
			found = k
		}
	}
	if found == nil || !found.Active() {
		return nil, ErrInvalidCredential()
	}
	return &SessionStarted{UserID: u.ID, SessionID: sessionID, KeyID: found.ID, TokenHash: tokenHash, StartedAt: now, ExpiresAt: now.Add(ttl)}, nil
}

// ValidateKeyName trims a key name and checks it: required, at most
// MaxKeyNameLen characters, no control characters.
func ValidateKeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", domain.Invalid("name", "field \"name\" is required and must not be blank")
	case !utf8.ValidString(name):
		return "", domain.Invalid("name", "field \"name\" must be valid UTF-8")
	case utf8.RuneCountInString(name) > MaxKeyNameLen:
		return "", domain.Invalid("name", "field \"name\" must be at most %d characters", MaxKeyNameLen)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", domain.Invalid("name", "field \"name\" must not contain control characters")
	}
	return name, nil
}

// CreateKey adds a named key, unless the user already has maxActive
// active keys. Its caller holds a key or a session of one, and an account
// has keys only once verified (Verify creates the first), so it needs no
// check that the address is verified.
func (u *User) CreateKey(name string, m KeyMaterial, maxActive int, now time.Time) (domain.Payload, error) {
	name, err := ValidateKeyName(name)
	if err != nil {
		return nil, err
	}
	if u.ActiveKeys() >= maxActive {
		return nil, domain.Conflict("key_limit_reached", "a user can have at most %d active API keys; revoke one first", maxActive)
	}
	return &APIKeyCreated{UserID: u.ID, Key: m.record(name, now)}, nil
}

// RevokeKey deactivates a key; the last active key cannot be revoked, so a
// user never locks themselves out.
func (u *User) RevokeKey(keyID string, now time.Time) (domain.Payload, error) {
	if _, err := u.activeKey(keyID); err != nil {
		return nil, err
	}
	if u.ActiveKeys() <= 1 {
		return nil, domain.Conflict("last_active_key", "cannot revoke the last active API key: create another key first, or cycle this one")
	}
	return &APIKeyRevoked{UserID: u.ID, KeyID: keyID, RevokedAt: now}, nil
}

// CycleKey replaces a key by a new one with the same name, atomically.
func (u *User) CycleKey(keyID string, m KeyMaterial, now time.Time) (domain.Payload, error) {
	old, err := u.activeKey(keyID)
	if err != nil {
		return nil, err
	}
	return &APIKeyCycled{UserID: u.ID, OldKeyID: old.ID, RevokedAt: now, NewKey: m.record(old.Name, now)}, nil
}

// activeKey finds one of the user's keys that is still active. Another
// user's key is "not found", exactly like a key that does not exist.
func (u *User) activeKey(keyID string) (*Key, error) {
	k, ok := u.keys[keyID]
	if !ok {
		return nil, domain.NotFound("API key")
	}
	if !k.Active() {
		return nil, domain.Conflict("key_already_revoked", "API key %s is already revoked", keyID)
	}
	return k, nil
}
