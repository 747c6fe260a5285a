package memory

import (
	"encoding/json"
	"time"

	"github.com/engram-memory/engram/domain"
)

// AgentRef names the agent an event belongs to. Every agent-stream event
// carries it, so projections need not parse stream names.
type AgentRef struct {
	UserID  string `json:"user_id"`
	AgentID string `json:"agent_id"`
}

// AgentCreated: the first write to an agent creates it, bound to the
// embedding model its memories are searched with.
type AgentCreated struct {
	AgentRef
	EmbeddingModel string    `json:"embedding_model"`
	Dimensions     int       `json:"dimensions"`
	CreatedAt      time.Time `json:"created_at"`
}

// MemoryCreated records a new memory with canonical content.
type MemoryCreated struct {
	AgentRef
	MemoryID    string          `json:"memory_id"`
	Type        Type            `json:"type"`
	Content     json.RawMessage `json:"content"`
	Tags        []string        `json:"tags"`
	DerivedFrom []string        `json:"derived_from"`
	CreatedAt   time.Time       `json:"created_at"`
	TextHash    string          `json:"text_hash"`
	// Promotes is set when accepting a suggestion created the memory: the
	// one event records both, so no failure can leave a memory without
	// its promotion or the reverse (absent in logs written before it).
	Promotes *Promotion `json:"promotes,omitempty"`
	// Derived is no part of the event: the values Derive computes from
	// the content at the event's time, set when the event is decoded once
	// for several read models (nil otherwise, or when the content does
	// not decode as its type).
	Derived *Derived `json:"-"`
}

// Promotion is the suggestion a memory was accepted from; Modified when
// the accept changed the suggested content (status "modified" rather than
// "promoted").
type Promotion struct {
	SuggestionID string `json:"suggestion_id"`
	Modified     bool   `json:"modified,omitempty"`
}

// MemoryEmbedded records the vector of a memory's indexed text (identified
// by TextHash) under one model. Replays read vectors from here and never
// call a provider. JobID is set when a re-embedding job produced it.
type MemoryEmbedded struct {
	AgentRef
	MemoryID   string `json:"memory_id"`
	Model      string `json:"model"`
	Dimensions int    `json:"dimensions"`
	TextHash   string `json:"text_hash"`
	Vector     Vector `json:"vector"`
	JobID      string `json:"job_id,omitempty"`
}

// MemoryUpdated records a memory's whole content and tags after a patch.
// Patches now record MemoryPatched; this type stays so that logs written
// before it still replay.
type MemoryUpdated struct {
	AgentRef
	MemoryID  string          `json:"memory_id"`
	Content   json.RawMessage `json:"content"`
	Tags      []string        `json:"tags"`
	TextHash  string          `json:"text_hash"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// MemoryPatched records what a patch changed, field by field: Content
// holds only the top-level content fields whose canonical value changed
// (JSON null: the field was removed), Tags is nil when the tags did not
// change. Projections apply the changes to the memory as the log left it,
// so concurrent patches of different fields all survive, and of one field
// the last in log order wins. TextHash is the hash of the indexed text
// after the change (the command decided at the agent stream's exact
// version, so every projection agrees on it).
type MemoryPatched struct {
	AgentRef
	MemoryID  string                     `json:"memory_id"`
	Content   map[string]json.RawMessage `json:"content,omitempty"`
	Tags      *[]string                  `json:"tags,omitempty"`
	TextHash  string                     `json:"text_hash"`
	UpdatedAt time.Time                  `json:"updated_at"`
}

// MemoryForgotten hides a memory from search; it stays in the log and in
// the dashboard.
type MemoryForgotten struct {
	AgentRef
	MemoryID    string    `json:"memory_id"`
	ForgottenAt time.Time `json:"forgotten_at"`
}

// MemoryPurged removes a memory from every projection (the log keeps the
// fact that it was purged).
type MemoryPurged struct {
	AgentRef
	MemoryID string `json:"memory_id"`
}

// AgentDeleted removes an agent and all its memories from every projection.
type AgentDeleted struct {
	AgentRef
}

// AgentModelSwitched moves an agent's search to vectors of another model,
// once a re-embedding job has produced them all.
type AgentModelSwitched struct {
	AgentRef
	Model      string `json:"model"`
	Dimensions int    `json:"dimensions"`
	JobID      string `json:"job_id,omitempty"`
}

func (AgentCreated) EventType() string       { return "AgentCreated" }
func (MemoryCreated) EventType() string      { return "MemoryCreated" }
func (MemoryEmbedded) EventType() string     { return "MemoryEmbedded" }
func (MemoryUpdated) EventType() string      { return "MemoryUpdated" }
func (MemoryPatched) EventType() string      { return "MemoryPatched" }
func (MemoryForgotten) EventType() string    { return "MemoryForgotten" }
func (MemoryPurged) EventType() string       { return "MemoryPurged" }
func (AgentDeleted) EventType() string       { return "AgentDeleted" }
func (AgentModelSwitched) EventType() string { return "AgentModelSwitched" }

// Claims makes a memory's creation claim its id in the whole log: memory
// ids are global (and clients choose them in a sync push), so of two
// appends creating one id, on any node, one is refused.
func (m MemoryCreated) Claims() []string { return []string{domain.MemoryClaim(m.MemoryID)} }

// MemoryRecovered brings a forgotten memory back: searchable again, at
// RecoveredStrength. It carries the memory as it stands (type, content,
// tags, created_at, text hash), because forgetting took it out of the
// search indexes entirely and they re-index it from this event alone.
type MemoryRecovered struct {
	AgentRef
	MemoryID    string          `json:"memory_id"`
	Type        Type            `json:"type"`
	Content     json.RawMessage `json:"content"`
	Tags        []string        `json:"tags"`
	CreatedAt   time.Time       `json:"created_at"`
	TextHash    string          `json:"text_hash"`
	Strength    float64         `json:"strength"`
	RecoveredAt time.Time       `json:"recovered_at"`
}

// MemoryProtected stops a memory's decay at its strength then (Strength,
// at At) and makes it impossible to forget or weaken until
// MemoryUnprotected.
type MemoryProtected struct {
	AgentRef
	MemoryID string    `json:"memory_id"`
	Strength float64   `json:"strength"`
	At       time.Time `json:"at"`
}

// MemoryUnprotected lets a memory decay again, from Strength at At.
type MemoryUnprotected struct {
	AgentRef
	MemoryID string    `json:"memory_id"`
	Strength float64   `json:"strength"`
	At       time.Time `json:"at"`
}

// MemoryWeakened lowers a memory's strength: Strength is the result, as
// the command computed it from the decayed strength at At, so a replay
// needs no clock.
type MemoryWeakened struct {
	AgentRef
	MemoryID string    `json:"memory_id"`
	By       float64   `json:"by"`
	Strength float64   `json:"strength"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// MemoryVerified records that a memory was confirmed: its strength rises
// by VerifyBoost (Strength is the result) and its verification count by one.
type MemoryVerified struct {
	AgentRef
	MemoryID   string    `json:"memory_id"`
	Strength   float64   `json:"strength"`
	VerifiedAt time.Time `json:"verified_at"`
	Reason     string    `json:"reason,omitempty"`
}

// AgentImported records an import into the agent (commands.Transfer):
// where the export came from, so that the audit shows the origin of the
// events the import appended with the importer as their actor.
type AgentImported struct {
	AgentRef
	// Origin is the exporting server as the export's header names it
	// ("" when the file had no header), SourceAgentID the agent exported.
	Origin        string    `json:"origin"`
	SourceAgentID string    `json:"source_agent_id"`
	Format        string    `json:"format"`
	ExportedAt    time.Time `json:"exported_at"`
	// Events counts the events of this request the import appended.
	Events     int       `json:"events"`
	ImportedAt time.Time `json:"imported_at"`
}

func (AgentImported) EventType() string { return "AgentImported" }

func (MemoryRecovered) EventType() string   { return "MemoryRecovered" }
func (MemoryProtected) EventType() string   { return "MemoryProtected" }
func (MemoryUnprotected) EventType() string { return "MemoryUnprotected" }
func (MemoryWeakened) EventType() string    { return "MemoryWeakened" }
func (MemoryVerified) EventType() string    { return "MemoryVerified" }

// Events lists the decoders of the memory event types for an event
// registry (domain.NewEventRegistry). A created memory's derived values
// (Derive), which several read models take, are computed once with its
// decoding.
func Events() []domain.EventDecoder {
	return []domain.EventDecoder{
		domain.DecoderOf[AgentCreated](),
		domain.DecoderDeriving(deriveMemoryCreated),
		domain.DecoderOf[MemoryEmbedded](),
		domain.DecoderOf[MemoryUpdated](),
		domain.DecoderOf[MemoryPatched](),
		domain.DecoderOf[MemoryForgotten](),
		domain.DecoderOf[MemoryPurged](),
		domain.DecoderOf[AgentDeleted](),
		domain.DecoderOf[AgentModelSwitched](),
		domain.DecoderOf[MemoryRecovered](),
		domain.DecoderOf[MemoryProtected](),
		domain.DecoderOf[MemoryUnprotected](),
		domain.DecoderOf[MemoryWeakened](),
		domain.DecoderOf[MemoryVerified](),
		domain.DecoderOf[AgentImported](),
	}
}

// deriveMemoryCreated computes a created memory's derived values.
func deriveMemoryCreated(e domain.Event, p *MemoryCreated) {
	if d, ok := Derive(p.Type, p.Content, p.Tags, e.Time); ok {
		p.Derived = &d
	}
}
