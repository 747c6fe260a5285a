package processing

import "fmt"

// Skip reasons of a pass that did not reach a processor.
const (
	SkipDisabled       = "disabled"
	SkipNotTriggered   = "not_triggered"
	SkipNoSources      = "no_sources"
	SkipDailyCap       = "daily_cap_reached"
	SkipModelMismatch  = "model_mismatch"
	SkipNeedsInference = "inference_required"
)

// ProcessorInfo describes the processor a server has.
type ProcessorInfo struct {
	// Model is the model it runs ("rules" for the rule-based extractor).
	Model string
	// Inference is true for a language model; the rule-based extractor has
	// none and serves only the raw transitions.
	Inference bool
}

// RulesModel names the built-in rule-based extractor as a model.
const RulesModel = "rules"

// PassGate decides whether a pass of t may reach the processor: the layer
// must be enabled, its configured model (if any) must be the processor's,
// today's passes must be under the daily cap (0 blocks), and identity
// transitions need a model (values never come from rules). It returns ""
// or a skip reason with its detail.
func PassGate(t Transition, l LayerConfig, p ProcessorInfo, passesToday int) (reason, detail string) {
	switch {
	case !l.Enabled:
		return SkipDisabled, "the layer is disabled"
	case l.Model != "" && l.Model != p.Model:
		return SkipModelMismatch, fmt.Sprintf("the layer wants model %q, the server runs %q", l.Model, p.Model)
	case passesToday >= l.MaxPassesPerDay:
		return SkipDailyCap, fmt.Sprintf("%d of %d passes today", passesToday, l.MaxPassesPerDay)
	case t.Identity() && !p.Inference:
		return SkipNeedsInference, fmt.Sprintf("%s needs a language model; the rule-based extractor only serves raw transitions", t)
	}
	return "", ""
}

// Gates are the promotion gates (digest §3.3 step 5); the stack settings'
// promotion_gates set them per agent.
type Gates struct {
	BeliefMinSources        int
	BeliefMinConfidence     float64
	ValueMinSources         int
	ValueRequiresProtection bool
}

// DefaultGates: a belief needs 3 source episodes and confidence 0.6, a
// value 5 protected source beliefs.
func DefaultGates() Gates {
	return Gates{BeliefMinSources: 3, BeliefMinConfidence: 0.6, ValueMinSources: 5, ValueRequiresProtection: true}
}

// ItemGate checks one proposed item of t against g; protected tells which
// source ids are protected memories. It returns "" or why not.
func ItemGate(t Transition, it Item, g Gates, protected map[string]bool) string {
	switch t {
	case EpisodeToBelief:
		if len(it.Sources) < g.BeliefMinSources {
			return fmt.Sprintf("belief cites %d source episodes; at least %d are required", len(it.Sources), g.BeliefMinSources)
		}
		if it.Confidence < g.BeliefMinConfidence {
			return fmt.Sprintf("belief confidence %.2f is below %.2f", it.Confidence, g.BeliefMinConfidence)
		}
	case BeliefToValue:
		if len(it.Sources) < g.ValueMinSources {
			return fmt.Sprintf("value cites %d source beliefs; at least %d are required", len(it.Sources), g.ValueMinSources)
		}
		if g.ValueRequiresProtection {
			for _, id := range it.Sources {
				if !protected[id] {
					return fmt.Sprintf("value cites belief %s, which is not protected", id)
				}
			}
		}
	}
	return ""
}
