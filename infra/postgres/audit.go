package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
	return applyBatch(ctx, a.db, a.name, events, func(b batchTx) audit.ReadModelTx { return &auditTx{batchTx: b} }, apply)
}

// auditTx is audit.ReadModelTx over one batch's transaction. The trail
// only grows by inserts, one or two per event, so they are collected and
// written as one multi-row statement per table (queueRows), before
// anything that reads or deletes audit rows and when the batch ends: a
// rebuild sends a statement per few thousand entries instead of per entry.
type auditTx struct {
	batchTx
	entries auditEntryRows
	types   auditTypeRows
}

// auditEntryRows are audit_entries rows by column.
type auditEntryRows struct {
	position                                                                     []int64
	id, userID, agentID, operation, memoryType, memoryID, actor, source, details []string
	at                                                                           []time.Time
}

// auditTypeRows are audit_memories rows by column.
type auditTypeRows struct{ memoryID, memoryType []string }

// AddEntry keeps the first entry of a position: a redelivered event
// changes nothing.
func (t *auditTx) AddEntry(ctx context.Context, position uint64, userID string, e audit.Entry) error {
	r := &t.entries
	r.position = append(r.position, int64(position))
	r.id, r.userID, r.agentID = append(r.id, e.ID), append(r.userID, userID), append(r.agentID, e.AgentID)
	r.at, r.operation = append(r.at, e.At.UTC()), append(r.operation, e.Operation)
	r.memoryType, r.memoryID = append(r.memoryType, e.MemoryType), append(r.memoryID, e.MemoryID)
	r.actor, r.source, r.details = append(r.actor, e.Actor), append(r.source, e.Source), append(r.details, string(e.Details))
	if len(r.position) >= maxRows {
		return t.queueRows(ctx)
	}
	return nil
}

func (t *auditTx) RememberMemoryType(ctx context.Context, memoryID, memoryType string) error {
	t.types.memoryID, t.types.memoryType = append(t.types.memoryID, memoryID), append(t.types.memoryType, memoryType)
	if len(t.types.memoryID) >= maxRows {
		return t.queueRows(ctx)
	}
	return nil
}

// maxRows bounds the rows one multi-row statement carries.
const maxRows = 4096

// queueRows queues the collected rows as one statement per table; ON
// CONFLICT DO NOTHING keeps the first row of a key, within the statement
// as against the table.
func (t *auditTx) queueRows(ctx context.Context) error {
	if r := t.entries; len(r.position) > 0 {
		if err := t.run(ctx, `INSERT INTO audit_entries (position, id, user_id, agent_id, at, operation, memory_type, memory_id, actor, source, details)
			SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
			ON CONFLICT DO NOTHING`,
			r.position, r.id, r.userID, r.agentID, r.at, r.operation, r.memoryType, r.memoryID, r.actor, r.source, r.details); err != nil {
			return err
		}
		t.entries = auditEntryRows{}
	}
	if r := t.types; len(r.memoryID) > 0 {
		if err := t.run(ctx, `INSERT INTO audit_memories (memory_id, type) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`,
			r.memoryID, r.memoryType); err != nil {
			return err
		}
		t.types = auditTypeRows{}
	}
	return nil
}

// endBatch implements batchEnder.
func (t *auditTx) endBatch(ctx context.Context) error { return t.queueRows(ctx) }

func (t *auditTx) MemoryType(ctx context.Context, memoryID string) (string, bool, error) {
	if err := t.queueRows(ctx); err != nil {
		return "", false, err
	}
	var typ string
	err := t.queryRow(ctx, `SELECT type FROM audit_memories WHERE memory_id = $1`, memoryID).Scan(&typ)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return typ, err == nil, err
}

func (t *auditTx) DeleteAgent(ctx context.Context, userID, agentID string) error {
	if err := t.queueRows(ctx); err != nil {
		return err
	}
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
	rows, err := a.db.Pool.Query(ctx, `SELECT id, agent_id, at, operation, memory_type, memory_id, actor, source, details FROM audit_entries
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
		if err := rows.Scan(&en.ID, &en.AgentID, &en.At, &en.Operation, &en.MemoryType, &en.MemoryID, &en.Actor, &en.Source, &details); err != nil {
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
