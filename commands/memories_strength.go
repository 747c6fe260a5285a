package commands

import (
	"context"
	"encoding/json"
	"math"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
)

// writable returns the agent's stack settings, or 409 stack_in_maintenance
// when the agent is in maintenance. An agent that does not exist yet has
// the defaults.
func (m *Memories) writable(ctx context.Context, userID, agentID string) (agentsettings.Settings, error) {
	v, found, err := m.cfg.Reader.Settings(ctx, userID, agentID)
	if err != nil || !found {
		return agentsettings.Defaults(), err
	}
	return v.Settings, v.CheckMemoryWrite(agentID)
}

// errProtected is the error of an action a protected memory refuses.
func errProtected(v memory.View, what string) error {
	return domain.Conflict("memory_protected", "memory %s is protected and cannot be %s; unprotect it first", v.ID, what)
}

// errForgotten is the error of an action a forgotten memory refuses.
func errForgotten(v memory.View, what string) error {
	return domain.Conflict("memory_forgotten", "memory %s is forgotten and cannot be %s; recover it first", v.ID, what)
}

// strengthAction decides one strength event for the user's memory at the
// agent stream's version: decide sees the memory with its strength now and
// returns the event, or nil when nothing changes. It returns the memory as
// stored afterwards.
func (m *Memories) strengthAction(ctx context.Context, meta domain.Metadata, id string, ifMatch IfMatch,
	decide func(cur memory.View, ref memory.AgentRef) (domain.Payload, error)) (memory.View, error) {
	userID, err := userOf(meta)
	if err != nil {
		return memory.View{}, err
	}
	v, err := m.get(ctx, userID, id)
	if err != nil {
		return memory.View{}, err
	}
	ref := memory.AgentRef{UserID: userID, AgentID: v.AgentID}
	err = m.appendToAgent(ctx, meta, userID, v.AgentID, func() ([]domain.Payload, error) {
		cur, err := m.get(ctx, userID, id)
		if err != nil {
			return nil, err
		}
		if err := ifMatch.check(cur); err != nil {
			return nil, err
		}
		if _, err := m.writable(ctx, userID, cur.AgentID); err != nil {
			return nil, err
		}
		p, err := decide(cur, ref)
		if err != nil || p == nil {
			return nil, err
		}
		return []domain.Payload{p}, nil
	})
	if err != nil {
		return memory.View{}, err
	}
	return m.get(ctx, userID, id)
}

// Recover brings a forgotten memory back at memory.RecoveredStrength (weak),
// searchable again; recovering a memory that is not forgotten changes
// nothing.
func (m *Memories) Recover(ctx context.Context, meta domain.Metadata, id string, ifMatch IfMatch) (memory.View, error) {
	return m.strengthAction(ctx, meta, id, ifMatch, func(cur memory.View, ref memory.AgentRef) (domain.Payload, error) {
		if !cur.Forgotten {
			return nil, nil
		}
		return memory.MemoryRecovered{AgentRef: ref, MemoryID: cur.ID, Type: cur.Type, Content: cur.Content, Tags: cur.Tags,
			CreatedAt: cur.CreatedAt, TextHash: cur.TextHash, Strength: memory.RecoveredStrength, RecoveredAt: m.now()}, nil
	})
}

// Protect stops the memory's decay at its strength now and keeps it from
// being forgotten or weakened. Protecting a protected memory changes
// nothing.
func (m *Memories) Protect(ctx context.Context, meta domain.Metadata, id string, ifMatch IfMatch) (memory.View, error) {
	return m.strengthAction(ctx, meta, id, ifMatch, func(cur memory.View, ref memory.AgentRef) (domain.Payload, error) {
		switch {
		case cur.Forgotten:
			return nil, errForgotten(cur, "protected")
		case cur.Protected:
			return nil, nil
		}
		return memory.MemoryProtected{AgentRef: ref, MemoryID: cur.ID, Strength: cur.Strength, At: m.now()}, nil
	})
}

// Unprotect lets the memory decay again, from its strength now.
func (m *Memories) Unprotect(ctx context.Context, meta domain.Metadata, id string, ifMatch IfMatch) (memory.View, error) {
	return m.strengthAction(ctx, meta, id, ifMatch, func(cur memory.View, ref memory.AgentRef) (domain.Payload, error) {
		if !cur.Protected {
			return nil, nil
		}
		return memory.MemoryUnprotected{AgentRef: ref, MemoryID: cur.ID, Strength: cur.Strength, At: m.now()}, nil
	})
}

// MaxReasonChars bounds the reason of a weaken or verify.
const MaxReasonChars = 500

// StrengthChange is the body of weaken and verify: By (weaken only; default
// memory.DefaultWeakenBy) and an optional Reason, kept in the log and the
// audit trail.
type StrengthChange struct {
	By     *float64 `json:"by,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

func (c StrengthChange) validate(allowBy bool) error {
	if c.By != nil {
		if !allowBy {
			return domain.Invalid("by", "by applies to weaken only")
		}
		if b := *c.By; math.IsNaN(b) || b <= 0 || b > 1 {
			return domain.Invalid("by", "by must be in (0, 1], got %v", b)
		}
	}
	if n := len([]rune(c.Reason)); n > MaxReasonChars {
		return domain.Invalid("reason", "reason is %d characters long; the limit is %d", n, MaxReasonChars)
	}
	return nil
}

// Weaken lowers the memory's strength by c.By from its strength now,
// never below memory.MinDecayedStrength (forget is how a memory reaches 0).
func (m *Memories) Weaken(ctx context.Context, meta domain.Metadata, id string, c StrengthChange, ifMatch IfMatch) (memory.View, error) {
	if err := c.validate(true); err != nil {
		return memory.View{}, err
	}
	by := memory.DefaultWeakenBy
	if c.By != nil {
		by = *c.By
	}
	return m.strengthAction(ctx, meta, id, ifMatch, func(cur memory.View, ref memory.AgentRef) (domain.Payload, error) {
		switch {
		case cur.Forgotten:
			return nil, errForgotten(cur, "weakened")
		case cur.Protected:
			return nil, errProtected(cur, "weakened")
		}
		return memory.MemoryWeakened{AgentRef: ref, MemoryID: cur.ID, By: by, Strength: memory.Weakened(cur.Strength, by), Reason: c.Reason, At: m.now()}, nil
	})
}

// Verify confirms the memory: its strength rises by memory.VerifyBoost
// from its strength now (capped at 1) and its verification count by one.
func (m *Memories) Verify(ctx context.Context, meta domain.Metadata, id string, c StrengthChange, ifMatch IfMatch) (memory.View, error) {
	if err := c.validate(false); err != nil {
		return memory.View{}, err
	}
	return m.strengthAction(ctx, meta, id, ifMatch, func(cur memory.View, ref memory.AgentRef) (domain.Payload, error) {
		if cur.Forgotten {
			return nil, errForgotten(cur, "verified")
		}
		return memory.MemoryVerified{AgentRef: ref, MemoryID: cur.ID, Strength: memory.Verified(cur.Strength), VerifiedAt: m.now(), Reason: c.Reason}, nil
	})
}

// settings returns the agent's stack settings.
func (m *Memories) settings(ctx context.Context, userID, agentID string) (agentsettings.View, error) {
	if memory.ValidateAgentID(agentID) != nil {
		return agentsettings.View{}, domain.NotFound("agent")
	}
	v, found, err := m.cfg.Reader.Settings(ctx, userID, agentID)
	if err != nil {
		return agentsettings.View{}, err
	}
	if !found {
		return agentsettings.View{}, domain.NotFound("agent")
	}
	return v, nil
}

// PatchSettings merges patch (a JSON object of settings, see
// agentsettings.Settings.Apply) into the agent's settings and records the result
// when anything changed. It is accepted in maintenance: it is how a stack
// leaves it.
func (m *Memories) PatchSettings(ctx context.Context, meta domain.Metadata, agentID string, patch json.RawMessage) (agentsettings.View, error) {
	userID, err := userOf(meta)
	if err != nil {
		return agentsettings.View{}, err
	}
	if _, err := m.settings(ctx, userID, agentID); err != nil {
		return agentsettings.View{}, err
	}
	ref := memory.AgentRef{UserID: userID, AgentID: agentID}
	err = m.appendToAgent(ctx, meta, userID, agentID, func() ([]domain.Payload, error) {
		cur, err := m.settings(ctx, userID, agentID)
		if err != nil {
			return nil, err
		}
		next, err := cur.Settings.Apply(patch)
		if err != nil {
			return nil, err
		}
		changed := cur.Settings.Changed(next)
		if len(changed) == 0 {
			return nil, nil
		}
		return []domain.Payload{agentsettings.SettingsChanged{AgentRef: ref, Settings: next, Changed: changed, ChangedAt: m.now()}}, nil
	})
	if err != nil {
		return agentsettings.View{}, err
	}
	return m.settings(ctx, userID, agentID)
}
