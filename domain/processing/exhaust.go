package processing

import "github.com/engram-memory/engram/domain"

// Intensity is how far an exhaust run reaches (digest §3.4): light runs
// the raw transitions, medium adds the episode transitions, heavy adds
// belief_to_value.
type Intensity string

// Intensities, in the order an exhaust run climbs them.
const (
	Light  Intensity = "light"
	Medium Intensity = "medium"
	Heavy  Intensity = "heavy"
)

var intensities = []Intensity{Light, Medium, Heavy}

// Transitions returns the transitions of intensity i, in execution order.
func (i Intensity) Transitions() []Transition {
	var out []Transition
	for _, t := range Transitions() {
		switch {
		case !t.Identity(),
			i != Light && t != BeliefToValue,
			i == Heavy:
			out = append(out, t)
		}
	}
	return out
}

// Limits and defaults of an exhaust run.
const (
	DefaultExhaustCycles = 20
	MaxExhaustCycles     = 100
	// ConvergeAfter empty cycles in a row finish an intensity.
	ConvergeAfter = 2
)

// Why an exhaust run ended.
const (
	// ReasonConverged: the heavy intensity produced nothing for
	// ConvergeAfter cycles in a row.
	ReasonConverged = "converged"
	// ReasonInferenceUnavailable: every transition with sources needs a
	// language model the server does not run.
	ReasonInferenceUnavailable = "inference_unavailable"
	// ReasonMaxCycles: the cycle budget ran out first.
	ReasonMaxCycles = "max_cycles"
	// ReasonConcurrentProcessing: after the cycles done were stored,
	// another request or node processed the agent while the next cycle
	// was decided; that cycle stored nothing.
	ReasonConcurrentProcessing = "concurrent_processing"
	// ReasonCycleFailed: after the cycles done were stored, the next
	// cycle failed (storage full, the read models, an internal error) and
	// stored nothing of its own unless its error says so (a write stored
	// but not yet visible); the run answers with the cycles it stored and
	// the failure.
	ReasonCycleFailed = "cycle_failed"
)

// CheckExhaustCycles validates max_cycles (0: the default).
func CheckExhaustCycles(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultExhaustCycles, nil
	case n < 1 || n > MaxExhaustCycles:
		return 0, domain.Invalid("max_cycles", "max_cycles must be between 1 and %d, got %d", MaxExhaustCycles, n).WithDetail("limit", MaxExhaustCycles)
	}
	return n, nil
}

// CycleSummary is what one exhaust cycle did, summed over its passes.
type CycleSummary struct {
	Cycle       int       `json:"cycle"`
	Intensity   Intensity `json:"intensity"`
	Sources     int       `json:"sources"`
	Promotions  int       `json:"promotions"`  // memories written (auto-promote)
	Suggestions int       `json:"suggestions"` // suggestions made
	Errors      int       `json:"errors"`
	// InferenceBlocked: nothing ran, and at least one transition had
	// sources but needed a language model.
	InferenceBlocked bool   `json:"inference_blocked"`
	Passes           []Pass `json:"passes"`
}

// Summarize adds up a cycle's passes.
func Summarize(cycle int, i Intensity, passes []PassRecorded) CycleSummary {
	s := CycleSummary{Cycle: cycle, Intensity: i, Passes: Passes(passes)}
	ran, blocked := false, false
	for _, p := range passes {
		s.Sources += p.SourceCount
		s.Promotions += len(p.Created)
		s.Suggestions += len(p.Suggestions)
		s.Errors += len(p.Errors)
		ran = ran || !p.Skipped
		blocked = blocked || p.InferenceBlocked
	}
	s.InferenceBlocked = blocked && !ran
	return s
}

// Exhaustion is the state of an exhaust run: which intensity it is at and
// how many empty cycles in a row that intensity has had. A cycle is empty
// when it wrote no memory, made no suggestion and recorded no error:
// there were no sources, or the processor proposed nothing new (an empty
// answer, or only items held by a gate or deduplicated). An error-only
// cycle resets the count, so a flaky model is retried rather than taken
// for convergence; a productive cycle resets it too.
type Exhaustion struct {
	level  int
	empty  int
	Done   bool
	Reason string
}

// Intensity is the intensity of the next cycle.
func (e *Exhaustion) Intensity() Intensity { return intensities[e.level] }

// Record moves the run by one cycle's summary.
func (e *Exhaustion) Record(s CycleSummary) {
	switch {
	case s.InferenceBlocked:
		e.Done, e.Reason = true, ReasonInferenceUnavailable
		return
	case s.Promotions+s.Suggestions > 0, s.Errors > 0:
		e.empty = 0
		return
	}
	e.empty++
	if e.empty < ConvergeAfter {
		return
	}
	if e.level+1 < len(intensities) {
		e.level, e.empty = e.level+1, 0
		return
	}
	e.Done, e.Reason = true, ReasonConverged
}
