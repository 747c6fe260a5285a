package client

import (
	"context"
	"net/http"
	"time"
)

// Registration is the data of POST /auth/register.
type Registration struct {
	UserID  string `json:"user_id"`
	Message string `json:"message"`
}

// Verification is the data of POST /auth/verify. APIKey is the user's
// first key, shown only here.
type Verification struct {
	UserID   string `json:"user_id"`
	Verified bool   `json:"verified"`
	APIKey   string `json:"api_key"`
}

// Session is the data of POST /auth/login. Token is accepted as a Bearer
// credential until ExpiresAt (use it with WithAPIKey).
type Session struct {
	UserID    string    `json:"user_id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// AuthStatus is the data of GET /auth/status.
type AuthStatus struct {
	Authenticated bool      `json:"authenticated"`
	UserID        string    `json:"user_id"`
	Email         string    `json:"email"`
	CreatedAt     time.Time `json:"created_at"`
	Agents        []string  `json:"agents"`
}

// APIKey is a key as GET /auth/keys lists it: never the secret.
type APIKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"` // nil: never used
	IsActive   bool       `json:"is_active"`
}

// CreatedAPIKey is the data of POST /auth/keys. Key is the full secret,
// shown only here.
type CreatedAPIKey struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Key       string    `json:"key"`
	Prefix    string    `json:"prefix"`
	CreatedAt time.Time `json:"created_at"`
}

// RevokedAPIKey is the data of DELETE /auth/keys/{id}.
type RevokedAPIKey struct {
	ID        string    `json:"id"`
	Revoked   bool      `json:"revoked"`
	RevokedAt time.Time `json:"revoked_at"`
}

// CycledAPIKey is the data of POST /auth/keys/{id}/cycle. NewKey is the
// full secret, shown only here.
type CycledAPIKey struct {
	OldKeyID      string `json:"old_key_id"`
	OldKeyRevoked bool   `json:"old_key_revoked"`
	NewKeyID      string `json:"new_key_id"`
	NewKey        string `json:"new_key"`
	NewKeyPrefix  string `json:"new_key_prefix"`
}

// Register asks for an account; the server mails a verification token.
func (c *Client) Register(ctx context.Context, email string) (*Registration, error) {
	var out Registration
	err := c.call(ctx, http.MethodPost, "/auth/register", nil, map[string]string{"email": email}, &out, noSecret)
	return ret(&out, err)
}

// Verify redeems the mailed token and returns the first API key.
func (c *Client) Verify(ctx context.Context, token string) (*Verification, error) {
	var out Verification
	err := c.call(ctx, http.MethodPost, "/auth/verify", nil, map[string]string{"token": token}, &out, bodySecret)
	return ret(&out, err)
}

// Login exchanges an API key for a session token.
func (c *Client) Login(ctx context.Context, apiKey string) (*Session, error) {
	var out Session
	err := c.call(ctx, http.MethodPost, "/auth/login", nil, map[string]string{"api_key": apiKey}, &out, bodySecret)
	return ret(&out, err)
}

// Status describes the credential's user.
func (c *Client) Status(ctx context.Context) (*AuthStatus, error) {
	var out AuthStatus
	err := c.call(ctx, http.MethodGet, "/auth/status", nil, nil, &out, bearer)
	return ret(&out, err)
}

// ListKeys lists the user's keys, active and revoked.
func (c *Client) ListKeys(ctx context.Context) ([]APIKey, error) {
	var out struct {
		Keys []APIKey `json:"keys"`
	}
	if err := c.call(ctx, http.MethodGet, "/auth/keys", nil, nil, &out, bearer); err != nil {
		return nil, err
	}
	return out.Keys, nil
}

// CreateKey creates a named key.
func (c *Client) CreateKey(ctx context.Context, name string) (*CreatedAPIKey, error) {
	var out CreatedAPIKey
	err := c.call(ctx, http.MethodPost, "/auth/keys", nil, map[string]string{"name": name}, &out, bearer)
	return ret(&out, err)
}

// RevokeKey deactivates a key at once.
func (c *Client) RevokeKey(ctx context.Context, keyID string) (*RevokedAPIKey, error) {
	var out RevokedAPIKey
	err := c.call(ctx, http.MethodDelete, "/auth/keys/"+pathID(keyID), nil, nil, &out, bearer)
	return ret(&out, err)
}

// CycleKey replaces a key by a new one in one step.
func (c *Client) CycleKey(ctx context.Context, keyID string) (*CycledAPIKey, error) {
	var out CycledAPIKey
	err := c.call(ctx, http.MethodPost, "/auth/keys/"+pathID(keyID)+"/cycle", nil, nil, &out, bearer)
	return ret(&out, err)
}

// ret returns out, or nil and err: callers never see a half-filled value.
func ret[T any](out *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return out, nil
}
