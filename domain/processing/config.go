// Package processing is the raw processing pipeline of a memory stack:
// the transitions (raw→episode … episode→drive), their per-stack
// configuration, the triggers that decide when a pass runs, the gates a
// pass and its output must clear, the built-in rule-based extractor, and
// the suggestions a pass proposes, with their lifecycle. The state of one
// agent is folded from its cognition stream (Stack).
package processing

import (
	"sort"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Transition is one layer of the pipeline.
type Transition string

// The transitions, in their fixed execution order.
const (
	RawToEpisode          Transition = "raw_to_episode"
	RawToNote             Transition = "raw_to_note"
	EpisodeToBelief       Transition = "episode_to_belief"
	EpisodeToGoal         Transition = "episode_to_goal"
	EpisodeToRelationship Transition = "episode_to_relationship"
	BeliefToValue         Transition = "belief_to_value"
	EpisodeToDrive        Transition = "episode_to_drive"
)

// Transitions lists every transition in execution order.
func Transitions() []Transition {
	return []Transition{RawToEpisode, RawToNote, EpisodeToBelief, EpisodeToGoal, EpisodeToRelationship, BeliefToValue, EpisodeToDrive}
}

// ParseTransition accepts a transition's name.
func ParseTransition(field, s string) (Transition, error) {
	for _, t := range Transitions() {
		if string(t) == s {
			return t, nil
		}
	}
	return "", domain.Invalid(field, "%s must be one of %v, got %q", field, Transitions(), s)
}

// Source is the memory type a transition reads.
func (t Transition) Source() memory.Type {
	switch t {
	case RawToEpisode, RawToNote:
		return memory.RawEntry
	case BeliefToValue:
		return memory.Belief
	default:
		return memory.Episode
	}
}

// Target is the memory type a transition proposes.
func (t Transition) Target() memory.Type {
	switch t {
	case RawToEpisode:
		return memory.Episode
	case RawToNote:
		return memory.Note
	case EpisodeToBelief:
		return memory.Belief
	case EpisodeToGoal:
		return memory.Goal
	case EpisodeToRelationship:
		return memory.Relationship
	case BeliefToValue:
		return memory.Value
	default:
		return memory.Drive
	}
}

// Identity reports whether the transition shapes the stack's identity
// (everything but the raw transitions): those never run without a model.
func (t Transition) Identity() bool { return t.Source() != memory.RawEntry }

// LayerConfig configures one transition of one stack.
type LayerConfig struct {
	Enabled bool `json:"enabled"`
	// Model is the processor model the layer must run with; empty accepts
	// whichever processor the server has.
	Model              string  `json:"model"`
	QuantityThreshold  int     `json:"quantity_threshold"`
	ValenceThreshold   float64 `json:"valence_threshold"`
	TimeThresholdHours float64 `json:"time_threshold_hours"`
	BatchSize          int     `json:"batch_size"`
	// MaxPassesPerDay caps the passes that reach a processor per UTC day;
	// 0 blocks the layer.
	MaxPassesPerDay int `json:"max_passes_per_day"`
}

// Limits of the configuration.
const (
	MaxQuantityThreshold  = 10000
	MaxValenceThreshold   = 10000
	MaxTimeThresholdHours = 24 * 365
	MaxBatchSize          = 100
	MaxPassesPerDay       = 1000
	DefaultExpiryHours    = 168
	MaxExpiryHours        = 24 * 365
	MaxModelLength        = 200
)

// DefaultLayer is a transition's configuration before any change (Kernle's
// defaults with its per-transition overrides).
func DefaultLayer(t Transition) LayerConfig {
	c := LayerConfig{Enabled: true, QuantityThreshold: 10, ValenceThreshold: 3.0, TimeThresholdHours: 24, BatchSize: 10, MaxPassesPerDay: 10}
	switch t {
	case EpisodeToBelief, EpisodeToGoal, EpisodeToDrive, BeliefToValue:
		c.QuantityThreshold = 5
	case EpisodeToRelationship:
		c.QuantityThreshold, c.BatchSize = 3, 5
	}
	return c
}

// Config is a stack's processing configuration.
type Config struct {
	Layers map[Transition]LayerConfig `json:"layers"`
	// AutoPromote writes a pass's output as memories instead of proposing
	// suggestions.
	AutoPromote bool `json:"auto_promote"`
	// SuggestionExpiryHours: pending suggestions older than this expire.
	SuggestionExpiryHours int `json:"suggestion_expiry_hours"`
}

// DefaultConfig is a stack's configuration before any change.
func DefaultConfig() Config {
	c := Config{Layers: map[Transition]LayerConfig{}, SuggestionExpiryHours: DefaultExpiryHours}
	for _, t := range Transitions() {
		c.Layers[t] = DefaultLayer(t)
	}
	return c
}

// LayerPatch changes some fields of a layer; nil fields stay.
type LayerPatch struct {
	Enabled            *bool    `json:"enabled"`
	Model              *string  `json:"model"`
	QuantityThreshold  *int     `json:"quantity_threshold"`
	ValenceThreshold   *float64 `json:"valence_threshold"`
	TimeThresholdHours *float64 `json:"time_threshold_hours"`
	BatchSize          *int     `json:"batch_size"`
	MaxPassesPerDay    *int     `json:"max_passes_per_day"`
}

// ConfigPatch changes some of a stack's configuration.
type ConfigPatch struct {
	AutoPromote           *bool                 `json:"auto_promote"`
	SuggestionExpiryHours *int                  `json:"suggestion_expiry_hours"`
	Layers                map[string]LayerPatch `json:"layers"`
}

// Apply returns c changed by p, or an error naming the first bad field.
// c is not modified.
func (c Config) Apply(p ConfigPatch) (Config, error) {
	out := Config{Layers: make(map[Transition]LayerConfig, len(c.Layers)), AutoPromote: c.AutoPromote, SuggestionExpiryHours: c.SuggestionExpiryHours}
	for t, l := range c.Layers {
		out.Layers[t] = l
	}
	if p.AutoPromote != nil {
		out.AutoPromote = *p.AutoPromote
	}
	if p.SuggestionExpiryHours != nil {
		if h := *p.SuggestionExpiryHours; h < 1 || h > MaxExpiryHours {
			return Config{}, domain.Invalid("suggestion_expiry_hours", "suggestion_expiry_hours must be between 1 and %d, got %d", MaxExpiryHours, h)
		}
		out.SuggestionExpiryHours = *p.SuggestionExpiryHours
	}
	names := make([]string, 0, len(p.Layers))
	for name := range p.Layers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t, err := ParseTransition("layers", name)
		if err != nil {
			return Config{}, err
		}
		l, err := out.Layers[t].apply(string(t), p.Layers[name])
		if err != nil {
			return Config{}, err
		}
		out.Layers[t] = l
	}
	return out, nil
}

func (l LayerConfig) apply(name string, p LayerPatch) (LayerConfig, error) {
	field := func(f string) string { return "layers." + name + "." + f }
	intIn := func(f string, v *int, lo, hi int, dst *int) error {
		if v == nil {
			return nil
		}
		if *v < lo || *v > hi {
			return domain.Invalid(field(f), "%s must be between %d and %d, got %d", field(f), lo, hi, *v)
		}
		*dst = *v
		return nil
	}
	floatIn := func(f string, v *float64, hi float64, dst *float64) error {
		if v == nil {
			return nil
		}
		if *v < 0 || *v > hi {
			return domain.Invalid(field(f), "%s must be between 0 and %v, got %v", field(f), hi, *v)
		}
		*dst = *v
		return nil
	}
	if p.Enabled != nil {
		l.Enabled = *p.Enabled
	}
	if p.Model != nil {
		if len(*p.Model) > MaxModelLength {
			return LayerConfig{}, domain.Invalid(field("model"), "%s is longer than %d characters", field("model"), MaxModelLength)
		}
		l.Model = *p.Model
	}
	for _, err := range []error{
		intIn("quantity_threshold", p.QuantityThreshold, 1, MaxQuantityThreshold, &l.QuantityThreshold),
		floatIn("valence_threshold", p.ValenceThreshold, MaxValenceThreshold, &l.ValenceThreshold),
		floatIn("time_threshold_hours", p.TimeThresholdHours, MaxTimeThresholdHours, &l.TimeThresholdHours),
		intIn("batch_size", p.BatchSize, 1, MaxBatchSize, &l.BatchSize),
		intIn("max_passes_per_day", p.MaxPassesPerDay, 0, MaxPassesPerDay, &l.MaxPassesPerDay),
	} {
		if err != nil {
			return LayerConfig{}, err
		}
	}
	return l, nil
}
