package commands

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
)

// pushPlan turns pushed events into the events the agent's log records,
// checking each as the command that would have made it checks it, against
// the agent as the read model shows it plus what the push did before it:
//
//   - AgentCreated: the user's agent quota;
//   - MemoryCreated: what a create checks (Memories.prepare: type,
//     content, tags, created_at not in the future, derived_from), the
//     agent's state (maintenance refuses), provenance, derived_from naming
//     memories of this agent (existing or created earlier in the push),
//     the memory and text quotas, a memory id nobody has, and for a
//     memory accepted from a suggestion the id that acceptance gives it;
//   - changes (MemoryUpdated, MemoryPatched, MemoryRecovered, strength
//     events, MemoryForgotten, MemoryPurged): the agent's state, the text
//     quota for grown content, the field limits of the API (a weaken's by
//     and reason), strengths in [0, 1]; a change of a memory the agent
//     does not have changes nothing and is skipped;
//   - MemoryEmbedded: a memory of the agent and a finite, non-zero vector
//     of the dimensions it names.
//
// Every time an event carries, its own and its payload's, is of the year
// 1970 or later and not in the future (checkTime), checked before an
// event is skipped for its memory or its agent, so a skipped event's bad
// time is refused as the document refuses it.
//
// Every other type is refused, except agent deletes and model switches,
// which stay on the machine that made them (skipped).
type pushPlan struct {
	s           *Sync
	m           *Memories
	ref         memory.AgentRef
	meta        domain.Metadata
	now         time.Time
	agent       memory.AgentView
	agentExists bool
	usage       memory.Usage
	settings    agentsettings.Settings
	// notWritable refuses memory writes while the agent is in maintenance.
	notWritable error
	created     []string               // memories this push creates, in order
	types       map[string]memory.Type // of the memories created earlier in this push
	// contents are the contents of memories this push created or changed,
	// to which a later change of the same push applies.
	contents    map[string]json.RawMessage
	textAdded   int64 // content bytes the push adds to the user's total so far
	out         []domain.NewEvent
	synthesized int // AgentCreated events the push needed but did not carry
	// owned says, for the memory ids read ahead in one query, whether a
	// memory has the id (an import reads all of its ids at once; others
	// are read one by one). The log's claim on every created id still
	// refuses one that a write took since.
	owned map[string]bool
	// payload is the payload of the event being planned, which checkTime
	// reads to tell a time sent from one left out.
	payload json.RawMessage
}

func (s *Sync) newPushPlan(ctx context.Context, ref memory.AgentRef, meta domain.Metadata) (*pushPlan, error) {
	m := s.d.Memories
	p := &pushPlan{s: s, m: m, ref: ref, meta: meta, now: m.now(), types: map[string]memory.Type{}, contents: map[string]json.RawMessage{}}
	var err error
	if p.agent, p.agentExists, err = m.cfg.Reader.Agent(ctx, ref.UserID, ref.AgentID); err != nil {
		return nil, err
	}
	if p.usage, err = m.cfg.Reader.Usage(ctx, ref.UserID); err != nil {
		return nil, err
	}
	p.settings, err = m.writable(ctx, ref.UserID, ref.AgentID)
	if _, refused := domain.AsError(err); refused {
		p.notWritable, err = err, nil
	}
	return p, err
}

// add checks one event and plans it; kept is false for an event sync does
// not carry.
func (p *pushPlan) add(ctx context.Context, ev SyncEvent) (kept bool, err error) {
	p.payload = ev.Payload
	if err := p.checkTime("time", ev.Time); err != nil {
		return false, err
	}
	decoded, err := p.s.pushEvents.DecodeStrict(domain.Event{Type: ev.Type, Time: ev.Time, Payload: ev.Payload})
	if err != nil {
		return false, domain.Invalid("payload", "payload does not match its type: %v", err)
	}
	var payload domain.Payload
	switch m := decoded.(type) {
	case *memory.AgentCreated:
		if err := p.checkTime("payload.created_at", m.CreatedAt); err != nil {
			return false, err
		}
		if p.agentExists {
			return false, nil
		}
		return true, p.createAgent(ev.ID, ev.Time, m.CreatedAt)
	case *memory.MemoryCreated:
		// A created_at left out is now (checkCreated); one sent is checked
		// here, Go's zero time among them.
		if err := p.checkTime("payload.created_at", m.CreatedAt); err != nil {
			return false, err
		}
		if err := p.checkCreated(ctx, m); err != nil {
			return false, err
		}
		payload = *m
	case *memory.MemoryEmbedded:
		if _, known, err := p.typeOf(ctx, m.MemoryID); err != nil || !known {
			return false, err
		}
		if m.Model == "" || len(m.Model) > maxSyncModelLength || m.Dimensions < 1 || m.Dimensions > maxSyncVectorDims || len(m.Vector) != m.Dimensions {
			return false, domain.Invalid("payload.vector", "a vector needs a model name and exactly its dimensions (1-%d) of numbers", maxSyncVectorDims)
		}
		if err := domain.CheckVector("payload.vector", m.Vector); err != nil {
			return false, err
		}
		m.JobID = ""
		payload = *m
	case *memory.MemoryUpdated:
		t, known, err := p.changeOf(ctx, m.MemoryID, "payload.updated_at", m.UpdatedAt)
		if err != nil || !known {
			return false, err
		}
		if m.Content, m.Tags, m.TextHash, err = p.replaceContent(ctx, t, m.MemoryID, m.Content, m.Tags); err != nil {
			return false, err
		}
		payload = *m
	case *memory.MemoryPatched:
		t, known, err := p.changeOf(ctx, m.MemoryID, "payload.updated_at", m.UpdatedAt)
		if err != nil || !known {
			return false, err
		}
		if m.TextHash, err = p.patchContent(ctx, t, m); err != nil {
			return false, err
		}
		payload = *m
	case *memory.MemoryRecovered:
		if err := p.checkTime("payload.created_at", m.CreatedAt); err != nil {
			return false, err
		}
		t, known, err := p.changeOf(ctx, m.MemoryID, "payload.recovered_at", m.RecoveredAt)
		if err != nil || !known {
			return false, err
		}
		if err := checkStrength(m.Strength); err != nil {
			return false, err
		}
		m.Type = t
		if m.Content, m.Tags, m.TextHash, err = p.replaceContent(ctx, t, m.MemoryID, m.Content, m.Tags); err != nil {
			return false, err
		}
		payload = *m
	case *memory.MemoryProtected:
		payload, err = planChange(ctx, p, *m, func(m memory.MemoryProtected) memoryChange {
			return memoryChange{memoryID: m.MemoryID, atField: "payload.at", at: m.At, strength: &m.Strength}
		})
	case *memory.MemoryUnprotected:
		payload, err = planChange(ctx, p, *m, func(m memory.MemoryUnprotected) memoryChange {
			return memoryChange{memoryID: m.MemoryID, atField: "payload.at", at: m.At, strength: &m.Strength}
		})
	case *memory.MemoryWeakened:
		payload, err = planChange(ctx, p, *m, func(m memory.MemoryWeakened) memoryChange {
			return memoryChange{memoryID: m.MemoryID, atField: "payload.at", at: m.At, strength: &m.Strength,
				invalid: StrengthChange{By: &m.By, Reason: m.Reason}.validate(true)}
		})
	case *memory.MemoryVerified:
		payload, err = planChange(ctx, p, *m, func(m memory.MemoryVerified) memoryChange {
			return memoryChange{memoryID: m.MemoryID, atField: "payload.verified_at", at: m.VerifiedAt, strength: &m.Strength,
				invalid: StrengthChange{Reason: m.Reason}.validate(false)}
		})
	case *memory.MemoryForgotten:
		payload, err = planChange(ctx, p, *m, func(m memory.MemoryForgotten) memoryChange {
			return memoryChange{memoryID: m.MemoryID, atField: "payload.forgotten_at", at: m.ForgottenAt}
		})
	case *memory.MemoryPurged:
		payload, err = planChange(ctx, p, *m, func(m memory.MemoryPurged) memoryChange {
			return memoryChange{memoryID: m.MemoryID}
		})
	case *agentsettings.SettingsChanged:
		if err := m.Settings.Validate(); err != nil {
			return false, inPayload(err)
		}
		if err := p.checkTime("payload.changed_at", m.ChangedAt); err != nil {
			return false, err
		}
		// Later events of the push obey the settings as they now stand,
		// as the writes that made them did.
		p.settings, p.notWritable = m.Settings, nil
		if err := m.Settings.CheckMemoryWrite(p.ref.AgentID); err != nil {
			p.notWritable = err
		}
		payload = *m
	case *memory.AgentImported:
		if err := p.checkTime("payload.imported_at", m.ImportedAt); err != nil {
			return false, err
		}
		if err := p.checkTime("payload.exported_at", m.ExportedAt); err != nil {
			return false, err
		}
		payload = *m
	case *memory.AgentDeleted, *memory.AgentModelSwitched:
		return false, nil
	default:
		return false, domain.Invalid("type", "sync does not carry events of type %q", ev.Type)
	}
	if err != nil || payload == nil {
		// An event of a memory the agent does not have is skipped.
		return false, err
	}
	if !p.agentExists {
		// The agent was never created here (or was deleted): create it
		// first, or the memories would have nowhere to go.
		if err := p.createAgent(uuid.NewString(), p.now, p.now); err != nil {
			return false, err
		}
		p.synthesized++
	}
	return true, p.append(ev.ID, ev.Time, withRef(payload, p.ref))
}

// createAgent plans the agent's creation, within the user's agent quota.
func (p *pushPlan) createAgent(id string, at, createdAt time.Time) error {
	if err := p.m.cfg.Quotas.CheckAgents(p.usage.Agents); err != nil {
		return err
	}
	model := p.m.cfg.DefaultModel
	p.agentExists = true
	p.agent = memory.AgentView{UserID: p.ref.UserID, AgentID: p.ref.AgentID, EmbeddingModel: model.Name, Dimensions: model.Dimensions, CreatedAt: createdAt.UTC()}
	p.usage.Agents++
	return p.append(id, at, memory.AgentCreated{AgentRef: p.ref, EmbeddingModel: model.Name, Dimensions: model.Dimensions, CreatedAt: createdAt.UTC()})
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

// checkTime refuses a time of the pushed event written before
// domain.EarliestClientYear or more than MaxFutureSkew ahead of the server
// clock, as a create refuses such a created_at. The event's own time is
// required; a payload's time left out (or null), which decoding leaves
// zero as it leaves 0001-01-01T00:00:00Z, is absent and not checked.
func (p *pushPlan) checkTime(field string, t time.Time) error {
	if t.IsZero() && !p.sent(field) {
		return nil
	}
	if err := domain.CheckClientTime(field, t); err != nil {
		return err
	}
	return checkNotInFuture(field, t, p.now)
}

// sent reports whether the event being planned carries field (the event's
// "time", or "payload.<name>") with a value other than null. It reads the
// payload again, which only a zero time needs.
func (p *pushPlan) sent(field string) bool {
	name, inPayload := strings.CutPrefix(field, "payload.")
	if !inPayload {
		return true
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(p.payload, &fields); err != nil {
		return false
	}
	v, ok := fields[name]
	return ok && string(v) != "null"
}

// checkCreated validates a pushed memory as a create would, and stores
// its canonical form.
func (p *pushPlan) checkCreated(ctx context.Context, m *memory.MemoryCreated) error {
	if err := checkCanonicalUUID("payload.memory_id", m.MemoryID); err != nil {
		return err
	}
	if m.Promotes != nil && m.MemoryID != PromotedMemoryID(m.Promotes.SuggestionID) {
		return domain.Invalid("payload.promotes", "a memory accepted from suggestion %s has the id %s, not %s", m.Promotes.SuggestionID, PromotedMemoryID(m.Promotes.SuggestionID), m.MemoryID)
	}
	in := MemoryInput{Type: string(m.Type), Content: m.Content, Tags: m.Tags, DerivedFrom: m.DerivedFrom, Promotes: m.Promotes, FromProcessing: m.Promotes != nil}
	if !m.CreatedAt.IsZero() {
		in.CreatedAt = m.CreatedAt.Format(time.RFC3339Nano)
	}
	it, err := p.m.prepare(in, p.now)
	if err != nil {
		return inPayload(err)
	}
	if p.notWritable != nil {
		return p.notWritable
	}
	if err := checkItemProvenance(p.settings, "payload.derived_from", it); err != nil {
		return err
	}
	if err := p.checkRefs(ctx, "payload.derived_from", it.refs); err != nil {
		return err
	}
	if err := p.m.cfg.Quotas.CheckMemories(p.ref.AgentID, p.agent.StoredMemories, len(p.created)+1); err != nil {
		return err
	}
	if err := p.addText(int64(len(it.content))); err != nil {
		return err
	}
	taken, known := p.owned[m.MemoryID]
	if !known {
		var err error
		if _, _, taken, err = p.s.d.Owners.MemoryOwner(ctx, m.MemoryID); err != nil {
			return err
		}
	}
	if _, twice := p.types[m.MemoryID]; taken || twice {
		return errMemoryIDTaken(m.MemoryID)
	}
	m.Type, m.Content, m.Tags, m.DerivedFrom, m.CreatedAt, m.TextHash = it.typ, it.content, it.tags, memory.RefStrings(it.refs), it.createdAt, it.hash
	p.types[m.MemoryID] = m.Type
	p.contents[m.MemoryID] = m.Content
	p.created = append(p.created, m.MemoryID)
	return nil
}

// errMemoryIDTaken answers a pushed memory whose id a memory has already:
// memory ids are global, and whose memory it is stays unsaid.
func errMemoryIDTaken(id string) *domain.Error {
	return domain.Conflict("memory_exists", "memory %s already exists (created by another event)", id)
}

// takenMemoryID turns the log's refusal of an append that creates a
// memory whose id another event has claimed (domain.MemoryClaim) into
// errMemoryIDTaken: nothing of the append was stored, and a new memory
// needs a new id.
func takenMemoryID(err error) error {
	var taken *domain.ClaimTakenError
	if !errors.As(err, &taken) {
		return err
	}
	id, ok := strings.CutPrefix(taken.Key, domain.MemoryClaim(""))
	if !ok {
		return err
	}
	e := errMemoryIDTaken(id)
	e.Err = err
	return e
}

// checkRefs makes sure every derived_from reference names a memory of this
// agent of the type it says: one the read model shows, or one created
// earlier in this push.
func (p *pushPlan) checkRefs(ctx context.Context, field string, refs []memory.Ref) error {
	if len(refs) == 0 {
		return nil
	}
	existing := map[string]memory.Type{}
	if p.agentExists {
		ids := make([]string, len(refs))
		for i, r := range refs {
			ids[i] = r.ID
		}
		var err error
		if existing, err = p.m.cfg.Reader.ExistingRefs(ctx, p.ref.UserID, p.ref.AgentID, ids); err != nil {
			return err
		}
	}
	for j, r := range refs {
		t, ok := existing[r.ID]
		if !ok {
			t, ok = p.types[r.ID]
		}
		if !ok || t != r.Type {
			return memory.ErrRefNotFound(field, j, r)
		}
	}
	return nil
}

// addText counts content bytes the push adds against the user's text
// quota (a negative n frees them).
func (p *pushPlan) addText(n int64) error {
	if err := p.m.cfg.Quotas.CheckTextBytes(p.usage.TextBytes, p.textAdded+n); err != nil {
		return err
	}
	p.textAdded += n
	return nil
}

// changeOf checks a change of a memory: the change's time (field, unless
// empty) must be one checkTime takes, whether or not the agent has the
// memory (the document refuses it alike); the memory's type, known false
// for a memory the agent does not have (the change is skipped); the agent
// must take memory writes.
func (p *pushPlan) changeOf(ctx context.Context, id, field string, at time.Time) (memory.Type, bool, error) {
	if field != "" {
		if err := p.checkTime(field, at); err != nil {
			return "", false, err
		}
	}
	t, known, err := p.typeOf(ctx, id)
	if err != nil || !known {
		return t, known, err
	}
	if p.notWritable != nil {
		return "", false, p.notWritable
	}
	return t, true, nil
}

// memoryChange is what a pushed change of an existing memory is checked
// by: the memory it changes, the field and time of the change (none for a
// change without one), the strength it leaves (nil for none), and the
// error, if any, of its other fields.
type memoryChange struct {
	memoryID string
	atField  string
	at       time.Time
	strength *float64
	invalid  error
}

// planChange decodes a pushed change of an existing memory as an E and
// checks it as changeOf does, then its other fields and its strength. The
// payload is nil, with no error, for a memory the agent does not have.
func planChange[E domain.Payload](ctx context.Context, p *pushPlan, m E, changeIn func(E) memoryChange) (domain.Payload, error) {
	c := changeIn(m)
	if _, known, err := p.changeOf(ctx, c.memoryID, c.atField, c.at); err != nil || !known {
		return nil, err
	}
	if c.invalid != nil {
		return nil, inPayload(c.invalid)
	}
	if c.strength != nil {
		if err := checkStrength(*c.strength); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// replaceContent checks a whole new content and tags of a memory of type t
// as a write would, counts its growth against the text quota, and records
// the content for later changes of this push.
func (p *pushPlan) replaceContent(ctx context.Context, t memory.Type, id string, content json.RawMessage, tags []string) (json.RawMessage, []string, string, error) {
	content, err := memory.NormalizeContent(t, content)
	if err != nil {
		return nil, nil, "", inPayload(err)
	}
	if tags, err = memory.NormalizeTags("payload.tags", tags); err != nil {
		return nil, nil, "", err
	}
	text, err := memory.IndexedText(t, content)
	if err != nil {
		return nil, nil, "", inPayload(err)
	}
	if err := p.setContent(ctx, id, content); err != nil {
		return nil, nil, "", err
	}
	return content, tags, memory.TextHash(text), nil
}

// patchContent applies a patch's changes to the memory's content as this
// push leaves it, checks the result as a patch would and returns its text
// hash.
func (p *pushPlan) patchContent(ctx context.Context, t memory.Type, m *memory.MemoryPatched) (string, error) {
	stored, err := p.contentOf(ctx, m.MemoryID)
	if err != nil {
		return "", err
	}
	content, err := memory.ApplyContentChanges(t, stored, m.Content)
	if err != nil {
		return "", domain.Invalid("payload.content", "%v", err)
	}
	if content, err = memory.NormalizeContent(t, content); err != nil {
		return "", inPayload(err)
	}
	if m.Tags != nil {
		tags, err := memory.NormalizeTags("payload.tags", *m.Tags)
		if err != nil {
			return "", err
		}
		m.Tags = &tags
	}
	text, err := memory.IndexedText(t, content)
	if err != nil {
		return "", inPayload(err)
	}
	if err := p.setContent(ctx, m.MemoryID, content); err != nil {
		return "", err
	}
	return memory.TextHash(text), nil
}

// setContent records a memory's new content, counting its growth against
// the text quota.
func (p *pushPlan) setContent(ctx context.Context, id string, content json.RawMessage) error {
	before, err := p.contentOf(ctx, id)
	if err != nil {
		return err
	}
	if err := p.addText(int64(len(content) - len(before))); err != nil {
		return err
	}
	p.contents[id] = content
	return nil
}

// contentOf is the content of a memory of the agent as this push leaves it
// so far: changed earlier in this push, or as the read model holds it.
func (p *pushPlan) contentOf(ctx context.Context, id string) (json.RawMessage, error) {
	if c, ok := p.contents[id]; ok {
		return c, nil
	}
	v, found, err := p.m.cfg.Reader.Memory(ctx, p.ref.UserID, id)
	if err != nil {
		return nil, err
	}
	if !found || v.AgentID != p.ref.AgentID {
		return nil, domain.Invalid("payload.memory_id", "memory %s is not part of this agent", id)
	}
	return v.Content, nil
}

// typeOf is the type of a memory of the agent, created before or earlier
// in this push.
func (p *pushPlan) typeOf(ctx context.Context, id string) (memory.Type, bool, error) {
	if err := checkCanonicalUUID("payload.memory_id", id); err != nil {
		return "", false, err
	}
	if t, ok := p.types[id]; ok {
		return t, true, nil
	}
	v, found, err := p.m.cfg.Reader.Memory(ctx, p.ref.UserID, id)
	if err != nil || !found || v.AgentID != p.ref.AgentID {
		return "", false, err
	}
	return v.Type, true, nil
}

// checkStrength accepts a strength in [0, 1].
func checkStrength(s float64) error {
	if !(s >= 0 && s <= 1) {
		return domain.Invalid("payload.strength", "strength must be between 0 and 1")
	}
	return nil
}

// inPayload places a validation error of a command's field inside the
// pushed event's payload: field f becomes payload.f.
func inPayload(err error) error {
	de, ok := domain.AsError(err)
	if !ok {
		return err
	}
	if f, ok := de.Details["field"].(string); ok && f != "" {
		return de.WithDetail("field", "payload."+f)
	}
	return err
}

// withRef sets the owner and agent of an agent-stream payload.
func withRef(p domain.Payload, ref memory.AgentRef) domain.Payload {
	switch v := p.(type) {
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
	case agentsettings.SettingsChanged:
		v.AgentRef = ref
		return v
	case memory.AgentImported:
		v.AgentRef = ref
		return v
	}
	return p
}
