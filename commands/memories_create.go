package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
)

// MemoryInput is one memory to create, as the client sent it.
type MemoryInput struct {
	Type        string // plural or singular name
	Content     json.RawMessage
	Tags        []string
	CreatedAt   string // RFC 3339; empty means now
	DerivedFrom []string
	// FromProcessing marks a memory the processing pipeline writes (an
	// accepted suggestion, an auto-promoted item): like the original's
	// suggestion promotion, it must cite a source, but not necessarily of
	// the type the provenance rules name (a rule-extracted belief cites
	// the raw entry it came from). The sources must still exist.
	FromProcessing bool
	// Promotes makes the memory the accepted form of a suggestion: its id
	// is PromotedMemoryID(Promotes.SuggestionID), so a second accept of the
	// suggestion, on any node, finds it taken and fails with a conflict.
	Promotes *memory.Promotion
	// id, when set, is the memory's id, derived by the caller so that
	// writing the same memory again finds it (autoPromotedMemoryID); see
	// Memories.CreateWith.
	id string
}

// promotedIDSpace is the UUIDv5 namespace of the ids of memories accepted
// from suggestions.
var promotedIDSpace = uuid.MustParse("6f1f4c1e-5b0e-4c47-9d0b-2a6c5e8f3a71")

// PromotedMemoryID is the id of the memory that accepting the suggestion
// creates (UUIDv5 of the suggestion id): every accept of one suggestion
// names the same memory.
func PromotedMemoryID(suggestionID string) string {
	return uuid.NewSHA1(promotedIDSpace, []byte(suggestionID)).String()
}

// CreatedMemory is what a create returns per memory.
type CreatedMemory struct {
	Type      memory.Type
	ID        string
	CreatedAt time.Time
	Embedding memory.EmbeddingState
}

// Create validates and records one memory of the agent. A missing agent is
// created first, in the same append.
func (m *Memories) Create(ctx context.Context, meta domain.Metadata, agentID string, in MemoryInput) (CreatedMemory, error) {
	out, err := m.create(ctx, meta, agentID, []MemoryInput{in}, func(_ int, err error) error { return err })
	if err != nil {
		return CreatedMemory{}, err
	}
	return out[0], nil
}

// CreateBatch records up to memory.MaxBatch memories of one agent in one
// append: all of them or, if any is invalid, none (the error names the
// item as memories[i] and carries details.index). The result is in input
// order. derived_from must name memories that exist before the batch.
func (m *Memories) CreateBatch(ctx context.Context, meta domain.Metadata, agentID string, in []MemoryInput) ([]CreatedMemory, error) {
	if err := CheckBatchSize(len(in)); err != nil {
		return nil, err
	}
	return m.create(ctx, meta, agentID, in, BatchItemError)
}

// CheckBatchSize accepts 1 to memory.MaxBatch items.
func CheckBatchSize(n int) error {
	switch {
	case n == 0:
		return domain.Invalid("memories", "memories must hold at least one memory")
	case n > memory.MaxBatch:
		return domain.Invalid("memories", "memories holds %d items; the limit is %d per batch", n, memory.MaxBatch).
			WithDetail("limit", memory.MaxBatch)
	}
	return nil
}

// pendingMemory is a validated input with everything its events need.
type pendingMemory struct {
	typ       memory.Type
	content   json.RawMessage
	tags      []string
	refs      []memory.Ref
	createdAt time.Time
	text      string
	hash      string
	// fromProcessing: see MemoryInput.FromProcessing.
	fromProcessing bool
	promotes       *memory.Promotion
	id             string // see MemoryInput.id
}

func (m *Memories) create(ctx context.Context, meta domain.Metadata, agentID string, in []MemoryInput, at func(int, error) error) ([]CreatedMemory, error) {
	userID, err := userOf(meta)
	if err != nil {
		return nil, err
	}
	if err := memory.ValidateAgentID(agentID); err != nil {
		return nil, err
	}
	now := m.now()
	items := make([]pendingMemory, len(in))
	for i, input := range in {
		if items[i], err = m.prepare(input, now); err != nil {
			return nil, at(i, err)
		}
	}
	// Embedding is slow, so it happens once, before the decision, with the
	// model the agent has now (or will get), and only for a write that the
	// state as it is now admits (quotas, derived_from). Should the decision
	// find the agent bound to another model (a concurrent switch or
	// delete), the memories are recorded without vectors and the queue
	// embeds them.
	model := m.cfg.DefaultModel
	if agent, exists, err := m.cfg.Reader.Agent(ctx, userID, agentID); err != nil {
		return nil, err
	} else if exists {
		model = domain.EmbeddingModel{Name: agent.EmbeddingModel, Dimensions: agent.Dimensions}
	}
	if _, _, err := m.decideCreate(ctx, userID, agentID, items, model, make([][]float32, len(items)), at); err != nil {
		return nil, err
	}
	vectors := m.embedOnWrite(ctx, agentID, model, items)

	unlock := m.lockUser(userID)
	var out []CreatedMemory
	position, err := m.appendToAgentSeenBy(ctx, meta, userID, agentID, m.cfg.DecidesOn, func() ([]domain.Payload, error) {
		created, payloads, err := m.decideCreate(ctx, userID, agentID, items, model, vectors, at)
		out = created
		return payloads, err
	})
	unlock()
	if err != nil {
		return nil, err
	}
	if err := m.cfg.Writer.Await(ctx, position); err != nil {
		return nil, err
	}
	for _, c := range out {
		if c.Embedding.Status == memory.StatusPending {
			m.kick()
			break
		}
	}
	return out, nil
}

// prepare validates one input and computes its canonical form.
func (m *Memories) prepare(in MemoryInput, now time.Time) (pendingMemory, error) {
	var p pendingMemory
	if strings.TrimSpace(in.Type) == "" {
		return p, domain.Invalid("type", "type is required")
	}
	t, ok := memory.ParseType(in.Type)
	if !ok {
		return p, domain.Invalid("type", "unknown memory type %q; use a plural or singular type name such as episodes or episode", in.Type)
	}
	var err error
	if p.content, err = memory.NormalizeContent(t, in.Content); err != nil {
		return p, err
	}
	if p.tags, err = memory.NormalizeTags("tags", in.Tags); err != nil {
		return p, err
	}
	if p.createdAt, err = parseCreatedAt(in.CreatedAt, now); err != nil {
		return p, err
	}
	if len(in.DerivedFrom) > memory.MaxListItems {
		return p, domain.Invalid("derived_from", "derived_from holds %d references; the limit is %d", len(in.DerivedFrom), memory.MaxListItems)
	}
	if p.refs, err = memory.ParseRefs("derived_from", in.DerivedFrom); err != nil {
		return p, err
	}
	if p.text, err = memory.IndexedText(t, p.content); err != nil {
		return p, err
	}
	p.typ, p.hash, p.fromProcessing, p.promotes, p.id = t, memory.TextHash(p.text), in.FromProcessing, in.Promotes, in.id
	return p, nil
}

func parseCreatedAt(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return now, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, domain.Invalid("created_at", "created_at must be an RFC 3339 timestamp such as 2025-01-31T12:00:00Z, got %q", s)
	}
	if err := domain.CheckClientTime("created_at", t); err != nil {
		return time.Time{}, err
	}
	if err := checkNotInFuture("created_at", t, now); err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// checkNotInFuture refuses a client's time more than MaxFutureSkew ahead
// of the server clock.
func checkNotInFuture(field string, t, now time.Time) error {
	if t.After(now.Add(MaxFutureSkew)) {
		return domain.Invalid(field, "%s %s is in the future (more than %s ahead of the server clock)", field, t.Format(time.RFC3339Nano), MaxFutureSkew)
	}
	return nil
}

// decideCreate checks items against the agent and the user's quotas as
// the read model shows them, and returns the events that record them (and
// the agent, if it does not exist yet). vectors[i] is item i's vector in
// model, or nil.
func (m *Memories) decideCreate(ctx context.Context, userID, agentID string, items []pendingMemory, model domain.EmbeddingModel,
	vectors [][]float32, at func(int, error) error) ([]CreatedMemory, []domain.Payload, error) {
	ref := memory.AgentRef{UserID: userID, AgentID: agentID}
	agent, exists, err := m.cfg.Reader.Agent(ctx, userID, agentID)
	if err != nil {
		return nil, nil, err
	}
	usage, err := m.cfg.Reader.Usage(ctx, userID)
	if err != nil {
		return nil, nil, err
	}
	var payloads []domain.Payload
	if !exists {
		if err := m.cfg.Quotas.CheckAgents(usage.Agents); err != nil {
			return nil, nil, err
		}
		agent = memory.AgentView{UserID: userID, AgentID: agentID, EmbeddingModel: m.cfg.DefaultModel.Name, Dimensions: m.cfg.DefaultModel.Dimensions, CreatedAt: m.now()}
		payloads = append(payloads, memory.AgentCreated{AgentRef: ref, EmbeddingModel: agent.EmbeddingModel, Dimensions: agent.Dimensions, CreatedAt: agent.CreatedAt})
	}
	if err := m.cfg.Quotas.CheckMemories(agentID, agent.StoredMemories, len(items)); err != nil {
		return nil, nil, err
	}
	var adding int64
	for _, it := range items {
		adding += int64(len(it.content))
	}
	if err := m.cfg.Quotas.CheckTextBytes(usage.TextBytes, adding); err != nil {
		return nil, nil, err
	}
	settings, err := m.writable(ctx, userID, agentID)
	if err != nil {
		return nil, nil, err
	}
	for i, it := range items {
		if err := checkItemProvenance(settings, "derived_from", it); err != nil {
			return nil, nil, at(i, err)
		}
	}
	if err := m.checkRefs(ctx, userID, agentID, items, exists, at); err != nil {
		return nil, nil, err
	}
	sameModel := agent.EmbeddingModel == model.Name && agent.Dimensions == model.Dimensions
	out := make([]CreatedMemory, len(items))
	for i, it := range items {
		id, err := m.newMemoryID(ctx, userID, it)
		if err != nil {
			return nil, nil, at(i, err)
		}
		out[i] = CreatedMemory{Type: it.typ, ID: id, CreatedAt: it.createdAt,
			Embedding: memory.EmbeddingState{Model: agent.EmbeddingModel, Dimensions: agent.Dimensions}}
		payloads = append(payloads, memory.MemoryCreated{AgentRef: ref, MemoryID: out[i].ID, Type: it.typ, Content: it.content,
			Tags: it.tags, DerivedFrom: memory.RefStrings(it.refs), CreatedAt: it.createdAt, TextHash: it.hash, Promotes: it.promotes})
		switch {
		case !it.typ.Searchable():
			out[i].Embedding.Status = memory.StatusNotIndexed
		case vectors[i] != nil && sameModel:
			out[i].Embedding.Status = memory.StatusEmbedded
			payloads = append(payloads, memory.MemoryEmbedded{AgentRef: ref, MemoryID: out[i].ID, Model: agent.EmbeddingModel,
				Dimensions: agent.Dimensions, TextHash: it.hash, Vector: memory.Vector(vectors[i])})
		default:
			out[i].Embedding.Status = memory.StatusPending
		}
	}
	return out, payloads, nil
}

// checkItemProvenance applies the agent's provenance rule to a memory
// about to be created (a create's and a sync push's): when the agent
// enforces provenance, its derived_from must name sources of the types the
// rules allow; a memory from processing needs only some source.
func checkItemProvenance(settings agentsettings.Settings, field string, it pendingMemory) error {
	if !settings.EnforcesProvenance() || (it.fromProcessing && len(it.refs) > 0) {
		return nil
	}
	return memory.CheckProvenance(field, it.typ, it.refs)
}

// newMemoryID is a new memory's id: the one its input names
// (MemoryInput.id), a fresh UUIDv7, or for an accepted suggestion its
// PromotedMemoryID, which must not be taken yet. The
// decision runs against the read model at the agent stream's version
// and the append expects that version, so of two concurrent accepts (on
// any nodes) one appends and the other decides again, finds the memory
// and fails.
func (m *Memories) newMemoryID(ctx context.Context, userID string, it pendingMemory) (string, error) {
	if it.id != "" {
		// CreateWith found no memory with it.
		return it.id, nil
	}
	if it.promotes == nil {
		id, err := uuid.NewV7()
		if err != nil {
			return "", fmt.Errorf("commands: memory id: %w", err)
		}
		return id.String(), nil
	}
	id := PromotedMemoryID(it.promotes.SuggestionID)
	if _, taken, err := m.cfg.Reader.Memory(ctx, userID, id); err != nil || taken {
		if err == nil {
			err = domain.Conflict("suggestion_not_pending", "suggestion %s was accepted already (memory %s)", it.promotes.SuggestionID, id)
		}
		return "", err
	}
	return id, nil
}

// checkRefs makes sure every derived_from reference names an existing
// memory of the same agent, of the type it says.
func (m *Memories) checkRefs(ctx context.Context, userID, agentID string, items []pendingMemory, agentExists bool, at func(int, error) error) error {
	var ids []string
	for _, it := range items {
		for _, r := range it.refs {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	existing := map[string]memory.Type{}
	if agentExists {
		var err error
		if existing, err = m.cfg.Reader.ExistingRefs(ctx, userID, agentID, ids); err != nil {
			return err
		}
	}
	for i, it := range items {
		for j, r := range it.refs {
			if t, ok := existing[r.ID]; !ok || t != r.Type {
				return at(i, memory.ErrRefNotFound("derived_from", j, r))
			}
		}
	}
	return nil
}

// embedOnWrite embeds the indexed texts of the searchable items with
// model in one provider call. vectors[i] is nil for drives and for every
// item when the provider fails: the write goes on without vectors and the
// embedding queue fills them in later.
func (m *Memories) embedOnWrite(ctx context.Context, agentID string, model domain.EmbeddingModel, items []pendingMemory) [][]float32 {
	vectors := make([][]float32, len(items))
	var texts []string
	var idx []int
	for i, it := range items {
		if it.typ.Searchable() {
			texts, idx = append(texts, it.text), append(idx, i)
		}
	}
	if len(texts) == 0 {
		return vectors
	}
	got, err := domain.EmbedExactly(ctx, m.cfg.Embedder, m.cfg.EmbedTimeout, model.Name, model.Dimensions, texts)
	if err != nil {
		m.logger.WarnContext(ctx, "embedding on write failed; memories queued for embedding",
			"agent_id", agentID, "model", model.Name, "memories", len(texts), "error", err)
		return vectors
	}
	for k, i := range idx {
		vectors[i] = got[k]
	}
	return vectors
}

// BatchItemError places item i's validation error inside the batch: the
// field becomes memories[i].<field>, details.index is i, and an index the
// error already had (a position inside the field) moves to
// details.field_index. Other errors pass unchanged.
func BatchItemError(i int, err error) error {
	de, ok := domain.AsError(err)
	if !ok {
		return err
	}
	c := *de
	c.Message = fmt.Sprintf("memories[%d]: %s", i, de.Message)
	c.Details = make(map[string]any, len(de.Details)+2)
	for k, v := range de.Details {
		c.Details[k] = v
	}
	if inner, ok := de.Details["index"]; ok {
		c.Details["field_index"] = inner
	}
	c.Details["index"] = i
	if f, ok := de.Details["field"].(string); ok && f != "" {
		c.Details["field"] = fmt.Sprintf("memories[%d].%s", i, f)
	} else {
		c.Details["field"] = fmt.Sprintf("memories[%d]", i)
	}
	return &c
}
