package commands

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// ScheduledPass is the background scheduler's visit to one agent: unless
// the stack is in maintenance, it runs the transitions that are due —
// enabled, with unprocessed sources, a trigger that fires, and a pass gate
// that lets them through (daily cap, model, inference) — and records the
// anxiety level when it changed. A transition that is not due records
// nothing, so an idle stack costs the log nothing however often it is
// visited. It returns the passes run (none when nothing was due) and
// whether the stack was skipped for maintenance.
func (c *Pipeline) ScheduledPass(ctx context.Context, agent memory.AgentRef) (passes []processing.PassRecorded, maintenance bool, err error) {
	settings, err := c.settings(ctx, agent.UserID, agent.AgentID)
	if err != nil {
		return nil, false, err
	}
	if settings.StackState == agentsettings.Maintenance {
		return nil, true, nil
	}
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: SchedulerActor, UserID: agent.UserID}, Source: domain.SourceSystem}
	defer c.lock(agent.UserID, agent.AgentID)()
	due, err := c.due(ctx, agent)
	if err != nil {
		return nil, false, err
	}
	if len(due) > 0 {
		if passes, err = c.process(ctx, meta, agent.UserID, agent.AgentID, ProcessRequest{transitions: due}); err != nil {
			return nil, false, err
		}
	}
	c.observeAnxiety(ctx, meta, agent.UserID, agent.AgentID)
	return passes, false, nil
}

// SchedulerActor is the actor id of what the scheduler records.
const SchedulerActor = "processing-scheduler"

// due lists the agent's transitions a non-forced pass would run now.
func (c *Pipeline) due(ctx context.Context, agent memory.AgentRef) ([]processing.Transition, error) {
	as, err := c.load(ctx, agent.UserID, agent.AgentID)
	if err != nil {
		return nil, err
	}
	now, info := c.now(), c.cfg.Processor.Info()
	bySource := map[memory.Type][]processing.Source{}
	var due []processing.Transition
	for _, t := range processing.Transitions() {
		layer := as.state.Config.Layers[t]
		if !layer.Enabled {
			continue
		}
		srcs, ok := bySource[t.Source()]
		if !ok {
			if srcs, err = c.sources(ctx, as.ref, t.Source()); err != nil {
				return nil, err
			}
			bySource[t.Source()] = srcs
		}
		open := as.state.Unconsumed(t, srcs)
		if len(open) == 0 || !processing.Trigger(t, layer, open, now).Fires {
			continue
		}
		if reason, _ := processing.PassGate(t, layer, info, as.state.PassesOn(t, now)); reason != "" {
			continue
		}
		due = append(due, t)
	}
	return due, nil
}
