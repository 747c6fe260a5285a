package account

import (
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Event types of the user stream. The names are part of the log format:
// never rename one, add a new type instead.
const (
	TypeUserRegistered     = "UserRegistered"
	TypeVerificationIssued = "VerificationIssued"
	TypeUserVerified       = "UserVerified"
	TypeAPIKeyCreated      = "APIKeyCreated"
	TypeAPIKeyRevoked      = "APIKeyRevoked"
	TypeAPIKeyCycled       = "APIKeyCycled"
	TypeSessionStarted     = "SessionStarted"
	TypeAPIKeysUsed        = "APIKeysUsed"
)

// Payloads carry SHA-256 hex hashes and 12-character display prefixes of
// secrets, never a secret itself. Times are in the payload (not only in the
// envelope) because they are facts the rules depend on, such as expiry.

// UserRegistered opens a user stream.
type UserRegistered struct {
	UserID       string    `json:"user_id"`
	Email        string    `json:"email"`
	RegisteredAt time.Time `json:"registered_at"`
}

// VerificationIssued records a verification mail's token (as a hash). It
// follows UserRegistered, and every re-registration of an unverified address.
type VerificationIssued struct {
	UserID    string    `json:"user_id"`
	TokenHash string    `json:"token_hash"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// KeyRecord is an API key as events record it.
type KeyRecord struct {
	KeyID     string    `json:"key_id"`
	Name      string    `json:"name"`
	Prefix    string    `json:"prefix"`
	KeyHash   string    `json:"key_hash"`
	CreatedAt time.Time `json:"created_at"`
}

// UserVerified consumes a verification token and creates the initial key.
type UserVerified struct {
	UserID     string    `json:"user_id"`
	TokenHash  string    `json:"token_hash"`
	VerifiedAt time.Time `json:"verified_at"`
	InitialKey KeyRecord `json:"initial_key"`
}

// APIKeyCreated adds a key.
type APIKeyCreated struct {
	UserID string    `json:"user_id"`
	Key    KeyRecord `json:"key"`
}

// APIKeyRevoked deactivates a key and ends the sessions started from it.
type APIKeyRevoked struct {
	UserID    string    `json:"user_id"`
	KeyID     string    `json:"key_id"`
	RevokedAt time.Time `json:"revoked_at"`
}

// APIKeyCycled revokes one key and creates its replacement in one event, so
// no reader ever sees both keys active or neither.
type APIKeyCycled struct {
	UserID    string    `json:"user_id"`
	OldKeyID  string    `json:"old_key_id"`
	RevokedAt time.Time `json:"revoked_at"`
	NewKey    KeyRecord `json:"new_key"`
}

// SessionStarted records a login: a session token (as a hash) bound to the
// key that was exchanged for it.
type SessionStarted struct {
	UserID    string    `json:"user_id"`
	SessionID string    `json:"session_id"`
	KeyID     string    `json:"key_id"`
	TokenHash string    `json:"token_hash"`
	StartedAt time.Time `json:"started_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// KeyUse is the latest use of one key.
type KeyUse struct {
	KeyID      string    `json:"key_id"`
	LastUsedAt time.Time `json:"last_used_at"`
}

// APIKeysUsed is a coalesced batch of key uses: recording every request
// would make the log grow with traffic, so uses are collected in memory and
// flushed periodically.
type APIKeysUsed struct {
	UserID string   `json:"user_id"`
	Uses   []KeyUse `json:"uses"`
}

func (UserRegistered) EventType() string     { return TypeUserRegistered }
func (VerificationIssued) EventType() string { return TypeVerificationIssued }
func (UserVerified) EventType() string       { return TypeUserVerified }
func (APIKeyCreated) EventType() string      { return TypeAPIKeyCreated }
func (APIKeyRevoked) EventType() string      { return TypeAPIKeyRevoked }
func (APIKeyCycled) EventType() string       { return TypeAPIKeyCycled }
func (SessionStarted) EventType() string     { return TypeSessionStarted }
func (APIKeysUsed) EventType() string        { return TypeAPIKeysUsed }

// Decode returns the typed payload of an account event, or nil and no error
// for an event type that is not an account event.
func Decode(e domain.Event) (domain.Payload, error) {
	var p domain.Payload
	switch e.Type {
	case TypeUserRegistered:
		p = &UserRegistered{}
	case TypeVerificationIssued:
		p = &VerificationIssued{}
	case TypeUserVerified:
		p = &UserVerified{}
	case TypeAPIKeyCreated:
		p = &APIKeyCreated{}
	case TypeAPIKeyRevoked:
		p = &APIKeyRevoked{}
	case TypeAPIKeyCycled:
		p = &APIKeyCycled{}
	case TypeSessionStarted:
		p = &SessionStarted{}
	case TypeAPIKeysUsed:
		p = &APIKeysUsed{}
	default:
		return nil, nil
	}
	if err := e.Decode(p); err != nil {
		return nil, fmt.Errorf("account: decode %s at %d: %w", e.Type, e.Position, err)
	}
	return p, nil
}

// Events lists the decoders of the account event types for an event
// registry (domain.NewEventRegistry).
func Events() []domain.EventDecoder {
	return []domain.EventDecoder{
		domain.DecoderOf[UserRegistered](), domain.DecoderOf[VerificationIssued](), domain.DecoderOf[UserVerified](),
		domain.DecoderOf[APIKeyCreated](), domain.DecoderOf[APIKeyRevoked](), domain.DecoderOf[APIKeyCycled](),
		domain.DecoderOf[SessionStarted](), domain.DecoderOf[APIKeysUsed](),
	}
}
