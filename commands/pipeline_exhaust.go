package commands

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
)

// ExhaustRequest asks for an exhaust run: MaxCycles (0: the default 20, at
// most processing.MaxExhaustCycles) and AutoPromote (nil: true, as in the
// original; false leaves everything as suggestions).
type ExhaustRequest struct {
	MaxCycles   int
	AutoPromote *bool
}

// ExhaustResult is what an exhaust run did.
type ExhaustResult struct {
	CyclesCompleted   int                       `json:"cycles_completed"`
	TotalPromotions   int                       `json:"total_promotions"`
	TotalSuggestions  int                       `json:"total_suggestions"`
	Converged         bool                      `json:"converged"`
	ConvergenceReason string                    `json:"convergence_reason"`
	AutoPromote       bool                      `json:"auto_promote"`
	Cycles            []processing.CycleSummary `json:"cycles"`
	// Failure is why the cycle after the completed ones failed
	// (ConvergenceReason processing.ReasonCycleFailed): the cycles
	// listed are stored, and the API shows it in the failure envelope's
	// shape.
	Failure error `json:"-"`
}

// Exhaust processes the agent until nothing more comes of it (digest
// §3.4): forced cycles at intensity light, then medium, then heavy, each
// intensity until ConvergeAfter cycles in a row produce nothing; it ends
// early when every transition with sources needs a model the server does
// not run, after MaxCycles at the latest, and when a cycle after the
// first fails: another request or node processed the agent during it
// (processing.ReasonConcurrentProcessing) or any other error
// (processing.ReasonCycleFailed, with the error in Failure). Either way
// the answer is the cycles stored, not an error that would say the run
// stored nothing; a first cycle that fails is the run's error (409
// concurrent_processing, say), as it stored nothing. Each cycle is one
// process request under the agent's lock, recorded like any pass;
// between cycles other commands of the agent may run, and a cancelled
// ctx stops the run between cycles (the cycles done stay recorded).
func (c *Pipeline) Exhaust(ctx context.Context, meta domain.Metadata, agentID string, req ExhaustRequest) (ExhaustResult, error) {
	userID, err := userOf(meta)
	if err != nil {
		return ExhaustResult{}, err
	}
	maxCycles, err := processing.CheckExhaustCycles(req.MaxCycles)
	if err != nil {
		return ExhaustResult{}, err
	}
	autoPromote := req.AutoPromote == nil || *req.AutoPromote
	out := ExhaustResult{AutoPromote: autoPromote, Cycles: []processing.CycleSummary{}, ConvergenceReason: processing.ReasonMaxCycles}
	var run processing.Exhaustion
	for cycle := 1; cycle <= maxCycles && !run.Done; cycle++ {
		if err := ctx.Err(); err != nil {
			return ExhaustResult{}, err
		}
		intensity := run.Intensity()
		passes, err := c.cycle(ctx, meta, userID, agentID, ProcessRequest{Force: true, AutoPromote: &autoPromote, transitions: intensity.Transitions()})
		if err != nil && out.CyclesCompleted > 0 {
			// The cycles done are stored and this one is not: an error
			// would say the run stored nothing, so the answer names what
			// it did, and why it stopped.
			out.ConvergenceReason, out.Failure = processing.ReasonCycleFailed, err
			if de, ok := domain.AsError(err); ok && de.Code == "concurrent_processing" {
				out.ConvergenceReason, out.Failure = processing.ReasonConcurrentProcessing, nil
			}
			break
		}
		if err != nil {
			return ExhaustResult{}, err
		}
		s := processing.Summarize(cycle, intensity, passes)
		run.Record(s)
		out.Cycles = append(out.Cycles, s)
		out.CyclesCompleted++
		out.TotalPromotions += s.Promotions
		out.TotalSuggestions += s.Suggestions
	}
	if run.Done {
		out.Converged, out.ConvergenceReason = true, run.Reason
	}
	if out.CyclesCompleted > 0 {
		unlock := c.lock(userID, agentID)
		c.observeAnxiety(ctx, meta, userID, agentID)
		unlock()
	}
	return out, nil
}

// cycle runs one locked process request.
func (c *Pipeline) cycle(ctx context.Context, meta domain.Metadata, userID, agentID string, req ProcessRequest) ([]processing.PassRecorded, error) {
	defer c.lock(userID, agentID)()
	return c.process(ctx, meta, userID, agentID, req)
}
