package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// Limits of sync.
const (
	MaxSyncBatch       = 1000 // events per push or pull page
	DefaultSyncPage    = 500
	maxSyncVectorDims  = 8192
	maxSyncModelLength = 200
	// DefaultMaxSyncPushBytes bounds the payloads of one push, summed: a
	// push is like many writes in one request, and this keeps one request
	// from growing the log by more than a few megabytes.
	DefaultMaxSyncPushBytes = 4 << 20
)

// SyncEvent is one event of an agent's log as sync carries it between an
// Engram cloud and a local stack: its id (kept on both sides, which makes
// a repeated push or pull idempotent), type, time and payload. The payload
// is the event's own, without the owner: each side writes its own user.
type SyncEvent struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Time    time.Time       `json:"time"`
	Payload json.RawMessage `json:"payload"`
}

// SyncPage is a page of an agent's log after a cursor. Cursors count
// events of the agent's stream: Next is where the following page starts,
// Head how many events the stream holds.
type SyncPage struct {
	Events []SyncEvent `json:"events"`
	Next   uint64      `json:"next"`
	Head   uint64      `json:"head"`
}

// SyncPushResult counts what a push did with the events it received.
type SyncPushResult struct {
	Appended   int    `json:"appended"`   // new events, now in the log
	Duplicates int    `json:"duplicates"` // ids the log already held: a repeated push
	Skipped    int    `json:"skipped"`    // events sync does not carry (agent deletes, model switches, agent creation of an existing agent, changes of memories the agent does not have)
	Head       uint64 `json:"head"`
}

// ToSyncEvent is e as sync carries it: the payload without the owner.
func ToSyncEvent(e domain.Event) (SyncEvent, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(e.Payload, &fields); err != nil {
		return SyncEvent{}, fmt.Errorf("commands: sync: event %s: %w", e.ID, err)
	}
	delete(fields, "user_id")
	payload, err := json.Marshal(fields)
	if err != nil {
		return SyncEvent{}, err
	}
	return SyncEvent{ID: e.ID, Type: e.Type, Time: e.Time.UTC(), Payload: payload}, nil
}

// SyncLog is what sync needs of the event log besides appending and
// reading: which stream holds an event id, and a stream's version, without
// reading payloads. infra/sqlite.EventStore implements it.
type SyncLog interface {
	EventStreams(ctx context.Context, ids []string) (map[string]string, error)
	// EventPlaces is EventStreams with each event's position.
	EventPlaces(ctx context.Context, ids []string) (map[string]domain.EventPlace, error)
	// LastOfType is the position of the stream's last event of type typ,
	// 0 when it has none.
	LastOfType(ctx context.Context, stream, typ string) (uint64, error)
	StreamVersion(ctx context.Context, stream string) (int64, error)
	// ReadStreamPage returns up to limit of a stream's events from
	// version from on, in order: long streams are read in pages.
	ReadStreamPage(ctx context.Context, stream string, from uint64, limit int) ([]domain.Event, error)
}

// MemoryOwners tells whom a memory id belongs to, across users (memory
// ids are global); infra/sqlite.Memories implements it.
type MemoryOwners interface {
	MemoryOwner(ctx context.Context, id string) (userID, agentID string, found bool, err error)
	// OwnersOf is MemoryOwner of many ids in one read: the ids no memory
	// has are left out.
	OwnersOf(ctx context.Context, ids []string) (map[string]memory.AgentRef, error)
}

// SyncDeps are the dependencies of Sync.
type SyncDeps struct {
	Writer *EventWriter
	Log    SyncLog
	Owners MemoryOwners
	// Memories are the memory commands: a pushed event obeys their rules
	// (quotas, the agent's state, provenance, field limits) and is decided
	// on their read model. An agent that a push creates is bound to their
	// default model, as a first memory write would bind it.
	Memories *Memories
	// MaxPushBytes bounds the summed payload bytes of one push; 0 means
	// DefaultMaxSyncPushBytes.
	MaxPushBytes int64
}

// Sync moves an agent's events between machines: Pull reads the log,
// Push appends another machine's events with their ids. Both act on the
// caller's own agent only.
type Sync struct {
	d SyncDeps
	// pushEvents decodes the memory and settings events a push carries,
	// cognitionEvents the processing events an import carries.
	pushEvents, cognitionEvents *domain.EventRegistry
}

// NewSync returns the sync commands.
func NewSync(d SyncDeps) (*Sync, error) {
	if d.Writer == nil || d.Log == nil || d.Owners == nil || d.Memories == nil {
		return nil, errors.New("commands: sync needs a writer, the log, memory owners and the memory commands")
	}
	if d.MaxPushBytes < 0 {
		return nil, fmt.Errorf("commands: sync: the push byte limit must be 0 (default) or more, got %d", d.MaxPushBytes)
	}
	if d.MaxPushBytes == 0 {
		d.MaxPushBytes = DefaultMaxSyncPushBytes
	}
	push, err := domain.NewEventRegistry(memory.Events(), agentsettings.Events())
	if err != nil {
		return nil, fmt.Errorf("commands: sync: %w", err)
	}
	cognition, err := domain.NewEventRegistry(processing.Events())
	if err != nil {
		return nil, fmt.Errorf("commands: sync: %w", err)
	}
	return &Sync{d: d, pushEvents: push, cognitionEvents: cognition}, nil
}

func (s *Sync) reader() MemoryReadModel { return s.d.Memories.cfg.Reader }

// Pull returns up to limit events of the user's agent after the cursor.
func (s *Sync) Pull(ctx context.Context, userID, agentID string, after uint64, limit int) (SyncPage, error) {
	if err := memory.ValidateAgentID(agentID); err != nil {
		return SyncPage{}, err
	}
	if after > math.MaxInt64 {
		return SyncPage{}, domain.Invalid("after", "after must be at most %d, got %d", int64(math.MaxInt64), after)
	}
	switch {
	case limit == 0:
		limit = DefaultSyncPage
	case limit < 1 || limit > MaxSyncBatch:
		return SyncPage{}, domain.Invalid("limit", "limit must be between 1 and %d, got %d", MaxSyncBatch, limit).WithDetail("limit", MaxSyncBatch)
	}
	if _, found, err := s.reader().Agent(ctx, userID, agentID); err != nil || !found {
		if err == nil {
			err = domain.NotFound("agent")
		}
		return SyncPage{}, err
	}
	stream := memory.AgentStream(userID, agentID)
	events, err := s.d.Log.ReadStreamPage(ctx, stream, after, limit)
	if err != nil {
		return SyncPage{}, err
	}
	// The head is read after the page, so it is never behind it.
	version, err := s.d.Log.StreamVersion(ctx, stream)
	if err != nil {
		return SyncPage{}, err
	}
	page := SyncPage{Events: make([]SyncEvent, 0, len(events)), Head: uint64(version + 1)}
	for _, e := range events {
		se, err := ToSyncEvent(e)
		if err != nil {
			return SyncPage{}, err
		}
		page.Events = append(page.Events, se)
	}
	page.Next = after + uint64(len(page.Events))
	return page, nil
}

// Push appends events of another machine to the user's agent, in order,
// keeping their ids. Ids the agent's log already holds are skipped, so an
// interrupted push can simply be repeated.
//
// Every event obeys the rules of the command that would have made it
// (pushPlan): quotas, the agent's state, provenance, derived_from, time
// bounds and field limits. A push is all or nothing: every event is
// checked before any is appended, in one append. Agent deletes and model
// switches stay on the machine that made them, and an agent the cloud
// already has keeps its model (vectors of another model wait for its
// embedding queue). The cloud's log is the order of record: the last
// change of a memory in it wins.
func (s *Sync) Push(ctx context.Context, meta domain.Metadata, agentID string, events []SyncEvent) (SyncPushResult, error) {
	meta.Source = domain.SourceSync
	userID, err := userOf(meta)
	if err != nil {
		return SyncPushResult{}, err
	}
	if err := memory.ValidateAgentID(agentID); err != nil {
		return SyncPushResult{}, err
	}
	if len(events) == 0 || len(events) > MaxSyncBatch {
		return SyncPushResult{}, domain.Invalid("events", "events must hold 1 to %d events, got %d", MaxSyncBatch, len(events)).WithDetail("limit", MaxSyncBatch)
	}
	var size int64
	for i, ev := range events {
		if err := checkCanonicalUUID("id", ev.ID); err != nil {
			return SyncPushResult{}, BatchItemErrorIn("events", i, err)
		}
		// A time left out, or null (which encoding/json leaves zero, as it
		// decodes 0001-01-01T00:00:00Z), is refused: the event's time is
		// part of the log, not a default.
		if ev.Time.IsZero() {
			return SyncPushResult{}, BatchItemErrorIn("events", i, domain.Invalid("time", "time is required: the RFC 3339 time the event happened, of the year %d or later", domain.EarliestClientYear).
				WithDetail("minimum", domain.EarliestClientTime))
		}
		size += int64(len(ev.Payload))
	}
	if size > s.d.MaxPushBytes {
		return SyncPushResult{}, domain.Errorf(domain.KindTooLarge,
			"the payloads of this push hold %d bytes; the limit is %d per push: send fewer events per push", size, s.d.MaxPushBytes).
			WithCode("push_too_large").WithDetail("limit", s.d.MaxPushBytes)
	}
	ref := memory.AgentRef{UserID: userID, AgentID: agentID}
	return untilDecided(ctx, s, agentID, func() (SyncPushResult, error) {
		d, err := s.decide(ctx, meta, ref, events, nil)
		if err != nil {
			return d.res, err
		}
		return s.commit(ctx, d)
	})
}

// untilDecided runs push, which decides on the read model and appends
// expecting the agent stream's version it saw, until no other write
// overtakes it.
func untilDecided[R any](ctx context.Context, s *Sync, agentID string, push func() (R, error)) (R, error) {
	for attempt := 1; ; attempt++ {
		res, err := push()
		if !errors.Is(err, domain.ErrWrongExpectedVersion) {
			return res, err
		}
		// Another write reached the agent first: decide again once the
		// read model shows it. The wait is not this push's write, so it
		// does not become the request's consistency position (wait, not
		// Await).
		var zero R
		if attempt == s.d.Memories.cfg.AgentAttempts {
			return zero, errPushRaced(agentID, attempt)
		}
		head, err := s.d.Writer.Store().Head(ctx)
		if err != nil {
			return zero, err
		}
		if err := s.d.Writer.wait(ctx, head, nil); err != nil {
			return zero, errPushRaced(agentID, attempt)
		}
	}
}

// errPushRaced answers a push that other writes kept overtaking: it
// stored nothing.
func errPushRaced(agentID string, attempts int) error {
	return domain.Conflict("concurrent_writes", "agent %s changed %d times while this push was being decided; nothing was stored: retry the push", agentID, attempts)
}

// pushDecision is a push decided on the read model at the version of the
// agent stream it shows: the plan of the events to append, and what the
// push did with the events it received.
type pushDecision struct {
	stream  string
	version int64
	plan    *pushPlan
	res     SyncPushResult
}

// decide checks every event and plans those the agent's log does not
// hold yet. owned, when the caller read it ahead (an import), says for
// memory ids whether a memory has them (see pushPlan.owned).
func (s *Sync) decide(ctx context.Context, meta domain.Metadata, ref memory.AgentRef, events []SyncEvent, owned map[string]bool) (pushDecision, error) {
	stream := memory.AgentStream(ref.UserID, ref.AgentID)
	d := pushDecision{stream: stream}
	res := &d.res
	var err error
	if d.version, err = s.reader().StreamVersion(ctx, stream); err != nil {
		return d, err
	}
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = ev.ID
	}
	recorded, err := s.d.Log.EventStreams(ctx, ids)
	if err != nil {
		return d, err
	}
	p, err := s.newPushPlan(ctx, ref, meta)
	if err != nil {
		return d, err
	}
	p.owned = owned
	d.plan = p
	seen := map[string]SyncEvent{}
	for i, ev := range events {
		if in, ok := recorded[ev.ID]; ok && in != stream {
			return d, BatchItemErrorIn("events", i, errEventIDTaken(ev.ID))
		}
		if first, twice := seen[ev.ID]; twice && !sameSyncEvent(first, ev) {
			return d, BatchItemErrorIn("events", i, errEventIDTaken(ev.ID))
		}
		if _, twice := seen[ev.ID]; twice || recorded[ev.ID] == stream {
			res.Duplicates++
			continue
		}
		seen[ev.ID] = ev
		kept, err := p.add(ctx, ev)
		if err != nil {
			return d, BatchItemErrorIn("events", i, err)
		}
		if !kept {
			res.Skipped++
		}
	}
	res.Appended = len(p.out) - p.synthesized
	res.Head = uint64(d.version + 1)
	return d, nil
}

// commit appends every event the decision planned in one append expecting
// the version it was decided at (domain.ErrWrongExpectedVersion if another
// write came first), and waits until the read models show them.
func (s *Sync) commit(ctx context.Context, d pushDecision) (SyncPushResult, error) {
	res, p := d.res, d.plan
	if len(p.out) == 0 {
		return res, nil
	}
	// Memory ids are global, but each push appends to its own agent's
	// stream, and the read model checked above may not show yet a memory
	// that another push (on any node) is creating: each MemoryCreated
	// claims its id in the log, in the append, so of two pushes of one id
	// exactly one is stored and the other is refused whole.
	appended, err := s.d.Writer.Store().Append(ctx, d.stream, d.version, p.out)
	if err != nil {
		return res, takenMemoryID(err)
	}
	res.Head = uint64(appended.NextExpectedVersion + 1)
	return res, s.d.Writer.Await(ctx, appended.LastPosition)
}

// errEventIDTaken answers a pushed event whose id the log holds for
// another event, wherever that is: it says no more than that.
func errEventIDTaken(id string) error {
	return domain.Conflict("event_conflict", "event id %s is taken by another event: a new event needs a new id", id)
}

// sameSyncEvent reports whether a and b are one event sent twice.
func sameSyncEvent(a, b SyncEvent) bool {
	return a.Type == b.Type && a.Time.Equal(b.Time) && bytes.Equal(a.Payload, b.Payload)
}

// checkCanonicalUUID accepts only the canonical form of a UUID (lower
// case, hyphenated, no prefix or braces) and not the nil UUID, so one id
// has one spelling and a repeated event is recognised as such.
func checkCanonicalUUID(field, id string) error {
	u, err := uuid.Parse(id)
	if err != nil || u == uuid.Nil || u.String() != id {
		return domain.Invalid(field, "%s must be a UUID in canonical form (lower-case hex, hyphenated, not the nil UUID), got %q", field, id)
	}
	return nil
}

// BatchItemErrorIn places item i's error inside a list field, as
// BatchItemError does for memories.
func BatchItemErrorIn(field string, i int, err error) error {
	de, ok := domain.AsError(err)
	if !ok {
		return err
	}
	c := *de
	c.Message = fmt.Sprintf("%s[%d]: %s", field, i, de.Message)
	c = *c.WithDetail("index", i)
	if f, ok := de.Details["field"].(string); ok && f != "" {
		c = *c.WithDetail("field", fmt.Sprintf("%s[%d].%s", field, i, f))
	}
	return &c
}
