package domain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"
)

// ActorKind says who caused an event.
type ActorKind string

const (
	ActorUser    ActorKind = "user"    // an unauthenticated request on behalf of a user (register, verify)
	ActorKey     ActorKind = "key"     // a request authenticated with an API key
	ActorSession ActorKind = "session" // a request authenticated with a session token
	ActorSystem  ActorKind = "system"  // the server itself (jobs, embedding queue, usage flush)
)

// Actor identifies who caused an event. ID is a user, key, session or
// component id, never a secret.
type Actor struct {
	Kind   ActorKind `json:"kind"`
	ID     string    `json:"id"`
	UserID string    `json:"user_id,omitempty"`
}

// Source is the interface a command came in through, which its events
// record beside the actor (the audit trail shows it). Events a sync or an
// import copies into a log say so instead (sync, import): they are another
// log's history replayed, not a decision made through an interface, and the
// actor and request id still say who sent them.
type Source string

// The sources. An event stored before sources were recorded has none ("").
const (
	SourceAPI    Source = "api"    // the REST API (SDKs, the dashboard)
	SourceMCP    Source = "mcp"    // an MCP tool, over stdio or /mcp
	SourceCLI    Source = "cli"    // the engram command line on a local stack
	SourceSync   Source = "sync"   // a sync push (or a pull applied to a local stack), whatever carried it
	SourceImport Source = "import" // an agent import, whatever carried it
	SourceSystem Source = "system" // a background worker (processing, embedding, usage)
)

// Metadata travels with every command into the events it appends.
type Metadata struct {
	Actor     Actor
	RequestID string
	Source    Source
}

// Event is one recorded fact. Version is the event's 0-based revision in its
// stream; Position is its 1-based place in the global log.
type Event struct {
	ID            string          `json:"id"`
	Stream        string          `json:"stream"`
	Version       uint64          `json:"version"`
	Position      uint64          `json:"position"`
	Type          string          `json:"type"`
	SchemaVersion int             `json:"schema_version"`
	Time          time.Time       `json:"time"`
	Actor         Actor           `json:"actor"`
	RequestID     string          `json:"request_id,omitempty"`
	Source        Source          `json:"source,omitempty"`
	Payload       json.RawMessage `json:"payload"`

	// decoding is set by EventRegistry.Decode: the payload decoded once
	// for every reader of this event in the process.
	decoding *decoding
}

// Decode unmarshals the payload into v, or copies the payload decoded
// already (EventRegistry.Decode) when v is a pointer of its type.
func (e Event) Decode(v any) error {
	if d := e.decoding; d != nil && d.payload != nil && reflect.TypeOf(d.payload) == reflect.TypeOf(v) {
		reflect.ValueOf(v).Elem().Set(reflect.ValueOf(d.payload).Elem())
		return nil
	}
	return json.Unmarshal(e.Payload, v)
}

// Payload is implemented by every event payload type.
type Payload interface {
	EventType() string
}

// NewEvent is an event about to be appended. The store assigns version,
// position and (when empty) ID and Time.
type NewEvent struct {
	ID            string
	Type          string
	SchemaVersion int
	Time          time.Time
	Actor         Actor
	RequestID     string
	Source        Source
	Payload       json.RawMessage
	// Claims are keys the event takes for good, across every stream of
	// the log (MemoryClaim: a memory id, which clients may choose). The
	// store commits them with the events or not at all: an Append whose
	// events claim a key that a committed event has claimed (or that two
	// of its own events claim) stores nothing and fails with a
	// *ClaimTakenError. Two nodes appending one key at once: one wins.
	Claims []string
}

// MemoryClaim is the claim key of a memory id: memory ids are global,
// while a memory lives in its agent's stream.
func MemoryClaim(memoryID string) string { return "memory/" + memoryID }

// ErrClaimTaken is wrapped by every *ClaimTakenError.
var ErrClaimTaken = errors.New("claim taken")

// ClaimTakenError is Append's refusal of an append whose events claim a
// key that another event has claimed. Nothing of the append was stored.
type ClaimTakenError struct {
	Key string
}

func (e *ClaimTakenError) Error() string { return "key " + e.Key + " is claimed by another event" }

// Unwrap makes errors.Is(err, ErrClaimTaken) hold.
func (e *ClaimTakenError) Unwrap() error { return ErrClaimTaken }

// AppendClaims are the claims of events in order, or an error naming a
// key that two of them claim (a *ClaimTakenError): what every adapter
// checks first.
func AppendClaims(events []NewEvent) ([]string, error) {
	var keys []string
	seen := map[string]bool{}
	for _, e := range events {
		for _, k := range e.Claims {
			if k == "" {
				return nil, errors.New("append: an empty claim key")
			}
			if seen[k] {
				return nil, &ClaimTakenError{Key: k}
			}
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// Expected stream versions for Append, besides an exact version (>= 0).
const (
	ExpectAny      int64 = -2 // append whatever the stream holds
	ExpectNoStream int64 = -1 // the stream must not exist yet
)

// ErrWrongExpectedVersion is returned by Append when the stream's version is
// not the expected one (optimistic concurrency).
var ErrWrongExpectedVersion = errors.New("wrong expected stream version")

// ErrLogEndsBefore is returned by ReadRange when the log ends before the
// position it was to read up to: a bound is a position the reader has seen
// in the log, so a log without it is not the log the reader knows (one
// restored from an older backup, say) and waiting for it would never end.
var ErrLogEndsBefore = errors.New("the log ends before the position read up to")

// AppendResult tells where appended events landed.
type AppendResult struct {
	// NextExpectedVersion is the version of the last appended event.
	NextExpectedVersion int64
	// LastPosition is the global position of the last appended event;
	// waiting for projections to reach it gives read-your-writes.
	LastPosition uint64
}

// EventPlace is where the log holds an event: its stream and position.
type EventPlace struct {
	Stream   string
	Position uint64
}

// StreamAppend is one stream's part of EventStore.AppendStreams.
type StreamAppend struct {
	Stream   string
	Expected int64
	Events   []NewEvent
}

// PartialAppendError is AppendStreams' failure on a log that appends one
// stream at a time (KurrentDB before 25.1): the first Landed parts were
// stored, and Err is why the next one was not.
type PartialAppendError struct {
	Landed int
	Err    error
}

func (e *PartialAppendError) Error() string {
	return fmt.Sprintf("%d part(s) of a multi-stream append were stored, then: %v", e.Landed, e.Err)
}

func (e *PartialAppendError) Unwrap() error { return e.Err }

// CheckStreamAppends refuses an AppendStreams call with no parts, a part
// with no events, or two parts for one stream (their expected versions
// could not both hold): what every adapter checks first.
func CheckStreamAppends(parts []StreamAppend) error {
	if len(parts) == 0 {
		return errors.New("append: no streams")
	}
	seen := map[string]bool{}
	for _, p := range parts {
		if len(p.Events) == 0 {
			return fmt.Errorf("append to %s: no events", p.Stream)
		}
		if seen[p.Stream] {
			return fmt.Errorf("append: stream %s named twice in one append", p.Stream)
		}
		seen[p.Stream] = true
	}
	return nil
}

// StreamReader reads one stream of the log: what folding an aggregate
// needs.
type StreamReader interface {
	// ReadStream returns the stream's events from version from on, in order.
	// A missing stream yields no events and no error.
	ReadStream(ctx context.Context, stream string, from uint64) ([]Event, error)
}

// EventStore is the append-only log that is the single source of truth.
// KurrentDB (streams, expected revision, $all subscriptions), PostgreSQL and
// SQLite implement it.
type EventStore interface {
	// Append writes events atomically to one stream if its current version
	// matches expected (ExpectAny, ExpectNoStream or an exact version).
	Append(ctx context.Context, stream string, expected int64, events []NewEvent) (AppendResult, error)
	// AppendStreams appends to several streams in one write: the parts in
	// order (each part's events land after the previous part's), each
	// checked against its expected version, the claims of every part
	// checked together, and one result per part. SQLite and PostgreSQL
	// commit every part or none (one transaction), and so does KurrentDB
	// 25.1 and later (one multi-stream append). Before 25.1 KurrentDB can
	// append to one stream atomically only: it appends the parts one by
	// one and stops at the first that fails, so the parts before it stay,
	// and the error is a *PartialAppendError saying how many landed.
	AppendStreams(ctx context.Context, parts []StreamAppend) ([]AppendResult, error)
	StreamReader
	// ReadAll returns up to limit events with Position > after, in order.
	ReadAll(ctx context.Context, after uint64, limit int) ([]Event, error)
	// ReadRange calls handle with batches of the events after position
	// after up to position until, in order, and returns nil once it has
	// handed the last of them. It reads what the log holds and never waits
	// for appends: until is a position the caller has seen (the head, or an
	// event it read), and a log that ends before it fails with
	// ErrLogEndsBefore after handing what there was. It returns the store's
	// error or handle's.
	ReadRange(ctx context.Context, after, until uint64, handle func(context.Context, []Event) error) error
	// SubscribeAll calls handle with batches of events after position after,
	// in order, catching up first and then following new appends, until ctx
	// ends or handle fails. It returns ctx.Err() or handle's error.
	SubscribeAll(ctx context.Context, after uint64, handle func(context.Context, []Event) error) error
	// Head is the position of the newest event (0 for an empty log).
	Head(ctx context.Context) (uint64, error)
}

// ClaimingPayload is a payload whose event takes keys for good (see
// NewEvent.Claims): MarshalEvent gives the event its claims.
type ClaimingPayload interface {
	Payload
	Claims() []string
}

// MarshalEvent turns a payload into a NewEvent carrying meta, and the
// payload's claims when it makes any.
func MarshalEvent(p Payload, meta Metadata) (NewEvent, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return NewEvent{}, err
	}
	e := NewEvent{Type: p.EventType(), SchemaVersion: 1, Actor: meta.Actor, RequestID: meta.RequestID, Source: meta.Source, Payload: raw}
	if c, ok := p.(ClaimingPayload); ok {
		e.Claims = c.Claims()
	}
	return e, nil
}
