package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/stack"
)

// AuditProjection names the audit read model.
const AuditProjection = "audit"

// Audit is the audit read model: one entry per auditable event, derived
// from the log and keyed by log position, so pages newest first by
// "before" are index range scans. Agent entries go with their agent when
// it is deleted; the deletion itself is an account-level entry. Vectors
// (MemoryEmbedded) and the coalesced key-use counters are not audited:
// they record no decision.
type Audit struct {
	tableModel
}

// NewAudit returns the audit read model stored in db.
func NewAudit(db *DB) *Audit {
	return &Audit{tableModel{db: db, name: AuditProjection, tables: []exportTable{
		{name: "audit_entries", orderBy: "position"},
		{name: "audit_memories", orderBy: "memory_id"},
	}}}
}

// auditRecord is what one event contributes.
type auditRecord struct {
	userID, agentID, operation, memoryType, memoryID string
	details                                          any
}

// Apply implements projections.Projection.
func (a *Audit) Apply(ctx context.Context, events []domain.Event) error {
	var b *batchTx
	return a.db.ApplyEvents(ctx, AuditProjection, events, func(tx *sql.Tx, e domain.Event) error {
		rec, ok, err := auditOf(e)
		if err != nil || !ok {
			return err
		}
		if b == nil || b.tx != tx {
			bt := newBatchTx(ctx, tx)
			b = &bt
		}
		exec := func(query string, args ...any) error {
			if _, err := b.exec(query, args...); err != nil {
				return fmt.Errorf("sqlite: audit: %w", err)
			}
			return nil
		}
		switch {
		case e.Type == memory.MemoryCreated{}.EventType():
			if err := exec(`INSERT INTO audit_memories (memory_id, type) VALUES (?, ?) ON CONFLICT DO NOTHING`, rec.memoryID, rec.memoryType); err != nil {
				return err
			}
		case rec.memoryID != "" && rec.memoryType == "":
			st, err := b.stmt(`SELECT type FROM audit_memories WHERE memory_id = ?`)
			if err != nil {
				return fmt.Errorf("sqlite: audit: %w", err)
			}
			err = st.QueryRowContext(ctx, rec.memoryID).Scan(&rec.memoryType)
			if errors.Is(err, sql.ErrNoRows) {
				return nil // a memory of a deleted agent, or never created: nothing to audit
			}
			if err != nil {
				return fmt.Errorf("sqlite: audit: %w", err)
			}
		case e.Type == memory.AgentDeleted{}.EventType():
			agentID := rec.details.(map[string]string)["agent_id"]
			if err := exec(`DELETE FROM audit_memories WHERE memory_id IN (
				SELECT memory_id FROM audit_entries WHERE user_id = ? AND agent_id = ? AND memory_id <> '')`, rec.userID, agentID); err != nil {
				return err
			}
			if err := exec(`DELETE FROM audit_entries WHERE user_id = ? AND agent_id = ?`, rec.userID, agentID); err != nil {
				return err
			}
		}
		details, err := json.Marshal(rec.details)
		if err != nil {
			return err
		}
		return exec(`INSERT INTO audit_entries (position, id, user_id, agent_id, at, operation, memory_type, memory_id, actor, details)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			e.Position, e.ID, rec.userID, rec.agentID, memTime(e.Time), rec.operation, rec.memoryType, rec.memoryID,
			string(e.Actor.Kind)+":"+e.Actor.ID, string(details))
	}, nil)
}

// auditOf derives the entry of an event; ok is false for events that are
// not audited.
func auditOf(e domain.Event) (rec auditRecord, ok bool, err error) {
	decode := func(v any) error {
		if err := e.Decode(v); err != nil {
			return fmt.Errorf("audit: decode %s: %w", e.Type, err)
		}
		return nil
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
	switch e.Type {
	case memory.AgentCreated{}.EventType():
		var p memory.AgentCreated
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "agent_created", "", "", map[string]any{"embedding_model": p.EmbeddingModel, "dimensions": p.Dimensions})
	case memory.MemoryCreated{}.EventType():
		var p memory.MemoryCreated
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		details := map[string]any{"derived_from": nonNil(p.DerivedFrom)}
		if p.Promotes != nil {
			details["suggestion_id"] = p.Promotes.SuggestionID
			details["suggestion_modified"] = p.Promotes.Modified
		}
		return mem(p.AgentRef, "create", p.Type, p.MemoryID, details)
	case memory.MemoryPatched{}.EventType():
		var p memory.MemoryPatched
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		fields := make([]string, 0, len(p.Content))
		for f := range p.Content {
			fields = append(fields, f)
		}
		slices.Sort(fields)
		return mem(p.AgentRef, "update", "", p.MemoryID, map[string]any{"content_fields": fields, "tags_changed": p.Tags != nil})
	case memory.MemoryUpdated{}.EventType():
		var p memory.MemoryUpdated
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "update", "", p.MemoryID, nil)
	case memory.MemoryForgotten{}.EventType():
		var p memory.MemoryForgotten
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "forget", "", p.MemoryID, nil)
	case memory.MemoryPurged{}.EventType():
		var p memory.MemoryPurged
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "purge", "", p.MemoryID, nil)
	case memory.MemoryRecovered{}.EventType():
		var p memory.MemoryRecovered
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "recover", p.Type, p.MemoryID, map[string]any{"strength": p.Strength})
	case memory.MemoryProtected{}.EventType():
		var p memory.MemoryProtected
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "protect", "", p.MemoryID, nil)
	case memory.MemoryUnprotected{}.EventType():
		var p memory.MemoryUnprotected
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "unprotect", "", p.MemoryID, map[string]any{"strength": p.Strength})
	case memory.MemoryWeakened{}.EventType():
		var p memory.MemoryWeakened
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "weaken", "", p.MemoryID, map[string]any{"by": p.By, "strength": p.Strength, "reason": p.Reason})
	case memory.MemoryVerified{}.EventType():
		var p memory.MemoryVerified
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "verify", "", p.MemoryID, map[string]any{"strength": p.Strength, "reason": p.Reason})
	case memory.AgentModelSwitched{}.EventType():
		var p memory.AgentModelSwitched
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "model_switched", "", "", map[string]any{"model": p.Model, "dimensions": p.Dimensions, "job_id": p.JobID})
	case stack.SettingsChanged{}.EventType():
		var p stack.SettingsChanged
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return mem(p.AgentRef, "settings_changed", "", "", map[string]any{"changed": p.Changed, "settings": p.Settings})
	case memory.AgentDeleted{}.EventType():
		var p memory.AgentDeleted
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return acct(p.UserID, "agent_deleted", map[string]string{"agent_id": p.AgentID})
	case account.TypeUserRegistered:
		var p account.UserRegistered
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return acct(p.UserID, "register", map[string]any{})
	case account.TypeVerificationIssued:
		var p account.VerificationIssued
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return acct(p.UserID, "verification_issued", map[string]any{"expires_at": p.ExpiresAt})
	case account.TypeUserVerified:
		var p account.UserVerified
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return acct(p.UserID, "email_verified", map[string]any{"key_id": p.InitialKey.KeyID, "prefix": p.InitialKey.Prefix})
	case account.TypeAPIKeyCreated:
		var p account.APIKeyCreated
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return acct(p.UserID, "key_created", map[string]any{"key_id": p.Key.KeyID, "name": p.Key.Name, "prefix": p.Key.Prefix})
	case account.TypeAPIKeyRevoked:
		var p account.APIKeyRevoked
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return acct(p.UserID, "key_revoked", map[string]any{"key_id": p.KeyID})
	case account.TypeAPIKeyCycled:
		var p account.APIKeyCycled
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return acct(p.UserID, "key_cycled", map[string]any{"old_key_id": p.OldKeyID, "key_id": p.NewKey.KeyID, "prefix": p.NewKey.Prefix})
	case account.TypeSessionStarted:
		var p account.SessionStarted
		if err := decode(&p); err != nil {
			return rec, false, err
		}
		return acct(p.UserID, "session_started", map[string]any{"session_id": p.SessionID, "key_id": p.KeyID, "expires_at": p.ExpiresAt})
	}
	return rec, false, nil
}

// Entries returns one page of the user's audit entries, newest first: the
// agent's (q.AgentID) or the account's (empty AgentID).
func (a *Audit) Entries(ctx context.Context, q audit.Query) (audit.Page, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = audit.DefaultLimit
	}
	limit = min(limit, audit.MaxLimit)
	before := int64(-1) // no bound
	if q.Before != "" {
		err := a.db.read.QueryRowContext(ctx, `SELECT position FROM audit_entries WHERE id = ? AND user_id = ? AND agent_id = ?`,
			q.Before, q.UserID, q.AgentID).Scan(&before)
		if errors.Is(err, sql.ErrNoRows) {
			return audit.Page{}, domain.Invalid("before", "before must be the id of an entry of this audit trail (next_before of the previous page)")
		}
		if err != nil {
			return audit.Page{}, fmt.Errorf("sqlite: audit: %w", err)
		}
	}
	rows, err := a.db.read.QueryContext(ctx, `SELECT id, agent_id, at, operation, memory_type, memory_id, actor, details FROM audit_entries
		WHERE user_id = ? AND agent_id = ? AND (? < 0 OR position < ?) ORDER BY position DESC LIMIT ?`,
		q.UserID, q.AgentID, before, before, limit+1)
	if err != nil {
		return audit.Page{}, fmt.Errorf("sqlite: audit: %w", err)
	}
	defer rows.Close()
	page := audit.Page{Entries: []audit.Entry{}}
	for rows.Next() {
		var en audit.Entry
		var at, details string
		if err := rows.Scan(&en.ID, &en.AgentID, &at, &en.Operation, &en.MemoryType, &en.MemoryID, &en.Actor, &details); err != nil {
			return audit.Page{}, fmt.Errorf("sqlite: audit: %w", err)
		}
		if en.At, err = parseMemTime(at); err != nil {
			return audit.Page{}, err
		}
		en.Details = json.RawMessage(details)
		page.Entries = append(page.Entries, en)
	}
	if err := rows.Err(); err != nil {
		return audit.Page{}, fmt.Errorf("sqlite: audit: %w", err)
	}
	if len(page.Entries) > limit {
		page.Entries = page.Entries[:limit]
		page.NextBefore = page.Entries[limit-1].ID
	}
	return page, nil
}
