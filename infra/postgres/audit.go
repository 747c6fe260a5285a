package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/audit"
)

// Audit is the audit read model (audit.ReadModel) in PostgreSQL, keyed by
// log position, so pages newest first by "before" are index range scans.
type Audit struct {
	tableModel
}

var _ audit.ReadModel = (*Audit)(nil)

// NewAudit returns the audit read model stored in db.
func NewAudit(db *DB) *Audit {
	return &Audit{tableModel{db: db, name: "audit", tables: []string{"audit_entries", "audit_memories"}}}
}

// Apply implements audit.ReadModel.
func (a *Audit) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, audit.ReadModelTx, domain.Event) error) error {
	return applyBatch(ctx, a.db, a.name, events, func(b batchTx) audit.ReadModelTx { return auditTx{b} }, apply)
}

// auditTx is audit.ReadModelTx over one batch's transaction.
type auditTx struct{ batchTx }

// AddEntry keeps the first entry of a position: a redelivered event
// changes nothing.
func (t auditTx) AddEntry(ctx context.Context, position uint64, userID string, e audit.Entry) error {
	return t.run(ctx, `INSERT INTO audit_entries (position, id, user_id, agent_id, at, operation, memory_type, memory_id, actor, details)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
		int64(position), e.ID, userID, e.AgentID, e.At.UTC(), e.Operation, e.MemoryType, e.MemoryID, e.Actor, string(e.Details))
}

func (t auditTx) RememberMemoryType(ctx context.Context, memoryID, memoryType string) error {
	return t.run(ctx, `INSERT INTO audit_memories (memory_id, type) VALUES ($1, $2) ON CONFLICT DO NOTHING`, memoryID, memoryType)
}

func (t auditTx) MemoryType(ctx context.Context, memoryID string) (string, bool, error) {
	var typ string
	err := t.queryRow(ctx, `SELECT type FROM audit_memories WHERE memory_id = $1`, memoryID).Scan(&typ)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return typ, err == nil, err
}

func (t auditTx) DeleteAgent(ctx context.Context, userID, agentID string) error {
	if err := t.run(ctx, `DELETE FROM audit_memories WHERE memory_id IN (
		SELECT memory_id FROM audit_entries WHERE user_id = $1 AND agent_id = $2 AND memory_id <> '')`, userID, agentID); err != nil {
		return err
	}
	return t.run(ctx, `DELETE FROM audit_entries WHERE user_id = $1 AND agent_id = $2`, userID, agentID)
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
		err := a.db.Pool.QueryRow(ctx, `SELECT position FROM audit_entries WHERE id = $1 AND user_id = $2 AND agent_id = $3`,
			q.Before, q.UserID, q.AgentID).Scan(&before)
		if errors.Is(err, pgx.ErrNoRows) {
			return audit.Page{}, domain.Invalid("before", "before must be the id of an entry of this audit trail (next_before of the previous page)")
		}
		if err != nil {
			return audit.Page{}, fmt.Errorf("postgres: audit: %w", err)
		}
	}
	rows, err := a.db.Pool.Query(ctx, `SELECT id, agent_id, at, operation, memory_type, memory_id, actor, details FROM audit_entries
		WHERE user_id = $1 AND agent_id = $2 AND ($3 < 0 OR position < $3) ORDER BY position DESC LIMIT $4`,
		q.UserID, q.AgentID, before, limit+1)
	if err != nil {
		return audit.Page{}, fmt.Errorf("postgres: audit: %w", err)
	}
	defer rows.Close()
	page := audit.Page{Entries: []audit.Entry{}}
	for rows.Next() {
		var en audit.Entry
		var details string
		if err := rows.Scan(&en.ID, &en.AgentID, &en.At, &en.Operation, &en.MemoryType, &en.MemoryID, &en.Actor, &details); err != nil {
			return audit.Page{}, fmt.Errorf("postgres: audit: %w", err)
		}
		en.At, en.Details = en.At.UTC(), json.RawMessage(details)
		page.Entries = append(page.Entries, en)
	}
	if err := rows.Err(); err != nil {
		return audit.Page{}, fmt.Errorf("postgres: audit: %w", err)
	}
	if len(page.Entries) > limit {
		page.Entries = page.Entries[:limit]
		page.NextBefore = page.Entries[limit-1].ID
	}
	return page, nil
}
