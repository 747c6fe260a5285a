package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/engram-memory/engram/domain"
)

// VectorStore is the durable state of the vector projection
// (domain.VectorState) in migrations/0004_vectors.sql.
type VectorStore struct {
	db *DB
	// vectorInserts are the multi-row INSERT texts of the vectors a
	// batch holds back (vectorTx).
	vectorInserts rowInserts
}

var _ domain.VectorState = (*VectorStore)(nil)

// NewVectorStore returns the vector projection's store over db.
func NewVectorStore(db *DB) *VectorStore {
	return &VectorStore{
		db: db,
		// A vector of a key held or stored already replaces its vector,
		// row by row within one statement as against the table.
		vectorInserts: newRowInserts(`INSERT INTO vector_vectors (memory_id, model, dimensions, text_hash, vector) VALUES `,
			vectorColumns, ` ON CONFLICT (memory_id, model, dimensions, text_hash) DO UPDATE SET vector = excluded.vector`),
	}
}

// vectorColumns is the number of values of a vector_vectors row.
const vectorColumns = 5

// vectorsCheckpoint keys the vector projection's checkpoint.
const vectorsCheckpoint = "vectors"

// VectorsCheckpoint implements domain.VectorState.
func (s *VectorStore) VectorsCheckpoint(ctx context.Context) (uint64, error) {
	return s.db.Checkpoint(ctx, vectorsCheckpoint)
}

// CheckpointKey implements domain.CheckpointKeyed.
func (s *VectorStore) CheckpointKey() (domain.CheckpointTable, string) {
	return s.db, vectorsCheckpoint
}

// ApplyVectors implements domain.VectorState.
func (s *VectorStore) ApplyVectors(ctx context.Context, events []domain.Event, apply func(context.Context, domain.VectorStateTx, domain.Event) error, beforeCommit func(context.Context) error) error {
	return applyBatch(ctx, s.db, vectorsCheckpoint, events, func(b *batchTx) domain.VectorStateTx {
		return &vectorTx{b: b, store: s, agents: map[domain.IndexScope]cachedAgent{}, memories: map[string]cachedMemory{}, held: map[string]bool{}}
	}, apply, beforeCommit)
}

// ResetVectors implements domain.VectorState.
func (s *VectorStore) ResetVectors(ctx context.Context) error {
	return s.db.ResetProjection(ctx, vectorsCheckpoint, tableNames(vectorTables())...)
}

// VectorAgents implements domain.VectorState.
func (s *VectorStore) VectorAgents(ctx context.Context) ([]domain.VectorAgent, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT user_id, agent_id, model, dimensions FROM vector_agents`)
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

// LoadVectors implements domain.VectorState. Rows come in seq order
// (the order the log inserted them) without a sort; the projection loads
// before it applies anything, so nothing changes underneath.
func (s *VectorStore) LoadVectors(ctx context.Context, fn func(domain.LoadedVector) error) error {
	return s.load(ctx, fn, `SELECT m.memory_id, m.user_id, m.agent_id, m.type, m.tags, m.created_ns, m.text_hash, m.forgotten, v.model, v.dimensions, v.vector
FROM vector_vectors AS v JOIN vector_memories AS m ON m.memory_id = v.memory_id AND m.text_hash = v.text_hash
ORDER BY v.seq`)
}

// LoadVectorsOf implements domain.VectorState.
func (s *VectorStore) LoadVectorsOf(ctx context.Context, memoryIDs []string, fn func(domain.LoadedVector) error) error {
	ids, err := json.Marshal(nonNil(memoryIDs))
	if err != nil {
		return err
	}
	// Driven from the ids (CROSS JOIN keeps that order of the loops), so
	// it reads their rows only, not the table in seq order.
	return s.load(ctx, fn, `SELECT m.memory_id, m.user_id, m.agent_id, m.type, m.tags, m.created_ns, m.text_hash, m.forgotten, v.model, v.dimensions, v.vector
FROM (SELECT DISTINCT value AS id FROM json_each(?)) AS ids CROSS JOIN vector_memories AS m ON m.memory_id = ids.id
CROSS JOIN vector_vectors AS v ON v.memory_id = m.memory_id AND v.text_hash = m.text_hash
ORDER BY v.seq`, string(ids))
}

func (s *VectorStore) load(ctx context.Context, fn func(domain.LoadedVector) error, query string, args ...any) error {
	rows, err := s.db.read.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("vectors: load: %w", err)
	}
	defer rows.Close()
	var (
		lv      domain.LoadedVector
		typ     string
		tags    []byte
		created int64
		blob    []byte
		buf     []float32
	)
	for rows.Next() {
		m := &lv.Memory
		if err := rows.Scan(&m.MemoryID, &m.UserID, &m.AgentID, &typ, &tags, &created, &m.TextHash, &m.Forgotten, &lv.Space.Model, &lv.Space.Dimensions, &blob); err != nil {
			return fmt.Errorf("vectors: load: %w", err)
		}
		m.Type, m.CreatedAt, m.Tags = typ, time.Unix(0, created).UTC(), nil
		if err := json.Unmarshal(tags, &m.Tags); err != nil {
			return fmt.Errorf("vectors: load %s tags: %w", m.MemoryID, err)
		}
		buf, err = decodeVector(buf, blob)
		if err != nil {
			return fmt.Errorf("vectors: load %s: %w", m.MemoryID, err)
		}
		lv.Vector = buf
		if err := fn(lv); err != nil {
			return err
		}
	}
	return rows.Err()
}

// vectorTx implements domain.VectorStateTx on a write transaction.
type vectorTx struct {
	b     *batchTx
	store *VectorStore
	// agents and memories cache, within the batch, the rows every memory
	// event looks up (a creation and its embedding both read the agent and
	// the memory); the writes below keep them current.
	agents   map[domain.IndexScope]cachedAgent
	memories map[string]cachedMemory
	// The put vectors are held back and written many rows per statement
	// (rowInserts) at the batch's end, in the order they came, so seq is
	// what one insert at a time gives. held names the memories with held
	// vectors: a read of a held memory's vectors writes them first
	// (settle), a delete writes all (writeHeld). The memories' rows are
	// not held: InsertMemory must tell whether the id is stored, and a
	// lookup costs what the insert-if-absent does.
	vectorRows []any
	held       map[string]bool
}

var _ batchEnder = (*vectorTx)(nil)

// endBatch implements batchEnder.
func (t *vectorTx) endBatch() error { return t.writeHeld() }

// settle writes the held vectors when memoryID has any, before a
// statement that reads them.
func (t *vectorTx) settle(memoryID string) error {
	if t.held[memoryID] {
		return t.writeHeld()
	}
	return nil
}

// writeHeld writes the held vectors.
func (t *vectorTx) writeHeld() error {
	if err := t.store.vectorInserts.flush(t.b, &t.vectorRows); err != nil {
		return fmt.Errorf("vectors: put vectors: %w", err)
	}
	clear(t.held)
	return nil
}

type cachedAgent struct {
	agent domain.VectorAgent
	found bool
}

type cachedMemory struct {
	memory domain.VectorMemory
	found  bool
}

func (t *vectorTx) Agent(ctx context.Context, userID, agentID string) (domain.VectorAgent, bool, error) {
	scope := domain.IndexScope{UserID: userID, AgentID: agentID}
	if c, known := t.agents[scope]; known {
		return c.agent, c.found, nil
	}
	a := domain.VectorAgent{UserID: userID, AgentID: agentID}
	err := t.b.queryRow(`SELECT model, dimensions FROM vector_agents WHERE user_id = ? AND agent_id = ?`, userID, agentID).Scan(&a.Space.Model, &a.Space.Dimensions)
	found := err == nil
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	if err != nil {
		return a, false, fmt.Errorf("vectors: agent: %w", err)
	}
	t.agents[scope] = cachedAgent{agent: a, found: found}
	return a, found, nil
}

func (t *vectorTx) PutAgent(ctx context.Context, a domain.VectorAgent) error {
	_, err := t.b.exec(`INSERT INTO vector_agents (user_id, agent_id, model, dimensions) VALUES (?, ?, ?, ?)
		ON CONFLICT (user_id, agent_id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions`, a.UserID, a.AgentID, a.Space.Model, a.Space.Dimensions)
	if err != nil {
		return fmt.Errorf("vectors: put agent: %w", err)
	}
	t.agents[a.Scope()] = cachedAgent{agent: a, found: true}
	return nil
}

func (t *vectorTx) DeleteAgent(ctx context.Context, userID, agentID string) error {
	if err := t.writeHeld(); err != nil {
		return err
	}
	for _, stmt := range []string{
		`DELETE FROM vector_vectors WHERE memory_id IN (SELECT memory_id FROM vector_memories WHERE user_id = ? AND agent_id = ?)`,
		`DELETE FROM vector_memories WHERE user_id = ? AND agent_id = ?`,
		`DELETE FROM vector_agents WHERE user_id = ? AND agent_id = ?`,
	} {
		if _, err := t.b.exec(stmt, userID, agentID); err != nil {
			return fmt.Errorf("vectors: delete agent: %w", err)
		}
	}
	scope := domain.IndexScope{UserID: userID, AgentID: agentID}
	t.agents[scope] = cachedAgent{agent: domain.VectorAgent{UserID: userID, AgentID: agentID}}
	clear(t.memories) // the agent's memories went with it
	return nil
}

func (t *vectorTx) Memory(ctx context.Context, memoryID string) (domain.VectorMemory, bool, error) {
	if c, known := t.memories[memoryID]; known {
		return c.memory, c.found, nil
	}
	m := domain.VectorMemory{MemoryID: memoryID}
	var typ string
	var tags []byte
	var created int64
	err := t.b.queryRow(`SELECT user_id, agent_id, type, tags, created_ns, text_hash, forgotten FROM vector_memories WHERE memory_id = ?`, memoryID).
		Scan(&m.UserID, &m.AgentID, &typ, &tags, &created, &m.TextHash, &m.Forgotten)
	if errors.Is(err, sql.ErrNoRows) {
		t.memories[memoryID] = cachedMemory{memory: m}
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("vectors: memory: %w", err)
	}
	m.Type, m.CreatedAt = typ, time.Unix(0, created).UTC()
	if err := json.Unmarshal(tags, &m.Tags); err != nil {
		return m, false, fmt.Errorf("vectors: memory %s tags: %w", memoryID, err)
	}
	t.memories[memoryID] = cachedMemory{memory: m, found: true}
	return m, true, nil
}

func (t *vectorTx) InsertMemory(ctx context.Context, m domain.VectorMemory) (bool, error) {
	if c, known := t.memories[m.MemoryID]; known && c.found {
		return false, nil
	}
	tags, err := json.Marshal(nonNil(m.Tags))
	if err != nil {
		return false, err
	}
	n, err := t.b.exec(`INSERT INTO vector_memories (memory_id, user_id, agent_id, type, tags, created_ns, text_hash, forgotten)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (memory_id) DO NOTHING`,
		m.MemoryID, m.UserID, m.AgentID, m.Type, tags, domain.ClampedUnixNano(m.CreatedAt), m.TextHash, m.Forgotten)
	if err != nil {
		return false, fmt.Errorf("vectors: insert memory: %w", err)
	}
	if n == 0 {
		delete(t.memories, m.MemoryID) // stored before: Memory reads it
		return false, nil
	}
	t.memories[m.MemoryID] = cachedMemory{memory: storedVectorMemory(m), found: true}
	return true, nil
}

func (t *vectorTx) PutMemory(ctx context.Context, m domain.VectorMemory) error {
	tags, err := json.Marshal(nonNil(m.Tags))
	if err != nil {
		return err
	}
	_, err = t.b.exec(`INSERT INTO vector_memories (memory_id, user_id, agent_id, type, tags, created_ns, text_hash, forgotten)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (memory_id) DO UPDATE SET tags = excluded.tags, text_hash = excluded.text_hash, forgotten = excluded.forgotten`,
		m.MemoryID, m.UserID, m.AgentID, m.Type, tags, domain.ClampedUnixNano(m.CreatedAt), m.TextHash, m.Forgotten)
	if err != nil {
		return fmt.Errorf("vectors: put memory: %w", err)
	}
	// An update keeps the stored row's owner, type and time, so only a
	// row known to be new is cached (as Memory would read it back); an
	// update drops the entry.
	if c, known := t.memories[m.MemoryID]; known && !c.found {
		t.memories[m.MemoryID] = cachedMemory{memory: storedVectorMemory(m), found: true}
	} else {
		delete(t.memories, m.MemoryID)
	}
	return nil
}

// storedVectorMemory is m as Memory reads it back once stored.
func storedVectorMemory(m domain.VectorMemory) domain.VectorMemory {
	m.Tags = append([]string{}, m.Tags...)
	m.CreatedAt = time.Unix(0, domain.ClampedUnixNano(m.CreatedAt)).UTC()
	return m
}

// DeleteMemory writes every held vector first, not only the memory's: a
// delete of the vector with the highest seq lets the next insert take
// that seq again, so inserts and deletes must reach the table in order.
func (t *vectorTx) DeleteMemory(ctx context.Context, memoryID string) error {
	if err := t.writeHeld(); err != nil {
		return err
	}
	for _, stmt := range []string{
		`DELETE FROM vector_vectors WHERE memory_id = ?`,
		`DELETE FROM vector_memories WHERE memory_id = ?`,
	} {
		if _, err := t.b.exec(stmt, memoryID); err != nil {
			return fmt.Errorf("vectors: delete memory: %w", err)
		}
	}
	t.memories[memoryID] = cachedMemory{memory: domain.VectorMemory{MemoryID: memoryID}}
	return nil
}

// PutVector is held back (writeHeld).
func (t *vectorTx) PutVector(ctx context.Context, memoryID string, space domain.VectorSpace, textHash string, v []float32) error {
	t.vectorRows = append(t.vectorRows, memoryID, space.Model, space.Dimensions, textHash, encodeVector(v))
	t.held[memoryID] = true
	return nil
}

func (t *vectorTx) CurrentVectors(ctx context.Context, memoryID string) ([]domain.StoredVector, error) {
	if err := t.settle(memoryID); err != nil {
		return nil, err
	}
	st, err := t.b.stmt(`SELECT v.model, v.dimensions, v.vector FROM vector_vectors AS v
		JOIN vector_memories AS m ON m.memory_id = v.memory_id AND m.text_hash = v.text_hash
		WHERE v.memory_id = ? ORDER BY v.seq`)
	if err != nil {
		return nil, fmt.Errorf("vectors: current: %w", err)
	}
	rows, err := st.QueryContext(ctx, memoryID)
	if err != nil {
		return nil, fmt.Errorf("vectors: current: %w", err)
	}
	defer rows.Close()
	var out []domain.StoredVector
	for rows.Next() {
		var sv domain.StoredVector
		var blob []byte
		if err := rows.Scan(&sv.Space.Model, &sv.Space.Dimensions, &blob); err != nil {
			return nil, fmt.Errorf("vectors: current: %w", err)
		}
		if sv.Vector, err = decodeVector(nil, blob); err != nil {
			return nil, fmt.Errorf("vectors: current %s: %w", memoryID, err)
		}
		out = append(out, sv)
	}
	return out, rows.Err()
}

func (t *vectorTx) DeleteSpace(ctx context.Context, userID, agentID string, space domain.VectorSpace) error {
	if err := t.writeHeld(); err != nil {
		return err
	}
	_, err := t.b.exec(`DELETE FROM vector_vectors WHERE model = ? AND dimensions = ?
		AND memory_id IN (SELECT memory_id FROM vector_memories WHERE user_id = ? AND agent_id = ?)`, space.Model, space.Dimensions, userID, agentID)
	if err != nil {
		return fmt.Errorf("vectors: delete model: %w", err)
	}
	return nil
}

// encodeVector stores float32s little-endian, as the events do.
func encodeVector(v []float32) []byte {
	buf := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	return buf
}

// decodeVector decodes into dst's storage when it is large enough.
func decodeVector(dst []float32, blob []byte) ([]float32, error) {
	if len(blob)%4 != 0 {
		return nil, fmt.Errorf("vector blob of %d bytes is not whole float32s", len(blob))
	}
	n := len(blob) / 4
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:]))
	}
	return dst, nil
}

// UnitOfWork implements domain.UnitOfWorkStore.
func (s *VectorStore) UnitOfWork() domain.UnitOfWork { return s.db }

// Export writes the vector state as JSON lines (see exportTables), for
// the rebuild-equivalence tests.
func (s *VectorStore) Export(ctx context.Context, w io.Writer) error {
	return exportTables(ctx, s.db.read, w, vectorTables())
}

// vectorTables are the vector state's tables with their primary keys.
func vectorTables() []exportTable {
	return []exportTable{
		{name: "vector_agents", orderBy: "user_id, agent_id"},
		{name: "vector_memories", orderBy: "memory_id"},
		{name: "vector_vectors", orderBy: "seq"},
	}
}
