package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// Notification is what one event of the log tells its user's webhooks:
// ids and kinds, never memory content or credentials (the receiver reads
// what it needs with the API).
type Notification struct {
	UserID string
	// Event is one of EventNames.
	Event string
	Data  map[string]any
}

// notifying decodes the events that make a notification; it never
// changes.
var notifying = domain.MustEventRegistry([]domain.EventDecoder{
	domain.DecoderOf[memory.MemoryCreated](), domain.DecoderOf[memory.MemoryPatched](), domain.DecoderOf[memory.MemoryUpdated](),
	domain.DecoderOf[memory.MemoryForgotten](), domain.DecoderOf[processing.SuggestionCreated](), domain.DecoderOf[job.Completed](),
	domain.DecoderOf[account.APIKeyRevoked](), domain.DecoderOf[account.APIKeyCycled](),
})

// NotificationOf maps a log event to the notification it makes; ok is
// false for the events no webhook can subscribe to. An event decoded
// already (by the projections' registry) is not decoded again.
func NotificationOf(e domain.Event) (n Notification, ok bool, err error) {
	payload, err := notifying.Decode(e).Decoded()
	if err != nil {
		if !notifying.Knows(e.Type) { // decoded by a larger registry: no notification
			return n, false, nil
		}
		return n, false, fmt.Errorf("webhook: %w", err)
	}
	memoryEvent := func(ref memory.AgentRef, name, memoryID string, extra map[string]any) (Notification, bool, error) {
		data := map[string]any{"agent_id": ref.AgentID, "memory_id": memoryID}
		for k, v := range extra {
			data[k] = v
		}
		return Notification{UserID: ref.UserID, Event: name, Data: data}, true, nil
	}
	switch p := payload.(type) {
	case *memory.MemoryCreated:
		return memoryEvent(p.AgentRef, MemoryCreated, p.MemoryID, map[string]any{"memory_type": p.Type})
	case *memory.MemoryPatched:
		return memoryEvent(p.AgentRef, MemoryUpdated, p.MemoryID, nil)
	case *memory.MemoryUpdated:
		return memoryEvent(p.AgentRef, MemoryUpdated, p.MemoryID, nil)
	case *memory.MemoryForgotten:
		return memoryEvent(p.AgentRef, MemoryForgotten, p.MemoryID, nil)
	case *processing.SuggestionCreated:
		return Notification{UserID: p.UserID, Event: SuggestionCreated, Data: map[string]any{
			"agent_id": p.AgentID, "suggestion_id": p.SuggestionID, "memory_type": p.MemoryType,
		}}, true, nil
	case *job.Completed:
		return Notification{UserID: p.UserID, Event: JobCompleted, Data: map[string]any{"job_id": p.JobID}}, true, nil
	case *account.APIKeyRevoked:
		return Notification{UserID: p.UserID, Event: KeyRevoked, Data: map[string]any{"key_id": p.KeyID}}, true, nil
	case *account.APIKeyCycled:
		return Notification{UserID: p.UserID, Event: KeyRevoked, Data: map[string]any{"key_id": p.OldKeyID, "replaced_by": p.NewKey.KeyID}}, true, nil
	}
	return n, false, nil
}

// Body is the JSON a delivery posts: the same bytes on every attempt.
type Body struct {
	// DeliveryID is stable across attempts: receivers deduplicate by it
	// (delivery is at least once).
	DeliveryID string         `json:"delivery_id"`
	WebhookID  string         `json:"webhook_id"`
	Event      string         `json:"event"`
	EventID    string         `json:"event_id"`
	OccurredAt time.Time      `json:"occurred_at"`
	Data       map[string]any `json:"data"`
}

// DeliveryID is the id of the delivery of one log event to one webhook:
// the same wherever and however often it is derived.
func DeliveryID(webhookID, eventID string) string { return webhookID + "." + eventID }

// Headers of a delivery.
const (
	// SignatureHeader is "v1=" and the hex HMAC-SHA256, keyed with the
	// webhook's secret, of TimestampHeader's value, ".", and the body.
	SignatureHeader = "Engram-Signature"
	// TimestampHeader is the attempt's Unix time in seconds; receivers
	// refuse old ones (replays).
	TimestampHeader = "Engram-Timestamp"
	DeliveryHeader  = "Engram-Delivery"
	EventHeader     = "Engram-Event"
)

// Sign is the SignatureHeader value of body sent at timestamp (Unix
// seconds) under secret.
func Sign(secret string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether signature is body's signature at timestamp
// under secret, compared in constant time.
func Verify(secret string, timestamp int64, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, timestamp, body)), []byte(signature))
}

// MarshalBody is the body of a delivery.
func MarshalBody(b Body) (json.RawMessage, error) {
	b.OccurredAt = b.OccurredAt.UTC()
	return json.Marshal(b)
}
