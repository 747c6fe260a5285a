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

// Promotion gates (digest §3.3 step 5).
const (
	BeliefMinSources    = 3
	BeliefMinConfidence = 0.6
	ValueMinSources     = 5
)

// ItemGate checks one proposed item against the promotion gates: a belief
// from episodes needs at least 3 source episodes and confidence ≥ 0.6; a
// value needs at least 5 source beliefs. It returns "" or why not.
func ItemGate(t Transition, it Item) string {
	switch t {
	case EpisodeToBelief:
		if len(it.Sources) < BeliefMinSources {
			return fmt.Sprintf("belief cites %d source episodes; at least %d are required", len(it.Sources), BeliefMinSources)
		}
		if it.Confidence < BeliefMinConfidence {
			return fmt.Sprintf("belief confidence %.2f is below %.2f", it.Confidence, BeliefMinConfidence)
		}
	case BeliefToValue:
		if len(it.Sources) < ValueMinSources {
			return fmt.Sprintf("value cites %d source beliefs; at least %d are required", len(it.Sources), ValueMinSources)
		}
	}
	return ""
}
