// Package webhook describes signed webhooks: a user's subscriptions to
// events of their own account (stream "webhooks-<user id>"), the
// notifications the log's events become, and the deliveries that carry
// them to the subscribers' URLs, signed with each subscription's secret.
package webhook

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/engram-memory/engram/domain"
)

// The events a webhook may subscribe to: a closed list, so a typo is
// refused instead of a subscription that never fires.
const (
	MemoryCreated     = "memory.created"
	MemoryUpdated     = "memory.updated"
	MemoryForgotten   = "memory.forgotten"
	SuggestionCreated = "suggestion.created"
	JobCompleted      = "job.completed"
	KeyRevoked        = "key.revoked"
)

// EventNames lists the events a webhook may subscribe to, sorted.
func EventNames() []string {
	return []string{JobCompleted, KeyRevoked, MemoryCreated, MemoryForgotten, MemoryUpdated, SuggestionCreated}
}

// Limits of a user's webhooks.
const (
	// MaxPerUser bounds a user's webhooks at once.
	MaxPerUser = 10
	// MaxURLLength bounds a webhook's URL, in bytes.
	MaxURLLength = 2048
)

// Event types of a webhooks stream. The names are part of the log format.
const (
	TypeRegistered = "WebhookRegistered"
	TypeDeleted    = "WebhookDeleted"
)

// Registered records a new webhook. Secret is the HMAC key its deliveries
// are signed with: the log keeps it (see docs/operations.md#webhooks) so
// that a rebuilt read model, on any node, can still sign.
type Registered struct {
	UserID    string    `json:"user_id"`
	WebhookID string    `json:"webhook_id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"created_at"`
}

// Deleted records a webhook's removal; its pending deliveries are dropped.
type Deleted struct {
	UserID    string    `json:"user_id"`
	WebhookID string    `json:"webhook_id"`
	DeletedAt time.Time `json:"deleted_at"`
}

func (Registered) EventType() string { return TypeRegistered }
func (Deleted) EventType() string    { return TypeDeleted }

// Events lists the decoders of the webhook event types for an event
// registry (domain.NewEventRegistry).
func Events() []domain.EventDecoder {
	return []domain.EventDecoder{domain.DecoderOf[Registered](), domain.DecoderOf[Deleted]()}
}

// Stream is the stream of a user's webhooks.
func Stream(userID string) string { return "webhooks-" + userID }

// View is a webhook as its owner sees it: never the secret.
type View struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
}

// Subscriptions is the aggregate of one user's webhooks, folded from
// their stream.
type Subscriptions struct {
	userID  string
	active  []string // ids, in creation order
	version int64
}

// Fold rebuilds a user's webhooks from their stream's events.
func Fold(userID string, events []domain.Event) (*Subscriptions, error) {
	s := &Subscriptions{userID: userID, version: domain.ExpectNoStream}
	for _, e := range events {
		switch e.Type {
		case TypeRegistered:
			var p Registered
			if err := e.Decode(&p); err != nil {
				return nil, fmt.Errorf("webhook: decode %s: %w", e.Type, err)
			}
			s.active = append(s.active, p.WebhookID)
		case TypeDeleted:
			var p Deleted
			if err := e.Decode(&p); err != nil {
				return nil, fmt.Errorf("webhook: decode %s: %w", e.Type, err)
			}
			s.active = slices.DeleteFunc(s.active, func(id string) bool { return id == p.WebhookID })
		}
		s.version = int64(e.Version)
	}
	return s, nil
}

// Version is the stream version the aggregate was folded at (the expected
// version of the next append).
func (s *Subscriptions) Version() int64 { return s.version }

// Register decides a new webhook: the URL and events must be valid
// (ValidateURL, ValidateEvents) and the user below MaxPerUser.
func (s *Subscriptions) Register(id, rawURL string, events []string, secret string, allowPrivate bool, now time.Time) (Registered, error) {
	u, err := ValidateURL(rawURL, allowPrivate)
	if err != nil {
		return Registered{}, err
	}
	events, err = ValidateEvents(events)
	if err != nil {
		return Registered{}, err
	}
	if len(s.active) >= MaxPerUser {
		e := domain.Errorf(domain.KindQuotaExceeded, "at most %d webhooks per user: delete one first", MaxPerUser)
		e.Code = "webhook_limit"
		return Registered{}, e.WithDetail("limit", MaxPerUser)
	}
	return Registered{UserID: s.userID, WebhookID: id, URL: u.String(), Events: events, Secret: secret, CreatedAt: now.UTC()}, nil
}

// Delete decides the removal of one of the user's webhooks.
func (s *Subscriptions) Delete(id string, now time.Time) (Deleted, error) {
	if !slices.Contains(s.active, id) {
		return Deleted{}, domain.NotFound("webhook")
	}
	return Deleted{UserID: s.userID, WebhookID: id, DeletedAt: now.UTC()}, nil
}

// ValidateURL checks a webhook's target: an absolute https URL (http too
// when allowPrivate), at most MaxURLLength bytes, without credentials or
// fragment, whose host, when an IP literal, is a public address
// (ForbiddenAddr). A host name is resolved and checked again when the
// registration is made and at every dial, which this check cannot do.
func ValidateURL(raw string, allowPrivate bool) (*url.URL, error) {
	invalid := func(format string, args ...any) (*url.URL, error) {
		return nil, domain.Invalid("url", format, args...).WithCode("invalid_webhook_url")
	}
	if raw == "" {
		return invalid("url is required")
	}
	if len(raw) > MaxURLLength {
		return invalid("url is %d bytes; at most %d", len(raw), MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return invalid("url does not parse: %v", err)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowPrivate:
	default:
		return invalid("url must be https, not %q", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return invalid("url has no host")
	}
	if u.User != nil {
		return invalid("url must not carry credentials")
	}
	if u.Fragment != "" || strings.HasSuffix(raw, "#") {
		return invalid("url must not have a fragment")
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate && ForbiddenAddr(addr) {
		return invalid("url's host %s is a loopback, private or link-local address", addr)
	}
	return u, nil
}

// ForbiddenAddr reports whether a webhook may not be delivered to addr:
// loopback, private (RFC 1918, unique-local), carrier-grade NAT,
// link-local (cloud metadata services live there), unspecified, multicast
// and the other special-purpose ranges that are no one's public service.
func ForbiddenAddr(addr netip.Addr) bool {
	addr = addr.Unmap()
	if addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() || !addr.IsValid() {
		return true
	}
	for _, p := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "240.0.0.0/4", "64:ff9b::/96", "2001:db8::/32", "100::/64",
	} {
		if netip.MustParsePrefix(p).Contains(addr) {
			return true
		}
	}
	return false
}

// ValidateEvents checks a subscription's events against EventNames and
// returns them sorted without repeats; at least one is required.
func ValidateEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, domain.Invalid("events", "events must name at least one of %s", strings.Join(EventNames(), ", ")).
			WithCode("invalid_webhook_events").WithDetail("allowed", EventNames())
	}
	known := EventNames()
	out := make([]string, 0, len(events))
	for _, e := range events {
		if !slices.Contains(known, e) {
			return nil, domain.Invalid("events", "unknown event %q: events must be among %s", e, strings.Join(known, ", ")).
				WithCode("invalid_webhook_events").WithDetail("allowed", known)
		}
		out = append(out, e)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// NewSecret returns a fresh signing secret: "whsec_" and 32 random bytes
// in hex.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: secret: %w", err)
	}
	return "whsec_" + hex.EncodeToString(b), nil
}
