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
}

var _ domain.KeywordState = (*KeywordStore)(nil)

// NewKeywordStore returns the keyword projection's store over db.
func NewKeywordStore(db *DB) *KeywordStore { return &KeywordStore{db: db} }

// keywordCheckpoint keys the keyword projection's checkpoint.
const keywordCheckpoint = "keyword"

// KeywordCheckpoint implements domain.KeywordState.
func (s *KeywordStore) KeywordCheckpoint(ctx context.Context) (uint64, error) {
	return s.db.Checkpoint(ctx, keywordCheckpoint)
}

// CheckpointKey implements domain.CheckpointKeyed.
func (s *KeywordStore) CheckpointKey() (domain.CheckpointTable, string) {
	return s.db, keywordCheckpoint
}

// ApplyKeyword implements domain.KeywordState.
func (s *KeywordStore) ApplyKeyword(ctx context.Context, events []domain.Event, apply func(context.Context, domain.KeywordStateTx, domain.Event) error, beforeCommit func(context.Context) error) error {
	var t *keywordTx
	return s.db.ApplyEvents(ctx, keywordCheckpoint, events, func(tx *sql.Tx, e domain.Event) error {
		if t == nil || t.b.tx != tx { // a retried transaction starts afresh
			t = &keywordTx{b: s.db.batchFor(ctx, tx), agents: map[domain.IndexScope]bool{}}
		}
		return apply(ctx, t, e)
	}, beforeCommit)
}

// ResetKeyword implements domain.KeywordState.
func (s *KeywordStore) ResetKeyword(ctx context.Context) error {
	return s.db.ResetProjection(ctx, keywordCheckpoint, tableNames(keywordTables())...)
}

// LoadKeyword implements domain.KeywordState.
func (s *KeywordStore) LoadKeyword(ctx context.Context, fn func(domain.KeywordSource) error) error {
	return s.load(ctx, fn, `SELECT memory_id, user_id, agent_id, type, tags, created_ns, body, meta, content, forgotten FROM keyword_docs ORDER BY seq`)
}

// LoadKeywordOf implements domain.KeywordState.
func (s *KeywordStore) LoadKeywordOf(ctx context.Context, memoryIDs []string, fn func(domain.KeywordSource) error) error {
	ids, err := json.Marshal(nonNil(memoryIDs))
	if err != nil {
		return err
	}
	// Driven from the ids (CROSS JOIN keeps that order of the loops), so
	// it reads their rows only, not the table in seq order.
	return s.load(ctx, fn, `SELECT k.memory_id, k.user_id, k.agent_id, k.type, k.tags, k.created_ns, k.body, k.meta, k.content, k.forgotten
		FROM (SELECT DISTINCT value AS id FROM json_each(?)) AS ids CROSS JOIN keyword_docs AS k ON k.memory_id = ids.id ORDER BY k.seq`, string(ids))
}

func (s *KeywordStore) load(ctx context.Context, fn func(domain.KeywordSource) error, query string, args ...any) error {
	rows, err := s.db.read.QueryContext(ctx, query, args...)
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
	b *batchTx
	// agents caches whether an agent exists within the batch (every
	// memory event asks), which changes only by PutAgent and DeleteAgent.
	agents map[domain.IndexScope]bool
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
	for _, stmt := range []string{`DELETE FROM keyword_docs WHERE user_id = ? AND agent_id = ?`, `DELETE FROM keyword_agents WHERE user_id = ? AND agent_id = ?`} {
		if _, err := t.b.exec(stmt, scope.UserID, scope.AgentID); err != nil {
			return fmt.Errorf("keyword: delete agent: %w", err)
		}
	}
	t.agents[scope] = false
	return nil
}

func (t *keywordTx) Source(ctx context.Context, scope domain.IndexScope, memoryID string) (domain.KeywordSource, bool, error) {
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

func (t *keywordTx) InsertSource(ctx context.Context, s domain.KeywordSource) (bool, error) {
	tags, err := json.Marshal(nonNil(s.Tags))
	if err != nil {
		return false, err
	}
	n, err := t.b.exec(`INSERT INTO keyword_docs (memory_id, user_id, agent_id, type, tags, created_ns, body, meta, content, forgotten)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (memory_id) DO NOTHING`,
		s.MemoryID, s.UserID, s.AgentID, s.Type, tags, domain.ClampedUnixNano(s.CreatedAt), s.Text, s.Meta, string(s.Content), s.Forgotten)
	if err != nil {
		return false, fmt.Errorf("keyword: insert: %w", err)
	}
	return n > 0, nil
}

func (t *keywordTx) UpdateSource(ctx context.Context, s domain.KeywordSource) error {
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

func (t *keywordTx) DeleteSource(ctx context.Context, scope domain.IndexScope, memoryID string) (bool, error) {
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
