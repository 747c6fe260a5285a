package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/audit"
)

// auditCheckpoint keys the audit read model's checkpoint.
const auditCheckpoint = "audit"

// Audit is the audit read model (audit.ReadModel), keyed by log position,
// so pages newest first by "before" are index range scans.
type Audit struct {
	tableModel
	// inserts are the multi-row INSERT texts of each table, by rows.
	entryInserts, typeInserts rowInserts
}

var _ audit.ReadModel = (*Audit)(nil)

// NewAudit returns the audit read model stored in db.
func NewAudit(db *DB) *Audit {
	return &Audit{
		tableModel: tableModel{db: db, name: auditCheckpoint, tables: auditTables()},
		entryInserts: newRowInserts(`INSERT INTO audit_entries (position, id, user_id, agent_id, at, operation, memory_type, memory_id, actor, source, details) VALUES `,
			auditEntryColumns, ` ON CONFLICT DO NOTHING`),
		typeInserts: newRowInserts(`INSERT INTO audit_memories (memory_id, type) VALUES `, 2, ` ON CONFLICT DO NOTHING`),
	}
}

// auditEntryColumns is the number of values of an audit_entries row.
const auditEntryColumns = 11

// auditTables are the read model's tables with their primary keys.
func auditTables() []exportTable {
	return []exportTable{
		{name: "audit_entries", orderBy: "position"},
		{name: "audit_memories", orderBy: "memory_id"},
	}
}

// Apply implements audit.ReadModel.
func (a *Audit) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, audit.ReadModelTx, domain.Event) error) error {
	return applyBatch(ctx, a.db, auditCheckpoint, events, func(b *batchTx) audit.ReadModelTx { return &auditTx{batchTx: b, audit: a} }, apply, nil)
}

// auditTx is audit.ReadModelTx over one batch's transaction. Nearly every
// audited event adds a row, a created memory two: they are collected and
// inserted many rows per statement (rowInserts), which costs a fraction
// of a statement per row. Whatever reads the tables writes them first.
type auditTx struct {
	*batchTx
	audit *Audit
	// entries and types are the values of the rows not inserted yet, in
	// the order added: ON CONFLICT DO NOTHING keeps the first of a key,
	// within a statement as against the table.
	entries, types []any
}

func (t *auditTx) AddEntry(ctx context.Context, position uint64, userID string, e audit.Entry) error {
	t.entries = append(t.entries, position, e.ID, userID, e.AgentID, memTime(e.At), e.Operation, e.MemoryType, e.MemoryID, e.Actor, e.Source, string(e.Details))
	return nil
}

func (t *auditTx) RememberMemoryType(ctx context.Context, memoryID, memoryType string) error {
	t.types = append(t.types, memoryID, memoryType)
	return nil
}

// endBatch implements batchEnder.
func (t *auditTx) endBatch() error {
	if err := t.audit.entryInserts.flush(t.batchTx, &t.entries); err != nil {
		return err
	}
	return t.writeTypes()
}

// writeTypes inserts the memory types collected.
func (t *auditTx) writeTypes() error { return t.audit.typeInserts.flush(t.batchTx, &t.types) }

func (t *auditTx) MemoryType(ctx context.Context, memoryID string) (string, bool, error) {
	if err := t.writeTypes(); err != nil {
		return "", false, err
	}
	st, err := t.stmt(`SELECT type FROM audit_memories WHERE memory_id = ?`)
	if err != nil {
		return "", false, err
	}
	var typ string
	err = st.QueryRowContext(t.ctx, memoryID).Scan(&typ)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return typ, err == nil, err
}

func (t *auditTx) DeleteAgent(ctx context.Context, userID, agentID string) error {
	if err := t.endBatch(); err != nil {
		return err
	}
	if err := t.run(`DELETE FROM audit_memories WHERE memory_id IN (
		SELECT memory_id FROM audit_entries WHERE user_id = ? AND agent_id = ? AND memory_id <> '')`, userID, agentID); err != nil {
		return err
	}
	return t.run(`DELETE FROM audit_entries WHERE user_id = ? AND agent_id = ?`, userID, agentID)
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
	rows, err := a.db.read.QueryContext(ctx, `SELECT id, agent_id, at, operation, memory_type, memory_id, actor, source, details FROM audit_entries
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
		if err := rows.Scan(&en.ID, &en.AgentID, &at, &en.Operation, &en.MemoryType, &en.MemoryID, &en.Actor, &en.Source, &details); err != nil {
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
