package projections

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/webhook"
)

// AuditProjectionName names the audit read model.
const AuditProjectionName = "audit"

// NewAudit returns the projection of the log into the audit trail: one
// entry per auditable event, keyed by log position. An agent's entries go
// with the agent when it is deleted; the deletion itself is an
// account-level entry. Vectors (MemoryEmbedded) and the coalesced key-use
// counters are not audited: they record no decision.
func NewAudit(store audit.ReadModel) Projection {
	return &readModel[audit.ReadModelTx]{name: AuditProjectionName, store: store, apply: applyAuditEvent, events: Events()}
}

// auditRecord is what one event contributes.
type auditRecord struct {
	userID, agentID, operation, memoryType, memoryID string
	details                                          any
}

func applyAuditEvent(ctx context.Context, tx audit.ReadModelTx, e domain.Event) error {
	rec, ok, err := auditOf(e)
	if err != nil || !ok {
		return err
	}
	payload, _ := e.Decoded() // a failure was auditOf's error
	_, created := payload.(*memory.MemoryCreated)
	_, agentDeleted := payload.(*memory.AgentDeleted)
	switch {
	case created:
		if err := tx.RememberMemoryType(ctx, rec.memoryID, rec.memoryType); err != nil {
			return err
		}
	case rec.memoryID != "" && rec.memoryType == "":
		typ, found, err := tx.MemoryType(ctx, rec.memoryID)
		if err != nil || !found {
			return err // a memory of a deleted agent, or never created: nothing to audit
		}
		rec.memoryType = typ
	case agentDeleted:
		if err := tx.DeleteAgent(ctx, rec.userID, rec.details.(map[string]string)["agent_id"]); err != nil {
			return err
		}
	}
	details, err := json.Marshal(rec.details)
	if err != nil {
		return err
	}
	return tx.AddEntry(ctx, e.Position, rec.userID, audit.Entry{
		ID: e.ID, At: e.Time, Operation: rec.operation, AgentID: rec.agentID, MemoryType: rec.memoryType, MemoryID: rec.memoryID,
		Actor: string(e.Actor.Kind) + ":" + e.Actor.ID, Source: string(e.Source), Details: details,
	})
}

// auditOf derives the entry of an event; ok is false for events that are
// not audited.
func auditOf(e domain.Event) (rec auditRecord, ok bool, err error) {
	payload, err := e.Decoded()
	if err != nil {
		return rec, false, fmt.Errorf("audit: %w", err)
	}
	mem := func(ref memory.AgentRef, op string, typ memory.Type, id string, details any) (auditRecord, bool, error) {
		if details == nil {
			details = map[string]any{}
		}
		return auditRecord{userID: ref.UserID, agentID: ref.AgentID, operation: op, memoryType: string(typ), memoryID: id, details: details}, true, nil
	}
	acct := func(userID, op string, details any) (auditRecord, bool, error) {
		return auditRecord{userID: userID, operation: op, details: details}, true, nil
	}
	switch p := payload.(type) {
	case *memory.AgentCreated:
		return mem(p.AgentRef, "agent_created", "", "", map[string]any{"embedding_model": p.EmbeddingModel, "dimensions": p.Dimensions})
	case *memory.MemoryCreated:
		details := map[string]any{"derived_from": nonNil(p.DerivedFrom)}
		if p.Promotes != nil {
			details["suggestion_id"] = p.Promotes.SuggestionID
			details["suggestion_modified"] = p.Promotes.Modified
		}
		return mem(p.AgentRef, "create", p.Type, p.MemoryID, details)
	case *memory.MemoryPatched:
		fields := make([]string, 0, len(p.Content))
		for f := range p.Content {
			fields = append(fields, f)
		}
		slices.Sort(fields)
		return mem(p.AgentRef, "update", "", p.MemoryID, map[string]any{"content_fields": fields, "tags_changed": p.Tags != nil})
	case *memory.MemoryUpdated:
		return mem(p.AgentRef, "update", "", p.MemoryID, nil)
	case *memory.MemoryForgotten:
		return mem(p.AgentRef, "forget", "", p.MemoryID, nil)
	case *memory.MemoryPurged:
		return mem(p.AgentRef, "purge", "", p.MemoryID, nil)
	case *memory.MemoryRecovered:
		return mem(p.AgentRef, "recover", p.Type, p.MemoryID, map[string]any{"strength": p.Strength})
	case *memory.MemoryProtected:
		return mem(p.AgentRef, "protect", "", p.MemoryID, nil)
	case *memory.MemoryUnprotected:
		return mem(p.AgentRef, "unprotect", "", p.MemoryID, map[string]any{"strength": p.Strength})
	case *memory.MemoryWeakened:
		return mem(p.AgentRef, "weaken", "", p.MemoryID, map[string]any{"by": p.By, "strength": p.Strength, "reason": p.Reason})
	case *memory.MemoryVerified:
		return mem(p.AgentRef, "verify", "", p.MemoryID, map[string]any{"strength": p.Strength, "reason": p.Reason})
	case *memory.AgentModelSwitched:
		return mem(p.AgentRef, "model_switched", "", "", map[string]any{"model": p.Model, "dimensions": p.Dimensions, "job_id": p.JobID})
	case *agentsettings.SettingsChanged:
		return mem(p.AgentRef, "settings_changed", "", "", map[string]any{"changed": p.Changed, "settings": p.Settings})
	case *memory.AgentImported:
		return mem(p.AgentRef, "import", "", "", map[string]any{"origin": p.Origin, "source_agent_id": p.SourceAgentID,
			"format": p.Format, "exported_at": p.ExportedAt, "events": p.Events})
	case *memory.AgentDeleted:
		return acct(p.UserID, "agent_deleted", map[string]string{"agent_id": p.AgentID})
	case *account.UserRegistered:
		return acct(p.UserID, "register", map[string]any{})
	case *account.VerificationIssued:
		return acct(p.UserID, "verification_issued", map[string]any{"expires_at": p.ExpiresAt})
	case *account.UserVerified:
		return acct(p.UserID, "email_verified", map[string]any{"key_id": p.InitialKey.KeyID, "prefix": p.InitialKey.Prefix})
	case *account.APIKeyCreated:
		return acct(p.UserID, "key_created", map[string]any{"key_id": p.Key.KeyID, "name": p.Key.Name, "prefix": p.Key.Prefix})
	case *account.APIKeyRevoked:
		return acct(p.UserID, "key_revoked", map[string]any{"key_id": p.KeyID})
	case *account.APIKeyCycled:
		return acct(p.UserID, "key_cycled", map[string]any{"old_key_id": p.OldKeyID, "key_id": p.NewKey.KeyID, "prefix": p.NewKey.Prefix})
	case *webhook.Registered:
		// Never the secret: the audit trail is shown to the user and exported.
		return acct(p.UserID, "webhook_created", map[string]any{"webhook_id": p.WebhookID, "url": p.URL, "events": p.Events})
	case *webhook.Deleted:
		return acct(p.UserID, "webhook_deleted", map[string]any{"webhook_id": p.WebhookID})
	case *account.SessionStarted:
		return acct(p.UserID, "session_started", map[string]any{"session_id": p.SessionID, "key_id": p.KeyID, "expires_at": p.ExpiresAt})
	}
	return rec, false, nil
}

// nonNil is list, or an empty list for nil (so details show [] not null).
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
