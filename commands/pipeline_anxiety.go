package commands

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// recordAnxiety is the write-side observation of an agent's anxiety: it
// reloads the agent (so the report sees what the caller just appended),
// and when the hysteresis level differs from the one last recorded it
// appends an AnxietyLevelRecorded event. That recorded level is the
// durable "previous level" the next report's hysteresis walks from; GET
// /anxiety reads it and never records one. The caller holds the agent's
// lock.
func (c *Pipeline) recordAnxiety(ctx context.Context, meta domain.Metadata, userID, agentID string) error {
	as, err := c.load(ctx, userID, agentID)
	if err != nil {
		return err
	}
	now := c.now()
	page, err := c.cfg.Memories.ListMemories(ctx, memory.ListQuery{UserID: userID, AgentID: agentID, Limit: processing.AnxietyWindow})
	if err != nil {
		return err
	}
	pending, err := c.cfg.Suggestions.CountPending(ctx, userID, agentID, now)
	if err != nil {
		return err
	}
	rep := processing.AnxietyReport(as.state, page.Memories, pending, now)
	if rep.HysteresisLevel == as.state.AnxietyLevel {
		return nil
	}
	return c.appendTo(ctx, meta, as, []domain.Payload{processing.AnxietyLevelRecorded{
		AgentRef: as.ref, Level: rep.HysteresisLevel, Score: rep.OverallScore, At: rep.ComputedAt,
	}})
}

// observeAnxiety records the agent's anxiety level after a processing
// command; a failure is logged, not returned, because the command's own
// events are already durable and the level is recorded again next time.
func (c *Pipeline) observeAnxiety(ctx context.Context, meta domain.Metadata, userID, agentID string) {
	if err := c.recordAnxiety(ctx, meta, userID, agentID); err != nil {
		c.logger.Warn("record anxiety level", "agent_id", agentID, "error", err)
	}
}
