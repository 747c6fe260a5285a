package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/engram-memory/engram/domain"
)

// KeywordStore is the keyword projection's durable state
// (domain.KeywordState) in migrations/0005_keyword.sql,
// 0008_keyword_meta.sql and 0011_keyword_forgotten.sql: every searchable
// memory's stored content, indexed text, metadata and forgotten flag, from
// which the embedded keyword index is loaded at start.
type KeywordStore struct {
	db *DB
	// sourceInserts are the multi-row INSERT texts of the sources a batch
	// holds back (keywordTx).
	sourceInserts rowInserts
}

var _ domain.KeywordState = (*KeywordStore)(nil)

// NewKeywordStore returns the keyword projection's store over db.
func NewKeywordStore(db *DB) *KeywordStore {
	return &KeywordStore{db: db, sourceInserts: newRowInserts(
		`INSERT INTO keyword_docs (memory_id, user_id, agent_id, type, tags, created_ns, body, meta, content, forgotten) VALUES `, keywordSourceColumns, ``)}
}

// keywordSourceColumns is the number of values of a keyword_docs row.
const keywordSourceColumns = 10

// keywordCheckpoint keys the keyword projection's checkpoint.
const keywordCheckpoint = "keyword"

// KeywordCheckpoint implements domain.KeywordState.
func (s *KeywordStore) KeywordCheckpoint(ctx context.Context) (uint64, error) {
	return s.db.Checkpoint(ctx, keywordCheckpoint)
}

// ApplyKeyword implements domain.KeywordState.
func (s *KeywordStore) ApplyKeyword(ctx context.Context, events []domain.Event, apply func(context.Context, domain.KeywordStateTx, domain.Event) error, beforeCommit func(context.Context) error) error {
	return applyBatch(ctx, s.db, keywordCheckpoint, events, func(b *batchTx) domain.KeywordStateTx {
		return &keywordTx{b: b, store: s, agents: map[domain.IndexScope]bool{}, held: map[string]bool{}}
	}, apply, beforeCommit)
}

// ResetKeyword implements domain.KeywordState.
func (s *KeywordStore) ResetKeyword(ctx context.Context) error {
	return s.db.ResetProjection(ctx, keywordCheckpoint, tableNames(keywordTables())...)
}

// LoadKeyword implements domain.KeywordState.
func (s *KeywordStore) LoadKeyword(ctx context.Context, fn func(domain.KeywordSource) error) error {
	rows, err := s.db.read.QueryContext(ctx, `SELECT memory_id, user_id, agent_id, type, tags, created_ns, body, meta, content, forgotten FROM keyword_docs ORDER BY seq`)
	if err != nil {
		return fmt.Errorf("keyword: load: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		src, err := scanKeywordSource(rows.Scan)
		if err != nil {
			return fmt.Errorf("keyword: load: %w", err)
		}
		if err := fn(src); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("keyword: load: %w", err)
	}
	return nil
}

func scanKeywordSource(scan func(...any) error) (domain.KeywordSource, error) {
	var src domain.KeywordSource
	var tags, content []byte
	var created int64
	if err := scan(&src.MemoryID, &src.UserID, &src.AgentID, &src.Type, &tags, &created, &src.Text, &src.Meta, &content, &src.Forgotten); err != nil {
		return src, err
	}
	if err := json.Unmarshal(tags, &src.Tags); err != nil {
		return src, fmt.Errorf("%s tags: %w", src.MemoryID, err)
	}
	src.CreatedAt = time.Unix(0, created).UTC()
	src.Content = json.RawMessage(content)
	return src, nil
}

// keywordTx implements domain.KeywordStateTx on a write transaction.
type keywordTx struct {
	b     *batchTx
	store *KeywordStore
	// agents caches whether an agent exists within the batch (every
	// memory event asks), which changes only by PutAgent and DeleteAgent.
	agents map[domain.IndexScope]bool
	// The inserted sources are held back and written many rows per
	// statement (rowInserts) at the batch's end, in the order they came,
	// so seq is what one insert at a time gives. held names them; a
	// statement that reads or changes a held source writes them first
	// (settle), one that deletes writes them all (writeHeld).
	sourceRows []any
	held       map[string]bool
}

var _ batchEnder = (*keywordTx)(nil)

// endBatch implements batchEnder.
func (t *keywordTx) endBatch() error { return t.writeHeld() }

// settle writes the held sources when memoryID is one of them, before a
// statement that reads or changes it.
func (t *keywordTx) settle(memoryID string) error {
	if t.held[memoryID] {
		return t.writeHeld()
	}
	return nil
}

// writeHeld writes the held sources.
func (t *keywordTx) writeHeld() error {
	if err := t.store.sourceInserts.insert(t.b, t.sourceRows); err != nil {
		return fmt.Errorf("keyword: insert: %w", err)
	}
	t.sourceRows = t.sourceRows[:0]
	clear(t.held)
	return nil
}

func (t *keywordTx) AgentExists(ctx context.Context, scope domain.IndexScope) (bool, error) {
	if ok, known := t.agents[scope]; known {
		return ok, nil
	}
	ok, err := t.b.exists(`SELECT 1 FROM keyword_agents WHERE user_id = ? AND agent_id = ?`, scope.UserID, scope.AgentID)
	if err != nil {
		return false, fmt.Errorf("keyword: agent: %w", err)
	}
	t.agents[scope] = ok
	return ok, nil
}

func (t *keywordTx) PutAgent(ctx context.Context, scope domain.IndexScope) error {
	_, err := t.b.exec(`INSERT INTO keyword_agents (user_id, agent_id) VALUES (?, ?) ON CONFLICT DO NOTHING`, scope.UserID, scope.AgentID)
	if err != nil {
		return fmt.Errorf("keyword: put agent: %w", err)
	}
	t.agents[scope] = true
	return nil
}

func (t *keywordTx) DeleteAgent(ctx context.Context, scope domain.IndexScope) error {
	if err := t.writeHeld(); err != nil {
		return err
	}
	for _, stmt := range []string{`DELETE FROM keyword_docs WHERE user_id = ? AND agent_id = ?`, `DELETE FROM keyword_agents WHERE user_id = ? AND agent_id = ?`} {
		if _, err := t.b.exec(stmt, scope.UserID, scope.AgentID); err != nil {
			return fmt.Errorf("keyword: delete agent: %w", err)
		}
	}
	t.agents[scope] = false
	return nil
}

func (t *keywordTx) Source(ctx context.Context, scope domain.IndexScope, memoryID string) (domain.KeywordSource, bool, error) {
	if err := t.settle(memoryID); err != nil {
		return domain.KeywordSource{}, false, err
	}
	row := t.b.queryRow(`SELECT memory_id, user_id, agent_id, type, tags, created_ns, body, meta, content, forgotten FROM keyword_docs
		WHERE memory_id = ? AND user_id = ? AND agent_id = ?`, memoryID, scope.UserID, scope.AgentID)
	src, err := scanKeywordSource(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return src, false, nil
	}
	if err != nil {
		return src, false, fmt.Errorf("keyword: find: %w", err)
	}
	return src, true, nil
}

// InsertSource holds s back (writeHeld) when no source of its id is
// held or stored: the lookup reads the memory_id index alone, where an
// insert writes the row.
func (t *keywordTx) InsertSource(ctx context.Context, s domain.KeywordSource) (bool, error) {
	if t.held[s.MemoryID] {
		return false, nil
	}
	stored, err := t.b.exists(`SELECT 1 FROM keyword_docs WHERE memory_id = ?`, s.MemoryID)
	if err != nil {
		return false, fmt.Errorf("keyword: insert: %w", err)
	}
	if stored {
		return false, nil
	}
	tags, err := json.Marshal(nonNil(s.Tags))
	if err != nil {
		return false, err
	}
	t.sourceRows = append(t.sourceRows, s.MemoryID, s.UserID, s.AgentID, s.Type, tags, domain.ClampedUnixNano(s.CreatedAt), s.Text, s.Meta, string(s.Content), s.Forgotten)
	t.held[s.MemoryID] = true
	return true, nil
}

func (t *keywordTx) UpdateSource(ctx context.Context, s domain.KeywordSource) error {
	if err := t.settle(s.MemoryID); err != nil {
		return err
	}
	tags, err := json.Marshal(nonNil(s.Tags))
	if err != nil {
		return err
	}
	if _, err := t.b.exec(`UPDATE keyword_docs SET body = ?, meta = ?, tags = ?, content = ?, forgotten = ? WHERE memory_id = ?`,
		s.Text, s.Meta, tags, string(s.Content), s.Forgotten, s.MemoryID); err != nil {
		return fmt.Errorf("keyword: update: %w", err)
	}
	return nil
}

// DeleteSource writes every held source first, not only this one: a
// delete of the source with the highest seq lets the next insert take
// that seq again, so inserts and deletes must reach the table in order.
func (t *keywordTx) DeleteSource(ctx context.Context, scope domain.IndexScope, memoryID string) (bool, error) {
	if err := t.writeHeld(); err != nil {
		return false, err
	}
	n, err := t.b.exec(`DELETE FROM keyword_docs WHERE memory_id = ? AND user_id = ? AND agent_id = ?`, memoryID, scope.UserID, scope.AgentID)
	if err != nil {
		return false, fmt.Errorf("keyword: delete: %w", err)
	}
	return n > 0, nil
}

func nonNil(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return tags
}

// UnitOfWork implements domain.UnitOfWorkStore.
func (s *KeywordStore) UnitOfWork() domain.UnitOfWork { return s.db }

// Export writes the keyword state as JSON lines (see exportTables), for
// the rebuild-equivalence tests.
func (s *KeywordStore) Export(ctx context.Context, w io.Writer) error {
	return exportTables(ctx, s.db.read, w, keywordTables())
}

// keywordTables are the keyword state's tables with their primary keys.
func keywordTables() []exportTable {
	return []exportTable{
		{name: "keyword_docs", orderBy: "seq"},
		{name: "keyword_agents", orderBy: "user_id, agent_id"},
	}
}
