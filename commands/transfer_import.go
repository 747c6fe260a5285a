package commands

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// memoryEvents are the events that make a memory of a memories export as
// it stands: its creation (with its id mapped), its protection or its
// strength below full, and its forgetting. Their ids derive from the
// memory's, so a repeated import finds them duplicates. The vector is not
// part of this form: the embedding queue embeds the memory.
func (t *Transfer) memoryEvents(v memory.View, ids *idMap) ([]SyncEvent, error) {
	if err := checkCanonicalUUID("memory.id", v.ID); err != nil {
		return nil, err
	}
	id := ids.id(v.ID)
	derived := make([]string, len(v.DerivedFrom))
	for i, r := range v.DerivedFrom {
		derived[i] = ids.refString(r)
	}
	now := t.memories().now()
	var out []SyncEvent
	add := func(kind string, at time.Time, p domain.Payload) error {
		raw, err := json.Marshal(p)
		if err != nil {
			return err
		}
		out = append(out, SyncEvent{ID: uuid.NewSHA1(importIDSpace, []byte(kind+"\x00"+id)).String(), Type: p.EventType(), Time: at, Payload: raw})
		return nil
	}
	// A line without created_at is created now, as a create without one
	// is; its zero time would be refused as a time before 1970.
	created := v.CreatedAt
	if created.IsZero() {
		created = now
	}
	if err := add("created", created, memory.MemoryCreated{MemoryID: id, Type: v.Type, Content: v.Content, Tags: v.Tags, DerivedFrom: derived, CreatedAt: created}); err != nil {
		return nil, err
	}
	if !(v.Strength >= 0 && v.Strength <= 1) {
		return nil, domain.Invalid("memory.strength", "strength must be between 0 and 1")
	}
	switch {
	case v.Protected:
		if err := add("protected", now, memory.MemoryProtected{MemoryID: id, Strength: v.Strength, At: now}); err != nil {
			return nil, err
		}
	case v.Strength < 1 && v.Strength > 0:
		if err := add("weakened", now, memory.MemoryWeakened{MemoryID: id, By: 1 - v.Strength, Strength: v.Strength, Reason: "import", At: now}); err != nil {
			return nil, err
		}
	}
	if v.Forgotten {
		at := now
		if v.ForgottenAt != nil {
			at = *v.ForgottenAt
		}
		if err := add("forgotten", at, memory.MemoryForgotten{MemoryID: id, ForgottenAt: at}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// cognitionPlan checks the imported events of an agent's cognition stream
// and plans them, on top of the plan of its memory events (p): sources and
// promotions must name memories of the agent, suggestions must be the
// agent's, times must not be in the future. They are re-homed to the
// agent as it exists here (StackRef.AgentCreatedAt), which the
// cognition fold keeps apart from an earlier agent of the same name.
type cognitionPlan struct {
	t       *Transfer
	p       *pushPlan
	stream  string
	version int64
	ref     processing.AgentRef
	// recorded are the streams holding the ids of the events to plan.
	recorded    map[string]string
	suggestions map[string]bool // created earlier in this import
	out         []domain.NewEvent
	duplicates  int
}

func newCognitionPlan(ctx context.Context, t *Transfer, p *pushPlan, events []SyncEvent) (*cognitionPlan, error) {
	c := &cognitionPlan{t: t, p: p, stream: processing.Stream(p.ref.UserID, p.ref.AgentID), suggestions: map[string]bool{}}
	if len(events) == 0 {
		return c, nil
	}
	if !p.agentExists {
		if err := p.createAgent(uuid.NewString(), p.now, p.now); err != nil {
			return nil, err
		}
		p.synthesized++
	}
	c.ref = processing.AgentRef{UserID: p.ref.UserID, AgentID: p.ref.AgentID, AgentCreatedAt: p.agent.CreatedAt}
	log := t.d.Sync.d.Log
	var err error
	if c.version, err = log.StreamVersion(ctx, c.stream); err != nil {
		return nil, err
	}
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = ev.ID
	}
	if c.recorded, err = log.EventStreams(ctx, ids); err != nil {
		return nil, err
	}
	return c, nil
}

// add checks one event and plans it unless the stream holds it already.
func (c *cognitionPlan) add(ctx context.Context, ev SyncEvent) error {
	if c.recorded[ev.ID] == c.stream {
		c.duplicates++
		return nil
	}
	p := c.p
	p.payload = ev.Payload
	if err := p.checkTime("time", ev.Time); err != nil {
		return err
	}
	payload, err := c.t.d.Sync.cognitionEvents.DecodeStrict(domain.Event{Type: ev.Type, Time: ev.Time, Payload: ev.Payload})
	if err != nil {
		return domain.Invalid("payload", "payload does not match its type: %v", err)
	}
	// Each event is the agent's (its AgentRef is set here) and happened
	// no later than now (the field named by its case).
	var atField string
	var at time.Time
	switch m := payload.(type) {
	case *processing.ConfigChanged:
		m.AgentRef, atField, at = c.ref, "payload.changed_at", m.ChangedAt
	case *processing.PassRecorded:
		m.AgentRef, atField, at = c.ref, "payload.at", m.At
	case *processing.SuggestionCreated:
		if err := c.checkCreated(ctx, m); err != nil {
			return err
		}
		m.AgentRef, atField, at = c.ref, "payload.created_at", m.CreatedAt
	case *processing.SuggestionResolved:
		switch m.Status {
		case processing.Promoted, processing.Modified, processing.Rejected, processing.Dismissed:
		default:
			return domain.Invalid("payload.status", "a resolved suggestion is promoted, modified, rejected or dismissed, not %q", m.Status)
		}
		if err := c.checkSuggestion(ctx, m.SuggestionID); err != nil {
			return err
		}
		m.AgentRef, atField, at = c.ref, "payload.resolved_at", m.ResolvedAt
	case *processing.AnxietyLevelRecorded:
		m.AgentRef, atField, at = c.ref, "payload.at", m.At
	default:
		return domain.Invalid("type", "an import does not carry events of type %q", ev.Type)
	}
	if err := p.checkTime(atField, at); err != nil {
		return err
	}
	if m, ok := payload.(*processing.SuggestionCreated); ok {
		c.suggestions[m.SuggestionID] = true
	}
	e, err := domain.MarshalEvent(payload, p.meta)
	if err != nil {
		return err
	}
	e.ID, e.Time = ev.ID, ev.Time.UTC()
	c.out = append(c.out, e)
	return nil
}

// checkCreated checks an imported suggestion as processing makes one:
// its id, memory type, confidence, and sources naming memories of the
// agent.
func (c *cognitionPlan) checkCreated(ctx context.Context, m *processing.SuggestionCreated) error {
	if err := checkCanonicalUUID("payload.suggestion_id", m.SuggestionID); err != nil {
		return err
	}
	if _, ok := memory.ParseType(m.MemoryType); !ok {
		return domain.Invalid("payload.memory_type", "memory_type %q is not a memory type", m.MemoryType)
	}
	if !(m.Confidence >= 0 && m.Confidence <= 1) {
		return domain.Invalid("payload.confidence", "confidence must be between 0 and 1")
	}
	refs, err := memory.ParseRefs("payload.sources", m.Sources)
	if err != nil {
		return err
	}
	return c.p.checkRefs(ctx, "payload.sources", refs)
}

// checkSuggestion makes sure id names a suggestion of the agent: created
// earlier in this import, or held by the agent already.
func (c *cognitionPlan) checkSuggestion(ctx context.Context, id string) error {
	if c.suggestions[id] {
		return nil
	}
	userID, agentID, found, err := c.t.d.Suggestions.SuggestionOwner(ctx, id)
	if err != nil {
		return err
	}
	if !found || userID != c.p.ref.UserID || agentID != c.p.ref.AgentID {
		return domain.Invalid("payload.suggestion_id", "suggestion %s is not part of this agent or of this import", id)
	}
	return nil
}
