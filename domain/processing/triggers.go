package processing

import (
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain/memory"
)

// Source is one memory a pass reads.
type Source struct {
	ID        string
	Type      memory.Type
	Text      string // what a processor reads: raw content, "objective: outcome", a statement
	CreatedAt time.Time
	// Arousal is an episode's emotional_arousal (0 for other types).
	Arousal float64
	// Confidence is a belief's confidence (0 for other types).
	Confidence float64
	// Protected is the memory's is_protected.
	Protected bool
	// ProcessedByClient is a raw entry whose content says processed: true:
	// the client processed it itself, so no pass takes it.
	ProcessedByClient bool
}

// TriggerState is what a transition's triggers look at.
type TriggerState struct {
	Transition  Transition `json:"transition"`
	Unprocessed int        `json:"unprocessed"`
	ArousalSum  float64    `json:"arousal_sum"`
	OldestHours float64    `json:"oldest_hours"`
	Fires       bool       `json:"fires"`
	Reason      string     `json:"reason"`
}

// Trigger decides whether a transition runs without force: it fires when
// ANY of the unprocessed count reaching the quantity threshold, the summed
// arousal of unprocessed episodes reaching the valence threshold (episode
// transitions only), or the oldest unprocessed item reaching the time
// threshold (when above 0) holds. Nothing fires without sources.
func Trigger(t Transition, l LayerConfig, unprocessed []Source, now time.Time) TriggerState {
	st := TriggerState{Transition: t, Unprocessed: len(unprocessed)}
	var oldest time.Time
	for _, s := range unprocessed {
		st.ArousalSum += s.Arousal
		if oldest.IsZero() || s.CreatedAt.Before(oldest) {
			oldest = s.CreatedAt
		}
	}
	if !oldest.IsZero() {
		st.OldestHours = now.Sub(oldest).Hours()
	}
	switch {
	case st.Unprocessed == 0:
		st.Reason = "no unprocessed sources"
	case st.Unprocessed >= l.QuantityThreshold:
		st.Fires, st.Reason = true, fmt.Sprintf("quantity: %d unprocessed ≥ %d", st.Unprocessed, l.QuantityThreshold)
	case t.Source() == memory.Episode && st.ArousalSum >= l.ValenceThreshold:
		st.Fires, st.Reason = true, fmt.Sprintf("valence: arousal sum %.2f ≥ %.2f", st.ArousalSum, l.ValenceThreshold)
	case l.TimeThresholdHours > 0 && st.OldestHours >= l.TimeThresholdHours:
		st.Fires, st.Reason = true, fmt.Sprintf("time: oldest unprocessed %.1fh ≥ %.1fh", st.OldestHours, l.TimeThresholdHours)
	default:
		st.Reason = "below every threshold"
	}
	return st
}
