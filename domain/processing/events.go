package processing

import (
	"encoding/json"

	"github.com/engram-memory/engram/domain"
	"time"
)

// Stream is the cognition stream of one agent: its processing
// configuration, passes and suggestions. It is separate from the agent
// stream so that processing never contends with memory writes.
func Stream(userID, agentID string) string { return "cognition-" + userID + "-" + agentID }

// AgentRef names the agent a cognition event belongs to. AgentCreatedAt
// tells this agent from an earlier one of the same name that was deleted:
// their events share the stream, and folds skip the older agent's.
type AgentRef struct {
	UserID         string    `json:"user_id"`
	AgentID        string    `json:"agent_id"`
	AgentCreatedAt time.Time `json:"agent_created_at"`
}

// ref returns the ref itself; every payload embeds one.
func (r AgentRef) ref() AgentRef { return r }

// ConfigChanged records a stack's whole processing configuration after a
// change.
type ConfigChanged struct {
	AgentRef
	Config    Config    `json:"config"`
	ChangedAt time.Time `json:"changed_at"`
}

// Consumed is one source a pass processed, with the refs ("type:id") of
// what was proposed or created from it.
type Consumed struct {
	ID   string   `json:"id"`
	Into []string `json:"into"`
}

// PassRecorded records one processing pass of one transition, whether it
// ran, was skipped, or failed. Pass is embedded without a name so the
// stored payload stays one flat object.
type PassRecorded struct {
	AgentRef
	Pass
}

// Pass is what a processing pass did: the record without its AgentRef,
// which only folds need (the caller's own user id, and the agent's
// creation time), so this is what the API and the CLI show.
type Pass struct {
	PassID           string     `json:"pass_id"`
	Transition       Transition `json:"transition"`
	Model            string     `json:"model"`
	Forced           bool       `json:"forced"`
	AutoPromote      bool       `json:"auto_promote"`
	At               time.Time  `json:"at"`
	Skipped          bool       `json:"skipped"`
	SkipReason       string     `json:"skip_reason,omitempty"`
	SkipDetail       string     `json:"skip_detail,omitempty"`
	InferenceBlocked bool       `json:"inference_blocked"`
	SourceCount      int        `json:"source_count"`
	Consumed         []Consumed `json:"consumed"`
	Suggestions      []string   `json:"suggestions"` // suggestion ids
	Created          []string   `json:"created"`     // "type:id" of memories written (auto-promote)
	Deduplicated     int        `json:"deduplicated"`
	GateBlocked      int        `json:"gate_blocked"`
	GateDetails      []string   `json:"gate_details"`
	Errors           []string   `json:"errors"`
	// Purged are the "type:id" of items an earlier attempt of the pass
	// stored and that were purged since: the purge stands, they are not
	// written again, and their sources count as processed.
	Purged []string `json:"purged,omitempty"`
}

// Passes returns the passes of records, [] when there are none.
func Passes(records []PassRecorded) []Pass {
	out := make([]Pass, len(records))
	for i, r := range records {
		out[i] = r.Pass
	}
	return out
}

// SuggestionCreated records a proposed memory.
type SuggestionCreated struct {
	AgentRef
	SuggestionID string          `json:"suggestion_id"`
	PassID       string          `json:"pass_id"`
	Transition   Transition      `json:"transition"`
	MemoryType   string          `json:"memory_type"`
	Content      json.RawMessage `json:"content"`
	Confidence   float64         `json:"confidence"`
	// Sources are "type:id" refs of the memories it was derived from.
	Sources     []string  `json:"sources"`
	Fingerprint string    `json:"fingerprint"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// LintFailure says why the stack's lint rules held the item back from
	// auto-promotion ("" when it passed).
	LintFailure string `json:"lint_failure,omitempty"`
}

// SuggestionResolved records a suggestion leaving "pending".
type SuggestionResolved struct {
	AgentRef
	SuggestionID string    `json:"suggestion_id"`
	Status       Status    `json:"status"`
	Reason       string    `json:"reason,omitempty"`
	PromotedTo   string    `json:"promoted_to,omitempty"`
	ResolvedAt   time.Time `json:"resolved_at"`
}

// AnxietyLevelRecorded records the anxiety level a write-side command
// (a processing pass, an exhaust run, the scheduler) observed for the
// stack, when it differs from the one recorded before: the durable
// "previous level" the report's hysteresis walks from. Reads never record
// one.
type AnxietyLevelRecorded struct {
	AgentRef
	Level string    `json:"level"`
	Score int       `json:"score"`
	At    time.Time `json:"at"`
}

func (AnxietyLevelRecorded) EventType() string { return "AnxietyLevelRecorded" }

func (ConfigChanged) EventType() string      { return "ProcessingConfigChanged" }
func (PassRecorded) EventType() string       { return "ProcessingPassRecorded" }
func (SuggestionCreated) EventType() string  { return "SuggestionCreated" }
func (SuggestionResolved) EventType() string { return "SuggestionResolved" }

// Events lists the decoders of the processing event types for an event
// registry (domain.NewEventRegistry).
func Events() []domain.EventDecoder {
	return []domain.EventDecoder{
		domain.DecoderOf[AnxietyLevelRecorded](), domain.DecoderOf[ConfigChanged](), domain.DecoderOf[PassRecorded](),
		domain.DecoderOf[SuggestionCreated](), domain.DecoderOf[SuggestionResolved](),
	}
}
