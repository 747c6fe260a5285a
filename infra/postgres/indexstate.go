package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
)

// KeywordState is the keyword projection's state (domain.KeywordState) in
// PostgreSQL (migrations/0011_index_state.sql), for a remote keyword index
// shared by several nodes: its checkpoint is a row of
// projection_checkpoints, locked while a batch applies and its index
// writes are made.
type KeywordState struct{ tableModel }

var _ domain.KeywordState = (*KeywordState)(nil)

// NewKeywordState returns the keyword projection's state in db; its
// checkpoint is keyed name (the projection's name).
func NewKeywordState(db *DB, name string) *KeywordState {
	return &KeywordState{tableModel{db: db, name: name, tables: []string{"keyword_docs", "keyword_agents"}}}
}

// KeywordCheckpoint implements domain.KeywordState.
func (s *KeywordState) KeywordCheckpoint(ctx context.Context) (uint64, error) {
	return s.Checkpoint(ctx)
}

// ApplyKeyword implements domain.KeywordState.
func (s *KeywordState) ApplyKeyword(ctx context.Context, events []domain.Event, apply func(context.Context, domain.KeywordStateTx, domain.Event) error, beforeCommit func(context.Context) error) error {
	return applyBatchThen(ctx, s.db, s.name, events, func(b batchTx) domain.KeywordStateTx { return keywordTx{b} }, apply, beforeCommit)
}

// ResetKeyword implements domain.KeywordState.
func (s *KeywordState) ResetKeyword(ctx context.Context) error { return s.Reset(ctx) }

const keywordColumns = `memory_id, user_id, agent_id, type, tags, created_ns, body, meta, content, forgotten`

// LoadKeyword implements domain.KeywordState.
func (s *KeywordState) LoadKeyword(ctx context.Context, fn func(domain.KeywordSource) error) error {
	return s.load(ctx, fn, `SELECT `+keywordColumns+` FROM keyword_docs ORDER BY seq`)
}

// LoadKeywordOf implements domain.KeywordState.
func (s *KeywordState) LoadKeywordOf(ctx context.Context, memoryIDs []string, fn func(domain.KeywordSource) error) error {
	return s.load(ctx, fn, `SELECT `+keywordColumns+` FROM keyword_docs WHERE memory_id = ANY($1) ORDER BY seq`, nonNilIDs(memoryIDs))
}

// nonNilIDs passes no ids as an empty array, not NULL.
func nonNilIDs(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

func (s *KeywordState) load(ctx context.Context, fn func(domain.KeywordSource) error, query string, args ...any) error {
	rows, err := s.db.Pool.Query(ctx, query, args...)
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
	var tags, content string
	var created int64
	if err := scan(&src.MemoryID, &src.UserID, &src.AgentID, &src.Type, &tags, &created, &src.Text, &src.Meta, &content, &src.Forgotten); err != nil {
		return src, err
	}
	if err := json.Unmarshal([]byte(tags), &src.Tags); err != nil {
		return src, fmt.Errorf("%s tags: %w", src.MemoryID, err)
	}
	src.CreatedAt = time.Unix(0, created).UTC()
	src.Content = json.RawMessage(content)
	return src, nil
}

// keywordTx is domain.KeywordStateTx over one batch's transaction.
type keywordTx struct{ batchTx }

func (t keywordTx) AgentExists(ctx context.Context, scope domain.IndexScope) (bool, error) {
	var exists bool
	err := t.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM keyword_agents WHERE user_id = $1 AND agent_id = $2)`, scope.UserID, scope.AgentID).Scan(&exists)
	if err != nil {
		return false, fmt.Errorf("keyword: agent: %w", err)
	}
	return exists, nil
}

func (t keywordTx) PutAgent(ctx context.Context, scope domain.IndexScope) error {
	if err := t.run(ctx, `INSERT INTO keyword_agents (user_id, agent_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, scope.UserID, scope.AgentID); err != nil {
		return fmt.Errorf("keyword: put agent: %w", err)
	}
	return nil
}

func (t keywordTx) DeleteAgent(ctx context.Context, scope domain.IndexScope) error {
	for _, stmt := range []string{`DELETE FROM keyword_docs WHERE user_id = $1 AND agent_id = $2`, `DELETE FROM keyword_agents WHERE user_id = $1 AND agent_id = $2`} {
		if err := t.run(ctx, stmt, scope.UserID, scope.AgentID); err != nil {
			return fmt.Errorf("keyword: delete agent: %w", err)
		}
	}
	return nil
}

func (t keywordTx) Source(ctx context.Context, scope domain.IndexScope, memoryID string) (domain.KeywordSource, bool, error) {
	row := t.queryRow(ctx, `SELECT `+keywordColumns+` FROM keyword_docs WHERE memory_id = $1 AND user_id = $2 AND agent_id = $3`, memoryID, scope.UserID, scope.AgentID)
	src, err := scanKeywordSource(row.Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return src, false, nil
	}
	if err != nil {
		return src, false, fmt.Errorf("keyword: find: %w", err)
	}
	return src, true, nil
}

func (t keywordTx) InsertSource(ctx context.Context, s domain.KeywordSource) (bool, error) {
	tags, err := tagsJSON(s.Tags)
	if err != nil {
		return false, err
	}
	n, err := t.exec(ctx, `INSERT INTO keyword_docs (`+keywordColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (memory_id) DO NOTHING`,
		s.MemoryID, s.UserID, s.AgentID, s.Type, tags, domain.ClampedUnixNano(s.CreatedAt), s.Text, s.Meta, string(s.Content), s.Forgotten)
	if err != nil {
		return false, fmt.Errorf("keyword: insert: %w", err)
	}
	return n > 0, nil
}

func (t keywordTx) UpdateSource(ctx context.Context, s domain.KeywordSource) error {
	tags, err := tagsJSON(s.Tags)
	if err != nil {
		return err
	}
	if err := t.run(ctx, `UPDATE keyword_docs SET body = $1, meta = $2, tags = $3, content = $4, forgotten = $5 WHERE memory_id = $6`,
		s.Text, s.Meta, tags, string(s.Content), s.Forgotten, s.MemoryID); err != nil {
		return fmt.Errorf("keyword: update: %w", err)
	}
	return nil
}

func (t keywordTx) DeleteSource(ctx context.Context, scope domain.IndexScope, memoryID string) (bool, error) {
	n, err := t.exec(ctx, `DELETE FROM keyword_docs WHERE memory_id = $1 AND user_id = $2 AND agent_id = $3`, memoryID, scope.UserID, scope.AgentID)
	if err != nil {
		return false, fmt.Errorf("keyword: delete: %w", err)
	}
	return n > 0, nil
}

// VectorState is the vector projection's state (domain.VectorState) in
// PostgreSQL, for a remote vector index shared by several nodes, as
// KeywordState is the keyword projection's.
type VectorState struct{ tableModel }

var _ domain.VectorState = (*VectorState)(nil)

// NewVectorState returns the vector projection's state in db; its
// checkpoint is keyed name (the projection's name).
func NewVectorState(db *DB, name string) *VectorState {
	return &VectorState{tableModel{db: db, name: name, tables: []string{"vector_vectors", "vector_memories", "vector_agents"}}}
}

// VectorsCheckpoint implements domain.VectorState.
func (s *VectorState) VectorsCheckpoint(ctx context.Context) (uint64, error) {
	return s.Checkpoint(ctx)
}

// ApplyVectors implements domain.VectorState.
func (s *VectorState) ApplyVectors(ctx context.Context, events []domain.Event, apply func(context.Context, domain.VectorStateTx, domain.Event) error, beforeCommit func(context.Context) error) error {
	return applyBatchThen(ctx, s.db, s.name, events, func(b batchTx) domain.VectorStateTx { return vectorTx{b} }, apply, beforeCommit)
}

// ResetVectors implements domain.VectorState.
func (s *VectorState) ResetVectors(ctx context.Context) error { return s.Reset(ctx) }

// VectorAgents implements domain.VectorState.
func (s *VectorState) VectorAgents(ctx context.Context) ([]domain.VectorAgent, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT user_id, agent_id, model, dimensions FROM vector_agents ORDER BY user_id, agent_id`)
	if err != nil {
		return nil, fmt.Errorf("vectors: agents: %w", err)
	}
	defer rows.Close()
	var out []domain.VectorAgent
	for rows.Next() {
		var a domain.VectorAgent
		if err := rows.Scan(&a.UserID, &a.AgentID, &a.Space.Model, &a.Space.Dimensions); err != nil {
			return nil, fmt.Errorf("vectors: agents: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// LoadVectors implements domain.VectorState.
func (s *VectorState) LoadVectors(ctx context.Context, fn func(domain.LoadedVector) error) error {
	return s.load(ctx, fn, `SELECT m.memory_id, m.user_id, m.agent_id, m.type, m.tags, m.created_ns, m.text_hash, m.forgotten, v.model, v.dimensions, v.vector
FROM vector_vectors AS v JOIN vector_memories AS m ON m.memory_id = v.memory_id AND m.text_hash = v.text_hash
ORDER BY v.seq`)
}

// LoadVectorsOf implements domain.VectorState.
func (s *VectorState) LoadVectorsOf(ctx context.Context, memoryIDs []string, fn func(domain.LoadedVector) error) error {
	return s.load(ctx, fn, `SELECT m.memory_id, m.user_id, m.agent_id, m.type, m.tags, m.created_ns, m.text_hash, m.forgotten, v.model, v.dimensions, v.vector
FROM vector_vectors AS v JOIN vector_memories AS m ON m.memory_id = v.memory_id AND m.text_hash = v.text_hash
WHERE m.memory_id = ANY($1)
ORDER BY v.seq`, nonNilIDs(memoryIDs))
}

func (s *VectorState) load(ctx context.Context, fn func(domain.LoadedVector) error, query string, args ...any) error {
	rows, err := s.db.Pool.Query(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("vectors: load: %w", err)
	}
	defer rows.Close()
	var (
		lv      domain.LoadedVector
		tags    string
		created int64
	)
	for rows.Next() {
		m := &lv.Memory
		if err := rows.Scan(&m.MemoryID, &m.UserID, &m.AgentID, &m.Type, &tags, &created, &m.TextHash, &m.Forgotten, &lv.Space.Model, &lv.Space.Dimensions, &lv.Vector); err != nil {
			return fmt.Errorf("vectors: load: %w", err)
		}
		m.CreatedAt, m.Tags = time.Unix(0, created).UTC(), nil
		if err := json.Unmarshal([]byte(tags), &m.Tags); err != nil {
			return fmt.Errorf("vectors: load %s tags: %w", m.MemoryID, err)
		}
		if err := fn(lv); err != nil {
			return err
		}
	}
	return rows.Err()
}

// vectorTx is domain.VectorStateTx over one batch's transaction.
type vectorTx struct{ batchTx }

func (t vectorTx) Agent(ctx context.Context, userID, agentID string) (domain.VectorAgent, bool, error) {
	a := domain.VectorAgent{UserID: userID, AgentID: agentID}
	err := t.queryRow(ctx, `SELECT model, dimensions FROM vector_agents WHERE user_id = $1 AND agent_id = $2`, userID, agentID).Scan(&a.Space.Model, &a.Space.Dimensions)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, false, nil
	}
	if err != nil {
		return a, false, fmt.Errorf("vectors: agent: %w", err)
	}
	return a, true, nil
}

func (t vectorTx) PutAgent(ctx context.Context, a domain.VectorAgent) error {
	if err := t.run(ctx, `INSERT INTO vector_agents (user_id, agent_id, model, dimensions) VALUES ($1, $2, $3, $4)
		ON CONFLICT (user_id, agent_id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions`, a.UserID, a.AgentID, a.Space.Model, a.Space.Dimensions); err != nil {
		return fmt.Errorf("vectors: put agent: %w", err)
	}
	return nil
}

func (t vectorTx) DeleteAgent(ctx context.Context, userID, agentID string) error {
	for _, stmt := range []string{
		`DELETE FROM vector_vectors WHERE memory_id IN (SELECT memory_id FROM vector_memories WHERE user_id = $1 AND agent_id = $2)`,
		`DELETE FROM vector_memories WHERE user_id = $1 AND agent_id = $2`,
		`DELETE FROM vector_agents WHERE user_id = $1 AND agent_id = $2`,
	} {
		if err := t.run(ctx, stmt, userID, agentID); err != nil {
			return fmt.Errorf("vectors: delete agent: %w", err)
		}
	}
	return nil
}

func (t vectorTx) Memory(ctx context.Context, memoryID string) (domain.VectorMemory, bool, error) {
	m := domain.VectorMemory{MemoryID: memoryID}
	var tags string
	var created int64
	err := t.queryRow(ctx, `SELECT user_id, agent_id, type, tags, created_ns, text_hash, forgotten FROM vector_memories WHERE memory_id = $1`, memoryID).
		Scan(&m.UserID, &m.AgentID, &m.Type, &tags, &created, &m.TextHash, &m.Forgotten)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("vectors: memory: %w", err)
	}
	m.CreatedAt = time.Unix(0, created).UTC()
	if err := json.Unmarshal([]byte(tags), &m.Tags); err != nil {
		return m, false, fmt.Errorf("vectors: memory %s tags: %w", memoryID, err)
	}
	return m, true, nil
}

func (t vectorTx) InsertMemory(ctx context.Context, m domain.VectorMemory) (bool, error) {
	tags, err := tagsJSON(m.Tags)
	if err != nil {
		return false, err
	}
	n, err := t.exec(ctx, `INSERT INTO vector_memories (memory_id, user_id, agent_id, type, tags, created_ns, text_hash, forgotten)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (memory_id) DO NOTHING`,
		m.MemoryID, m.UserID, m.AgentID, m.Type, tags, domain.ClampedUnixNano(m.CreatedAt), m.TextHash, m.Forgotten)
	if err != nil {
		return false, fmt.Errorf("vectors: insert memory: %w", err)
	}
	return n > 0, nil
}

func (t vectorTx) PutMemory(ctx context.Context, m domain.VectorMemory) error {
	tags, err := tagsJSON(m.Tags)
	if err != nil {
		return err
	}
	if err := t.run(ctx, `INSERT INTO vector_memories (memory_id, user_id, agent_id, type, tags, created_ns, text_hash, forgotten)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (memory_id) DO UPDATE SET tags = excluded.tags, text_hash = excluded.text_hash, forgotten = excluded.forgotten`,
		m.MemoryID, m.UserID, m.AgentID, m.Type, tags, domain.ClampedUnixNano(m.CreatedAt), m.TextHash, m.Forgotten); err != nil {
		return fmt.Errorf("vectors: put memory: %w", err)
	}
	return nil
}

func (t vectorTx) DeleteMemory(ctx context.Context, memoryID string) error {
	for _, stmt := range []string{`DELETE FROM vector_vectors WHERE memory_id = $1`, `DELETE FROM vector_memories WHERE memory_id = $1`} {
		if err := t.run(ctx, stmt, memoryID); err != nil {
			return fmt.Errorf("vectors: delete memory: %w", err)
		}
	}
	return nil
}

func (t vectorTx) PutVector(ctx context.Context, memoryID string, space domain.VectorSpace, textHash string, v []float32) error {
	if err := t.run(ctx, `INSERT INTO vector_vectors (memory_id, model, dimensions, text_hash, vector) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (memory_id, model, dimensions, text_hash) DO UPDATE SET vector = excluded.vector`, memoryID, space.Model, space.Dimensions, textHash, v); err != nil {
		return fmt.Errorf("vectors: put vector: %w", err)
	}
	return nil
}

func (t vectorTx) CurrentVectors(ctx context.Context, memoryID string) ([]domain.StoredVector, error) {
	rows, err := t.query(ctx, `SELECT v.model, v.dimensions, v.vector FROM vector_vectors AS v
		JOIN vector_memories AS m ON m.memory_id = v.memory_id AND m.text_hash = v.text_hash
		WHERE v.memory_id = $1 ORDER BY v.seq`, memoryID)
	if err != nil {
		return nil, fmt.Errorf("vectors: current: %w", err)
	}
	defer rows.Close()
	var out []domain.StoredVector
	for rows.Next() {
		var sv domain.StoredVector
		if err := rows.Scan(&sv.Space.Model, &sv.Space.Dimensions, &sv.Vector); err != nil {
			return nil, fmt.Errorf("vectors: current: %w", err)
		}
		out = append(out, sv)
	}
	return out, rows.Err()
}

func (t vectorTx) DeleteSpace(ctx context.Context, userID, agentID string, space domain.VectorSpace) error {
	if err := t.run(ctx, `DELETE FROM vector_vectors WHERE model = $1 AND dimensions = $2
		AND memory_id IN (SELECT memory_id FROM vector_memories WHERE user_id = $3 AND agent_id = $4)`, space.Model, space.Dimensions, userID, agentID); err != nil {
		return fmt.Errorf("vectors: delete model: %w", err)
	}
	return nil
}

// tagsJSON is a memory's tags as the JSON array the state keeps ([] for none).
func tagsJSON(tags []string) (string, error) {
	if tags == nil {
		tags = []string{}
	}
	raw, err := json.Marshal(tags)
	return string(raw), err
}
