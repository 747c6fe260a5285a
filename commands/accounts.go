package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
)

// Defaults of AccountsConfig.
const (
	DefaultSessionTTL      = 24 * time.Hour
	DefaultVerificationTTL = 24 * time.Hour
	// DefaultVerificationResendInterval is the least time between two
	// verification mails to one address.
	DefaultVerificationResendInterval = time.Minute
	DefaultPublicURL                  = "http://127.0.0.1:8080"
	// mailTimeout bounds sending one verification mail.
	mailTimeout = 30 * time.Second
)

// AccountsConfig holds the dependencies and settings of Accounts.
type AccountsConfig struct {
	Writer *EventWriter     // required
	Reader AccountReadModel // required
	Mailer Mailer           // required
	// Usage records key use for last_used_at; nil leaves it untracked.
	Usage KeyUsage
	// Agents lists a user's agents for Status; nil means no agents.
	Agents AgentLister
	Logger *slog.Logger // nil discards
	// PublicURL is the server's external root URL, used in the link of
	// the verification mail. Default DefaultPublicURL.
	PublicURL       string
	SessionTTL      time.Duration // default 24h
	VerificationTTL time.Duration // default 24h
	// VerificationResendInterval throttles verification mails per
	// address (account.Registration.ResendInterval). Default
	// DefaultVerificationResendInterval.
	VerificationResendInterval time.Duration
	// MaxActiveKeys bounds one user's active keys. Default
	// account.DefaultMaxActiveKeys.
	MaxActiveKeys int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Accounts handles the account and key commands, and authenticates bearer
// credentials (authenticate.go). Every change is an event on the user's
// stream, decided by the account.User aggregate and appended with the
// stream version it was decided on; a concurrent change makes the append
// fail and the command re-decide on fresh state.
type Accounts struct {
	cfg    AccountsConfig
	logger *slog.Logger
}

// NewAccounts checks cfg and fills its defaults.
func NewAccounts(cfg AccountsConfig) (*Accounts, error) {
	if cfg.Writer == nil || cfg.Reader == nil || cfg.Mailer == nil {
		return nil, errors.New("commands: accounts need a writer, a reader and a mailer")
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = DefaultPublicURL
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.VerificationTTL <= 0 {
		cfg.VerificationTTL = DefaultVerificationTTL
	}
	if cfg.VerificationResendInterval <= 0 {
		cfg.VerificationResendInterval = DefaultVerificationResendInterval
	}
	if cfg.MaxActiveKeys <= 0 {
		cfg.MaxActiveKeys = account.DefaultMaxActiveKeys
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Accounts{cfg: cfg, logger: logger}, nil
}

func (a *Accounts) now() time.Time { return a.cfg.Now().UTC() }

// Registered is the result of Register.
type Registered struct {
	UserID    string
	Email     string
	ExpiresAt time.Time // of the token just mailed
}

// Register opens an account for email, or re-sends the verification mail
// of an unverified one, and mails a fresh verification token.
func (a *Accounts) Register(ctx context.Context, meta domain.Metadata, email string) (Registered, error) {
	email, err := account.NormalizeEmail(email)
	if err != nil {
		return Registered{}, err
	}
	token, err := account.NewVerificationToken()
	if err != nil {
		return Registered{}, err
	}
	newID, err := uuid.NewV7()
	if err != nil {
		return Registered{}, fmt.Errorf("commands: user id: %w", err)
	}
	now := a.now()
	user, err := a.decide(ctx, account.StreamFor(email), meta, func(u *account.User) ([]domain.Payload, error) {
		return u.Register(account.Registration{
			UserID: newID.String(), Email: email, TokenHash: token.Hash,
			Now: now, TokenTTL: a.cfg.VerificationTTL, ResendInterval: a.cfg.VerificationResendInterval,
		})
	})
	if err != nil {
		return Registered{}, err
	}
	// The token is recorded before it is mailed: a mail that fails leaves
	// an unusable token behind, never a mailed token the server does not
	// know. Registering again sends a new one.
	sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mailTimeout)
	defer cancel()
	if err := a.cfg.Mailer.Send(sendCtx, verificationMail(a.cfg.PublicURL, email, token.Plain, a.cfg.VerificationTTL)); err != nil {
		a.logger.ErrorContext(ctx, "verification mail not sent", "user_id", user.ID, "request_id", meta.RequestID, "error", err)
		if errors.Is(err, domain.ErrStorageFull) {
			return Registered{}, &domain.Error{Kind: domain.KindStorageFull, Message: "the server's storage is full, so the verification e-mail could not be written; register again once space is freed", Err: err}
		}
		return Registered{}, &domain.Error{Kind: domain.KindProviderUnavailable, Message: "the verification e-mail could not be sent; try registering again later", Err: err}
	}
	a.logger.InfoContext(ctx, "verification mail sent", "user_id", user.ID, "request_id", meta.RequestID)
	return Registered{UserID: user.ID, Email: email, ExpiresAt: now.Add(a.cfg.VerificationTTL)}, nil
}

// Verified is the result of Verify.
type Verified struct {
	UserID string
	KeyID  string
	APIKey string // the full initial key, shown once
}

// Verify consumes a verification token and creates the user's first key.
func (a *Accounts) Verify(ctx context.Context, meta domain.Metadata, token string) (Verified, error) {
	if !account.LooksLikeVerificationToken(token) {
		return Verified{}, account.ErrUnknownToken()
	}
	hash := account.HashSecret(token)
	owner, found, err := a.cfg.Reader.UserByVerificationToken(ctx, hash)
	if err != nil {
		return Verified{}, err
	}
	if !found {
		return Verified{}, account.ErrUnknownToken()
	}
	key, material, err := newKey()
	if err != nil {
		return Verified{}, err
	}
	now := a.now()
	user, err := a.decide(ctx, owner.Stream, meta, func(u *account.User) ([]domain.Payload, error) {
		return one(u.Verify(hash, material, now))
	})
	if err != nil {
		return Verified{}, err
	}
	return Verified{UserID: user.ID, KeyID: material.ID, APIKey: key}, nil
}

// LoggedIn is the result of Login.
type LoggedIn struct {
	UserID    string
	SessionID string
	Token     string // the full session token, shown once
	ExpiresAt time.Time
}

// Login exchanges an active API key for a session token.
func (a *Accounts) Login(ctx context.Context, meta domain.Metadata, apiKey string) (LoggedIn, error) {
	if !account.LooksLikeAPIKey(apiKey) {
		return LoggedIn{}, account.ErrInvalidCredential()
	}
	keyHash := account.HashSecret(apiKey)
	key, found, err := a.cfg.Reader.KeyByHash(ctx, keyHash)
	if err != nil {
		return LoggedIn{}, err
	}
	if !found || !key.Active() {
		return LoggedIn{}, account.ErrInvalidCredential()
	}
	owner, err := a.userStream(ctx, key.UserID)
	if err != nil {
		return LoggedIn{}, err
	}
	token, err := account.NewSessionToken()
	if err != nil {
		return LoggedIn{}, err
	}
	sessionID, err := uuid.NewV7()
	if err != nil {
		return LoggedIn{}, fmt.Errorf("commands: session id: %w", err)
	}
	now := a.now()
	meta.Actor = domain.Actor{Kind: domain.ActorKey, ID: key.ID, UserID: key.UserID}
	var started *account.SessionStarted
	_, err = a.decide(ctx, owner, meta, func(u *account.User) ([]domain.Payload, error) {
		p, err := u.StartSession(keyHash, sessionID.String(), token.Hash, now, a.cfg.SessionTTL)
		if err == nil {
			started = p.(*account.SessionStarted)
		}
		return one(p, err)
	})
	if err != nil {
		return LoggedIn{}, err
	}
	a.recordUse(key.UserID, key.ID, now)
	return LoggedIn{UserID: started.UserID, SessionID: started.SessionID, Token: token.Plain, ExpiresAt: started.ExpiresAt}, nil
}

// Status describes the authenticated user.
type Status struct {
	UserID    string
	Email     string
	CreatedAt time.Time
	Agents    []string // sorted, never nil
}

// Status returns the caller's account and agents.
func (a *Accounts) Status(ctx context.Context, actor domain.Actor) (Status, error) {
	u, found, err := a.cfg.Reader.UserByID(ctx, actor.UserID)
	if err != nil {
		return Status{}, err
	}
	if !found {
		return Status{}, account.ErrInvalidCredential()
	}
	agents := []string{}
	if a.cfg.Agents != nil {
		ids, err := a.cfg.Agents.AgentIDs(ctx, u.ID)
		if err != nil {
			return Status{}, fmt.Errorf("commands: agents of user: %w", err)
		}
		agents = append(agents, ids...)
		slices.Sort(agents)
	}
	return Status{UserID: u.ID, Email: u.Email, CreatedAt: u.CreatedAt, Agents: agents}, nil
}

// KeyListing is one key in the listing; the secret is never part of it.
type KeyListing struct {
	ID         string
	Name       string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt time.Time // zero when never used
	Active     bool
}

// ListKeys returns the caller's keys, active and revoked, oldest first.
// last_used_at includes uses not yet flushed to the log.
func (a *Accounts) ListKeys(ctx context.Context, actor domain.Actor) ([]KeyListing, error) {
	keys, err := a.cfg.Reader.KeysByUser(ctx, actor.UserID)
	if err != nil {
		return nil, err
	}
	out := make([]KeyListing, len(keys))
	for i, k := range keys {
		out[i] = KeyListing{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, Active: k.Active()}
		if a.cfg.Usage != nil {
			if at, ok := a.cfg.Usage.LastUse(k.ID); ok && at.After(k.LastUsedAt) {
				out[i].LastUsedAt = at
			}
		}
	}
	return out, nil
}

// CreatedKey is the result of CreateKey.
type CreatedKey struct {
	ID        string
	Name      string
	Key       string // the full key, shown once
	Prefix    string
	CreatedAt time.Time
}

// CreateKey adds a named key for the caller.
func (a *Accounts) CreateKey(ctx context.Context, meta domain.Metadata, name string) (CreatedKey, error) {
	name, err := account.ValidateKeyName(name)
	if err != nil {
		return CreatedKey{}, err
	}
	stream, err := a.userStream(ctx, meta.Actor.UserID)
	if err != nil {
		return CreatedKey{}, err
	}
	key, material, err := newKey()
	if err != nil {
		return CreatedKey{}, err
	}
	now := a.now()
	if _, err := a.decide(ctx, stream, meta, func(u *account.User) ([]domain.Payload, error) {
		return one(u.CreateKey(name, material, a.cfg.MaxActiveKeys, now))
	}); err != nil {
		return CreatedKey{}, err
	}
	return CreatedKey{ID: material.ID, Name: name, Key: key, Prefix: material.Prefix, CreatedAt: now}, nil
}

// RevokedKey is the result of RevokeKey.
type RevokedKey struct {
	ID        string
	RevokedAt time.Time
}

// RevokeKey deactivates one of the caller's keys and ends the sessions
// started from it.
func (a *Accounts) RevokeKey(ctx context.Context, meta domain.Metadata, keyID string) (RevokedKey, error) {
	stream, err := a.userStream(ctx, meta.Actor.UserID)
	if err != nil {
		return RevokedKey{}, err
	}
	now := a.now()
	if _, err := a.decide(ctx, stream, meta, func(u *account.User) ([]domain.Payload, error) {
		return one(u.RevokeKey(keyID, now))
	}); err != nil {
		return RevokedKey{}, err
	}
	return RevokedKey{ID: keyID, RevokedAt: now}, nil
}

// CycledKey is the result of CycleKey.
type CycledKey struct {
	OldKeyID     string
	NewKeyID     string
	NewKey       string // the full key, shown once
	NewKeyPrefix string
}

// CycleKey replaces one of the caller's keys by a new key in one event.
func (a *Accounts) CycleKey(ctx context.Context, meta domain.Metadata, keyID string) (CycledKey, error) {
	stream, err := a.userStream(ctx, meta.Actor.UserID)
	if err != nil {
		return CycledKey{}, err
	}
	key, material, err := newKey()
	if err != nil {
		return CycledKey{}, err
	}
	now := a.now()
	if _, err := a.decide(ctx, stream, meta, func(u *account.User) ([]domain.Payload, error) {
		return one(u.CycleKey(keyID, material, now))
	}); err != nil {
		return CycledKey{}, err
	}
	return CycledKey{OldKeyID: keyID, NewKeyID: material.ID, NewKey: key, NewKeyPrefix: material.Prefix}, nil
}

// decide loads the user stream, lets decision choose the events and
// appends them at the version they were decided on, retrying on a
// concurrent append. For commands without a credential (register, verify)
// the user becomes the actor. It returns the state after the events.
func (a *Accounts) decide(ctx context.Context, stream string, meta domain.Metadata, decision func(*account.User) ([]domain.Payload, error)) (*account.User, error) {
	var user *account.User
	err := RetryOnConflict(ctx, func() error {
		events, err := a.cfg.Writer.Store().ReadStream(ctx, stream, 0)
		if err != nil {
			return fmt.Errorf("commands: load %s: %w", stream, err)
		}
		if user, err = account.Load(events); err != nil {
			return err
		}
		expected := user.Version
		payloads, err := decision(user)
		if err != nil {
			return err
		}
		user.Apply(payloads...)
		m := meta
		if m.Actor.Kind == "" {
			m.Actor = domain.Actor{Kind: domain.ActorUser, ID: user.ID, UserID: user.ID}
		}
		_, err = a.cfg.Writer.Append(ctx, stream, expected, m, payloads...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return user, nil
}

// userStream finds the stream of an authenticated user.
func (a *Accounts) userStream(ctx context.Context, userID string) (string, error) {
	u, found, err := a.cfg.Reader.UserByID(ctx, userID)
	if err != nil {
		return "", err
	}
	if !found {
		return "", account.ErrInvalidCredential()
	}
	return u.Stream, nil
}

func (a *Accounts) recordUse(userID, keyID string, at time.Time) {
	if a.cfg.Usage != nil {
		a.cfg.Usage.Record(userID, keyID, at)
	}
}

// newKey generates an API key with a fresh id.
func newKey() (string, account.KeyMaterial, error) {
	secret, err := account.NewAPIKey()
	if err != nil {
		return "", account.KeyMaterial{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", account.KeyMaterial{}, fmt.Errorf("commands: key id: %w", err)
	}
	return secret.Plain, account.KeyMaterial{ID: id.String(), Prefix: secret.Prefix, Hash: secret.Hash}, nil
}

// one adapts a single-event decision to decide.
func one(p domain.Payload, err error) ([]domain.Payload, error) {
	if err != nil {
		return nil, err
	}
	return []domain.Payload{p}, nil
}
