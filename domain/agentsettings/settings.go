// Package agentsettings holds an agent's settings (what the interface
// calls the "stack settings", hence the stack_state field): the lifecycle
// state that decides which writes are accepted and how strictly, decay,
// lint rules and promotion gates, and the events that change them.
package agentsettings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// State is an agent's lifecycle state.
type State string

const (
	// Initializing accepts every write without provenance: seeding and
	// imports. New agents start here.
	Initializing State = "initializing"
	// Active enforces provenance (when EnforceProvenance is on).
	Active State = "active"
	// Maintenance rejects every memory write with 409 stack_in_maintenance.
	Maintenance State = "maintenance"
)

// LintRules bound the text of memories the processing pipeline proposes
// (the pipeline applies them; the settings only hold them).
type LintRules struct {
	Enabled              bool `json:"enabled"`
	MinLength            int  `json:"min_length"`
	MaxLength            int  `json:"max_length"`
	CheckFragments       bool `json:"check_fragments"`
	CheckPrefixArtifacts bool `json:"check_prefix_artifacts"`
	CheckTemplatedNoise  bool `json:"check_templated_noise"`
}

// PromotionGates are the evidence a suggestion needs before it may become
// a belief or a value.
type PromotionGates struct {
	BeliefMinEvidence       int     `json:"belief_min_evidence"`
	BeliefMinConfidence     float64 `json:"belief_min_confidence"`
	ValueMinEvidence        int     `json:"value_min_evidence"`
	ValueRequiresProtection bool    `json:"value_requires_protection"`
}

// Settings are one agent's stack settings.
type Settings struct {
	StackState        State          `json:"stack_state"`
	EnforceProvenance bool           `json:"enforce_provenance"`
	LazyDecay         bool           `json:"lazy_decay"`
	LintRules         LintRules      `json:"lint_rules"`
	PromotionGates    PromotionGates `json:"promotion_gates"`
}

// Defaults are the settings of an agent that never changed them: the
// original system's defaults (initializing, provenance enforced once
// active, decay on, lint on with 10-2000 characters, gates 3 episodes at
// confidence 0.6 for beliefs and 5 protected beliefs for values).
func Defaults() Settings {
	return Settings{
		StackState:        Initializing,
		EnforceProvenance: true,
		LazyDecay:         true,
		LintRules:         LintRules{Enabled: true, MinLength: 10, MaxLength: 2000, CheckFragments: true, CheckPrefixArtifacts: true, CheckTemplatedNoise: true},
		PromotionGates:    PromotionGates{BeliefMinEvidence: 3, BeliefMinConfidence: 0.6, ValueMinEvidence: 5, ValueRequiresProtection: true},
	}
}

// EnforcesProvenance tells whether new memories must cite their sources
// by the rules of memory.ProvenanceRules.
func (s Settings) EnforcesProvenance() bool { return s.StackState == Active && s.EnforceProvenance }

// CheckMemoryWrite fails with 409 stack_in_maintenance while the stack is
// in maintenance.
func (s Settings) CheckMemoryWrite(agentID string) error {
	if s.StackState == Maintenance {
		return domain.Conflict("stack_in_maintenance",
			"agent %s is in maintenance: memory writes are rejected until its stack_state is set back to active or initializing (PATCH /v1/agents/%s/settings)", agentID, agentID)
	}
	return nil
}

// Validate checks every field's range.
func (s Settings) Validate() error {
	switch s.StackState {
	case Initializing, Active, Maintenance:
	default:
		return domain.Invalid("stack_state", "stack_state must be initializing, active or maintenance, got %q", s.StackState)
	}
	l := s.LintRules
	if l.MinLength < 0 || l.MaxLength < 1 || l.MinLength > l.MaxLength || l.MaxLength > memory.MaxTextChars {
		return domain.Invalid("lint_rules", "lint_rules need 0 ≤ min_length ≤ max_length ≤ %d and max_length ≥ 1, got %d and %d", memory.MaxTextChars, l.MinLength, l.MaxLength)
	}
	g := s.PromotionGates
	if g.BeliefMinEvidence < 0 || g.BeliefMinEvidence > maxEvidence || g.ValueMinEvidence < 0 || g.ValueMinEvidence > maxEvidence {
		return domain.Invalid("promotion_gates", "promotion_gates evidence counts must be between 0 and %d", maxEvidence)
	}
	if g.BeliefMinConfidence < 0 || g.BeliefMinConfidence > 1 {
		return domain.Invalid("promotion_gates.belief_min_confidence", "belief_min_confidence must be between 0 and 1, got %v", g.BeliefMinConfidence)
	}
	return nil
}

// maxEvidence bounds the evidence counts of the gates.
const maxEvidence = 1000

// Apply merges a JSON patch into s: top-level fields replace, and the two
// objects (lint_rules, promotion_gates) merge field by field. A null
// leaves its setting as it is, as an absent one does (the API's rule for
// an optional field); unknown fields and wrong types are rejected; the
// result is validated.
func (s Settings) Apply(patch json.RawMessage) (Settings, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(patch, &top); err != nil || top == nil {
		return s, domain.Invalid("", "the body must be a JSON object of settings to change")
	}
	if len(top) == 0 {
		return s, domain.Invalid("", "nothing to change: send at least one setting")
	}
	out := s
	for name, raw := range top {
		var target any
		switch name {
		case "stack_state":
			target = &out.StackState
		case "enforce_provenance":
			target = &out.EnforceProvenance
		case "lazy_decay":
			target = &out.LazyDecay
		case "lint_rules":
			target = &out.LintRules
		case "promotion_gates":
			target = &out.PromotionGates
		default:
			return s, domain.Invalid(name, "unknown setting %q; settings are stack_state, enforce_provenance, lazy_decay, lint_rules, promotion_gates", name)
		}
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		err := domain.DecodeIntegral(raw, target, func(raw []byte, target any) error {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			return dec.Decode(target)
		})
		if err != nil {
			return s, domain.Invalid(name, "%s: %v", name, cleanJSONError(err))
		}
	}
	return out, out.Validate()
}

func cleanJSONError(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return fmt.Sprintf("%s must be a %s", te.Field, te.Type)
	}
	return err.Error()
}

// Changed lists the settings that differ between s and t, in field order.
func (s Settings) Changed(t Settings) []string {
	var out []string
	if s.StackState != t.StackState {
		out = append(out, "stack_state")
	}
	if s.EnforceProvenance != t.EnforceProvenance {
		out = append(out, "enforce_provenance")
	}
	if s.LazyDecay != t.LazyDecay {
		out = append(out, "lazy_decay")
	}
	if s.LintRules != t.LintRules {
		out = append(out, "lint_rules")
	}
	if s.PromotionGates != t.PromotionGates {
		out = append(out, "promotion_gates")
	}
	return out
}

// View is an agent's settings as the API shows them.
type View struct {
	AgentID string `json:"agent_id"`
	Settings
	// UpdatedAt is when the settings last changed; nil while they are the
	// defaults.
	UpdatedAt *time.Time `json:"updated_at"`
}

// SettingsChanged records an agent's whole settings after a change, and
// which of them changed.
type SettingsChanged struct {
	memory.AgentRef
	Settings  Settings  `json:"settings"`
	Changed   []string  `json:"changed"`
	ChangedAt time.Time `json:"changed_at"`
}

func (SettingsChanged) EventType() string { return "StackSettingsChanged" }

// Events lists the decoders of the settings event types for an event
// registry (domain.NewEventRegistry). A settings event is decoded onto the
// defaults: a setting it leaves out (an event written before the setting
// existed, a push of part of them) or sends as null is the default, down
// to each field of lint_rules and promotion_gates, so the server's fold,
// a local stack's, a replay and a push all read the same settings from
// it (docs/sync.md).
func Events() []domain.EventDecoder {
	return []domain.EventDecoder{domain.DecoderOnto(func() *SettingsChanged {
		return &SettingsChanged{Settings: Defaults()}
	})}
}
