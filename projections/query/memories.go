package query

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
)

// Get returns one memory of the user, forgotten or not, with its strength
// now.
func (s *Service) Get(ctx context.Context, userID, id string) (memory.View, error) {
	v, found, err := s.cfg.Memories.Memory(ctx, userID, id)
	if err != nil {
		return memory.View{}, err
	}
	if !found {
		return memory.View{}, domain.NotFound("memory")
	}
	v.ApplyStrength(s.now())
	return v, nil
}

// List returns one page of the user's memories, newest first, with their
// strength now. Forgotten memories are left out unless q.IncludeForgotten,
// weak and dormant ones unless q.IncludeWeak.
func (s *Service) List(ctx context.Context, q memory.ListQuery) (memory.Page, error) {
	if q.AgentID != "" {
		if err := memory.ValidateAgentID(q.AgentID); err != nil {
			return memory.Page{}, err
		}
	}
	switch {
	case q.Limit == 0:
		q.Limit = memory.DefaultListLimit
	case q.Limit < 1 || q.Limit > memory.MaxListLimit:
		return memory.Page{}, domain.Invalid("limit", "limit must be between 1 and %d, got %d", memory.MaxListLimit, q.Limit).
			WithDetail("limit", memory.MaxListLimit)
	}
	q.Now = s.now()
	page, err := s.cfg.Memories.ListMemories(ctx, q)
	for i := range page.Memories {
		page.Memories[i].ApplyStrength(q.Now)
	}
	return page, err
}

// Agents returns one page of the user's agents, in agent_id order.
func (s *Service) Agents(ctx context.Context, q memory.AgentListQuery) (memory.AgentPage, error) {
	switch {
	case q.Limit == 0:
		q.Limit = memory.DefaultListLimit
	case q.Limit < 1 || q.Limit > memory.MaxListLimit:
		return memory.AgentPage{}, domain.Invalid("limit", "limit must be between 1 and %d, got %d", memory.MaxListLimit, q.Limit).
			WithDetail("limit", memory.MaxListLimit)
	}
	return s.cfg.Memories.ListAgents(ctx, q)
}

// Settings returns the agent's stack settings.
func (s *Service) Settings(ctx context.Context, userID, agentID string) (agentsettings.View, error) {
	if memory.ValidateAgentID(agentID) != nil {
		return agentsettings.View{}, domain.NotFound("agent")
	}
	v, found, err := s.cfg.Memories.Settings(ctx, userID, agentID)
	return foundOr(v, found, err, "agent")
}

// agent returns the user's agent; a missing or foreign one is not found.
func (s *Service) agent(ctx context.Context, userID, agentID string) (memory.AgentView, error) {
	if err := memory.ValidateAgentID(agentID); err != nil {
		return memory.AgentView{}, err
	}
	a, found, err := s.cfg.Memories.Agent(ctx, userID, agentID)
	return foundOr(a, found, err, "agent")
}

// foundOr is the answer of a lookup that may find nothing: its error, what
// it found, or, when it found nothing, domain.NotFound(what).
func foundOr[T any](v T, found bool, err error, what string) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	if !found {
		return zero, domain.NotFound(what)
	}
	return v, nil
}
