package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Limits of sync.
const (
	MaxSyncBatch       = 1000 // events per push or pull page
	DefaultSyncPage    = 500
	maxSyncVectorDims  = 8192
	maxSyncModelLength = 200
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
	Skipped    int    `json:"skipped"`    // events sync does not carry (agent deletes, model switches, agent creation of an existing agent)
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
	StreamVersion(ctx context.Context, stream string) (int64, error)
}

// MemoryOwners tells whom a memory id belongs to, across users (memory
// ids are global); infra/sqlite.Memories implements it.
type MemoryOwners interface {
	MemoryOwner(ctx context.Context, id string) (userID, agentID string, found bool, err error)
}

// SyncDeps are the dependencies of Sync.
type SyncDeps struct {
	Writer *EventWriter
	Log    SyncLog
	Reader MemoryReadModel
	Owners MemoryOwners
	// DefaultModel binds an agent that a push creates, as a first memory
	// write would.
	DefaultModel domain.EmbeddingModel
}

// Sync moves an agent's events between machines: Pull reads the log,
// Push appends another machine's events with their ids. Both act on the
// caller's own agent only.
type Sync struct {
	d SyncDeps
}

// NewSync returns the sync commands.
func NewSync(d SyncDeps) *Sync { return &Sync{d: d} }

// Pull returns up to limit events of the user's agent after the cursor.
func (s *Sync) Pull(ctx context.Context, userID, agentID string, after uint64, limit int) (SyncPage, error) {
	if err := memory.ValidateAgentID(agentID); err != nil {
		return SyncPage{}, err
	}
	switch {
	case limit == 0:
		limit = DefaultSyncPage
	case limit < 1 || limit > MaxSyncBatch:
		return SyncPage{}, domain.Invalid("limit", "limit must be between 1 and %d, got %d", MaxSyncBatch, limit).WithDetail("limit", MaxSyncBatch)
	}
	if _, found, err := s.d.Reader.Agent(ctx, userID, agentID); err != nil || !found {
		if err == nil {
			err = domain.NotFound("agent")
		}
		return SyncPage{}, err
	}
	events, err := s.d.Writer.Store().ReadStream(ctx, memory.AgentStream(userID, agentID), after)
	if err != nil {
		return SyncPage{}, err
	}
	page := SyncPage{Events: []SyncEvent{}, Head: after + uint64(len(events))}
	for _, e := range events[:min(limit, len(events))] {
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
// interrupted push can simply be repeated. Every event is checked as the
// command that made it would check it; agent deletes and model switches
// stay on the machine that made them, and an agent the cloud already has
// keeps its model (vectors of another model wait for its embedding queue).
// The cloud's log is the order of record: the last change of a memory in
// it wins.
func (s *Sync) Push(ctx context.Context, meta domain.Metadata, agentID string, events []SyncEvent) (SyncPushResult, error) {
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
	stream := memory.AgentStream(userID, agentID)
	ref := memory.AgentRef{UserID: userID, AgentID: agentID}
	var res SyncPushResult
	err = RetryOnConflict(ctx, func() error {
		res = SyncPushResult{}
		version, err := s.d.Log.StreamVersion(ctx, stream)
		if err != nil {
			return err
		}
		ids := make([]string, len(events))
		for i, ev := range events {
			ids[i] = ev.ID
		}
		recorded, err := s.d.Log.EventStreams(ctx, ids)
		if err != nil {
			return err
		}
		_, agentExists, err := s.d.Reader.Agent(ctx, userID, agentID)
		if err != nil {
			return err
		}
		p := pushPlan{s: s, ref: ref, meta: meta, agentExists: agentExists, types: map[string]memory.Type{}, contents: map[string]json.RawMessage{}}
		seen := map[string]bool{}
		for i, ev := range events {
			if in, ok := recorded[ev.ID]; ok && in != stream {
				return BatchItemErrorIn("events", i, domain.Conflict("event_conflict",
					"event %s is recorded in another log: a stack syncs with one agent of one account", ev.ID))
			}
			if recorded[ev.ID] == stream || seen[ev.ID] {
				res.Duplicates++
				continue
			}
			seen[ev.ID] = true
			kept, err := p.add(ctx, ev)
			if err != nil {
				return BatchItemErrorIn("events", i, err)
			}
			if !kept {
				res.Skipped++
			}
		}
		res.Appended = len(p.out) - p.synthesized
		res.Head = uint64(version + 1)
		if len(p.out) == 0 {
			return nil
		}
		// An exact version (or ExpectNoStream, which is -1) makes a
		// concurrent push of the same events retry on fresh state.
		appended, err := s.d.Writer.Store().Append(ctx, stream, version, p.out)
		if err != nil {
			return err
		}
		res.Head = uint64(appended.NextExpectedVersion + 1)
		return s.d.Writer.Await(ctx, appended.LastPosition)
	})
	return res, err
}

// pushPlan turns pushed events into the events the agent's log records.
type pushPlan struct {
	s           *Sync
	ref         memory.AgentRef
	meta        domain.Metadata
	agentExists bool
	types       map[string]memory.Type // memories created earlier in this push
	// contents are the contents of memories this push created or changed,
	// to which a later MemoryPatched of the same push applies.
	contents    map[string]json.RawMessage
	out         []domain.NewEvent
	synthesized int // AgentCreated events the push needed but did not carry
}

// add checks one event and plans it; kept is false for an event sync does
// not carry.
func (p *pushPlan) add(ctx context.Context, ev SyncEvent) (kept bool, err error) {
	if _, err := uuid.Parse(ev.ID); err != nil {
		return false, domain.Invalid("id", "id must be a UUID, got %q", ev.ID)
	}
	var payload domain.Payload
	switch ev.Type {
	case memory.AgentCreated{}.EventType():
		if p.agentExists {
			return false, nil
		}
		var a memory.AgentCreated
		if err := decodeSyncPayload(ev.Payload, &a); err != nil {
			return false, err
		}
		payload = p.agentCreated(a.CreatedAt)
	case memory.MemoryCreated{}.EventType():
		var m memory.MemoryCreated
		if err := decodeSyncPayload(ev.Payload, &m); err != nil {
			return false, err
		}
		if err := p.checkCreated(ctx, &m); err != nil {
			return false, err
		}
		payload = m
	case memory.MemoryEmbedded{}.EventType():
		var m memory.MemoryEmbedded
		if err := decodeSyncPayload(ev.Payload, &m); err != nil {
			return false, err
		}
		if err := checkMemoryID(m.MemoryID); err != nil {
			return false, err
		}
		if m.Model == "" || len(m.Model) > maxSyncModelLength || m.Dimensions < 1 || m.Dimensions > maxSyncVectorDims || len(m.Vector) != m.Dimensions {
			return false, domain.Invalid("payload.vector", "a vector needs a model name and exactly its dimensions (1-%d) of numbers", maxSyncVectorDims)
		}
		m.JobID = ""
		payload = m
	case memory.MemoryUpdated{}.EventType():
		var m memory.MemoryUpdated
		if err := decodeSyncPayload(ev.Payload, &m); err != nil {
			return false, err
		}
		t, known, err := p.typeOf(ctx, m.MemoryID)
		if err != nil || !known {
			return false, err // a change of a memory this agent does not have changes nothing
		}
		if m.Content, m.Tags, m.TextHash, err = p.replaceContent(t, m.MemoryID, m.Content, m.Tags); err != nil {
			return false, err
		}
		payload = m
	case memory.MemoryPatched{}.EventType():
		var m memory.MemoryPatched
		if err := decodeSyncPayload(ev.Payload, &m); err != nil {
			return false, err
		}
		t, known, err := p.typeOf(ctx, m.MemoryID)
		if err != nil || !known {
			return false, err // a change of a memory this agent does not have changes nothing
		}
		stored, err := p.contentOf(ctx, m.MemoryID)
		if err != nil {
			return false, err
		}
		content, err := memory.ApplyContentChanges(t, stored, m.Content)
		if err != nil {
			return false, domain.Invalid("payload.content", "%v", err)
		}
		if content, err = memory.NormalizeContent(t, content); err != nil {
			return false, err
		}
		if m.Tags != nil {
			tags, err := memory.NormalizeTags("payload.tags", *m.Tags)
			if err != nil {
				return false, err
			}
			m.Tags = &tags
		}
		text, err := memory.IndexedText(t, content)
		if err != nil {
			return false, err
		}
		m.TextHash = memory.TextHash(text)
		p.contents[m.MemoryID] = content
		payload = m
	case memory.MemoryRecovered{}.EventType():
		var m memory.MemoryRecovered
		if err := decodeSyncPayload(ev.Payload, &m); err != nil {
			return false, err
		}
		t, known, err := p.typeOf(ctx, m.MemoryID)
		if err != nil || !known {
			return false, err
		}
		if !(m.Strength >= 0 && m.Strength <= 1) {
			return false, domain.Invalid("payload.strength", "strength must be between 0 and 1")
		}
		m.Type = t
		if m.Content, m.Tags, m.TextHash, err = p.replaceContent(t, m.MemoryID, m.Content, m.Tags); err != nil {
			return false, err
		}
		payload = m
	case memory.MemoryProtected{}.EventType(), memory.MemoryUnprotected{}.EventType(),
		memory.MemoryWeakened{}.EventType(), memory.MemoryVerified{}.EventType():
		// Strength changes carry their result, computed by the command on
		// the machine that took them; they need a known memory and a
		// strength in [0, 1].
		var m struct {
			memory.AgentRef
			MemoryID string  `json:"memory_id"`
			Strength float64 `json:"strength"`
		}
		if err := json.Unmarshal(ev.Payload, &m); err != nil {
			return false, domain.Invalid("payload", "payload is not a %s: %v", ev.Type, err)
		}
		if _, known, err := p.typeOf(ctx, m.MemoryID); err != nil || !known {
			return false, err
		}
		if !(m.Strength >= 0 && m.Strength <= 1) {
			return false, domain.Invalid("payload.strength", "strength must be between 0 and 1")
		}
		if payload, err = strengthPayload(ev.Type, ev.Payload); err != nil {
			return false, err
		}
	case memory.MemoryForgotten{}.EventType():
		var m memory.MemoryForgotten
		if err := decodeSyncPayload(ev.Payload, &m); err != nil {
			return false, err
		}
		if err := checkMemoryID(m.MemoryID); err != nil {
			return false, err
		}
		payload = m
	case memory.MemoryPurged{}.EventType():
		var m memory.MemoryPurged
		if err := decodeSyncPayload(ev.Payload, &m); err != nil {
			return false, err
		}
		if err := checkMemoryID(m.MemoryID); err != nil {
			return false, err
		}
		payload = m
	case memory.AgentDeleted{}.EventType(), memory.AgentModelSwitched{}.EventType():
		return false, nil
	default:
		return false, domain.Invalid("type", "sync does not carry events of type %q", ev.Type)
	}
	if !p.agentExists {
		// The agent was never created here (or was deleted): create it
		// first, or the memories would have nowhere to go.
		if _, isCreate := payload.(memory.AgentCreated); !isCreate {
			if err := p.append(uuid.NewString(), time.Now(), p.agentCreated(time.Now())); err != nil {
				return false, err
			}
			p.synthesized++
		}
		p.agentExists = true
	}
	return true, p.append(ev.ID, ev.Time, withRef(payload, p.ref))
}

func (p *pushPlan) agentCreated(at time.Time) memory.AgentCreated {
	return memory.AgentCreated{AgentRef: p.ref, EmbeddingModel: p.s.d.DefaultModel.Name, Dimensions: p.s.d.DefaultModel.Dimensions, CreatedAt: at.UTC()}
}

func (p *pushPlan) append(id string, at time.Time, payload domain.Payload) error {
	e, err := domain.MarshalEvent(payload, p.meta)
	if err != nil {
		return err
	}
	e.ID, e.Time = id, at.UTC()
	p.out = append(p.out, e)
	return nil
}

// checkCreated validates a pushed memory as a create would, and stores
// its canonical form.
func (p *pushPlan) checkCreated(ctx context.Context, m *memory.MemoryCreated) error {
	if err := checkMemoryID(m.MemoryID); err != nil {
		return err
	}
	t, ok := memory.ParseType(string(m.Type))
	if !ok {
		return domain.Invalid("payload.type", "unknown memory type %q", m.Type)
	}
	m.Type = t
	_, _, taken, err := p.s.d.Owners.MemoryOwner(ctx, m.MemoryID)
	if err != nil {
		return err
	}
	if _, twice := p.types[m.MemoryID]; taken || twice {
		// Memory ids are global; whose it is stays unsaid.
		return domain.Conflict("memory_exists", "memory %s already exists (created by another event)", m.MemoryID)
	}
	if m.Content, err = memory.NormalizeContent(m.Type, m.Content); err != nil {
		return err
	}
	if m.Tags, err = memory.NormalizeTags("payload.tags", m.Tags); err != nil {
		return err
	}
	refs, err := memory.ParseRefs("payload.derived_from", m.DerivedFrom)
	if err != nil {
		return err
	}
	m.DerivedFrom = memory.RefStrings(refs)
	text, err := memory.IndexedText(m.Type, m.Content)
	if err != nil {
		return err
	}
	m.TextHash = memory.TextHash(text)
	m.CreatedAt = m.CreatedAt.UTC()
	p.types[m.MemoryID] = m.Type
	p.contents[m.MemoryID] = m.Content
	return nil
}

// replaceContent checks a whole new content and tags of a memory of type t
// as a write would, and records the content for later patches of this push.
func (p *pushPlan) replaceContent(t memory.Type, id string, content json.RawMessage, tags []string) (json.RawMessage, []string, string, error) {
	content, err := memory.NormalizeContent(t, content)
	if err != nil {
		return nil, nil, "", err
	}
	if tags, err = memory.NormalizeTags("payload.tags", tags); err != nil {
		return nil, nil, "", err
	}
	text, err := memory.IndexedText(t, content)
	if err != nil {
		return nil, nil, "", err
	}
	p.contents[id] = content
	return content, tags, memory.TextHash(text), nil
}

// contentOf is the content of a memory of the agent as this push leaves it
// so far: changed earlier in this push, or as the read model holds it.
func (p *pushPlan) contentOf(ctx context.Context, id string) (json.RawMessage, error) {
	if c, ok := p.contents[id]; ok {
		return c, nil
	}
	v, found, err := p.s.d.Reader.Memory(ctx, p.ref.UserID, id)
	if err != nil {
		return nil, err
	}
	if !found || v.AgentID != p.ref.AgentID {
		return nil, domain.Invalid("payload.memory_id", "memory %s is not part of this agent", id)
	}
	return v.Content, nil
}

// strengthPayload decodes one of the strength events strictly.
func strengthPayload(typ string, raw json.RawMessage) (domain.Payload, error) {
	var err error
	switch typ {
	case memory.MemoryProtected{}.EventType():
		var m memory.MemoryProtected
		err = decodeSyncPayload(raw, &m)
		return m, err
	case memory.MemoryUnprotected{}.EventType():
		var m memory.MemoryUnprotected
		err = decodeSyncPayload(raw, &m)
		return m, err
	case memory.MemoryWeakened{}.EventType():
		var m memory.MemoryWeakened
		err = decodeSyncPayload(raw, &m)
		return m, err
	default:
		var m memory.MemoryVerified
		err = decodeSyncPayload(raw, &m)
		return m, err
	}
}

// typeOf is the type of a memory of the agent, created before or earlier
// in this push.
func (p *pushPlan) typeOf(ctx context.Context, id string) (memory.Type, bool, error) {
	if err := checkMemoryID(id); err != nil {
		return "", false, err
	}
	if t, ok := p.types[id]; ok {
		return t, true, nil
	}
	v, found, err := p.s.d.Reader.Memory(ctx, p.ref.UserID, id)
	if err != nil || !found || v.AgentID != p.ref.AgentID {
		return "", false, err
	}
	return v.Type, true, nil
}

func checkMemoryID(id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return domain.Invalid("payload.memory_id", "memory_id must be a UUID, got %q", id)
	}
	return nil
}

// decodeSyncPayload decodes a payload strictly: unknown fields are errors.
func decodeSyncPayload(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return domain.Invalid("payload", "payload does not match its type: %v", err)
	}
	return nil
}

// withRef sets the owner and agent of an agent-stream payload.
func withRef(p domain.Payload, ref memory.AgentRef) domain.Payload {
	switch v := p.(type) {
	case memory.AgentCreated:
		v.AgentRef = ref
		return v
	case memory.MemoryCreated:
		v.AgentRef = ref
		return v
	case memory.MemoryEmbedded:
		v.AgentRef = ref
		return v
	case memory.MemoryUpdated:
		v.AgentRef = ref
		return v
	case memory.MemoryPatched:
		v.AgentRef = ref
		return v
	case memory.MemoryRecovered:
		v.AgentRef = ref
		return v
	case memory.MemoryProtected:
		v.AgentRef = ref
		return v
	case memory.MemoryUnprotected:
		v.AgentRef = ref
		return v
	case memory.MemoryWeakened:
		v.AgentRef = ref
		return v
	case memory.MemoryVerified:
		v.AgentRef = ref
		return v
	case memory.MemoryForgotten:
		v.AgentRef = ref
		return v
	case memory.MemoryPurged:
		v.AgentRef = ref
		return v
	}
	return p
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
