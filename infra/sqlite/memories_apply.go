package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/engram-memory/engram/domain/memory"
)

// memoriesTx is memory.ReadModelTx over one batch's transaction.
type memoriesTx struct {
	*batchTx
	// agents caches whether an agent exists within the batch, which
	// changes only by AddAgent and DeleteAgent; models caches its active
	// model, which they and SetAgentModel change.
	agents map[memory.AgentRef]bool
	models map[memory.AgentRef]agentModel
	// fold holds the batch's new memories, their vector records and the
	// quota counters' changes back, to write each row once (endBatch);
	// every statement on a held memory or on its agent's memories writes
	// them first (settle, writeHeld).
	fold *memory.WriteFold
}

// agentModel is an agent's active model; found is false for an agent the
// read model does not hold.
type agentModel struct {
	model memory.EmbeddingModel
	found bool
}

var (
	_ memory.ReadModelTx = (*memoriesTx)(nil)
	_ batchEnder         = (*memoriesTx)(nil)
)

func newMemoriesTx(b *batchTx) *memoriesTx {
	return &memoriesTx{batchTx: b, agents: map[memory.AgentRef]bool{}, models: map[memory.AgentRef]agentModel{}, fold: memory.NewWriteFold()}
}

// endBatch implements batchEnder: the held memories first, whose inserts
// count in their agents' counters.
func (t *memoriesTx) endBatch() error {
	if err := t.writeHeld(); err != nil {
		return err
	}
	return t.fold.TakeCounts(func(ref memory.AgentRef, c memory.AgentCounts) error {
		return t.run(`UPDATE agents SET stored_memories = stored_memories + ?, content_bytes = content_bytes + ?
			WHERE user_id = ? AND agent_id = ?`, c.Memories, c.ContentBytes, ref.UserID, ref.AgentID)
	})
}

// settle writes the held memories when id is one of them, before a
// statement that reads or changes that memory.
func (t *memoriesTx) settle(id string) error {
	if t.fold.Holds(id) {
		return t.writeHeld()
	}
	return nil
}

// writeHeld writes the held memories, each one row with its final pending
// state and its vector records. A held id the table has already inserts
// nothing (as InsertMemory promises); its vectors are then recorded
// against the row the table has, as without a fold.
func (t *memoriesTx) writeHeld() error {
	for _, m := range t.fold.TakeMemories() {
		tags, err := memJSONList(m.Tags)
		if err != nil {
			return err
		}
		refs, err := memJSONList(m.DerivedFrom)
		if err != nil {
			return err
		}
		created := memTime(m.CreatedAt)
		v := m.Vitality
		n, err := t.exec(`INSERT INTO memories
			(id, user_id, agent_id, type, searchable, content, tags, derived_from, created_at, updated_at, forgotten_at, text_hash, embed_pending,
			 strength, strength_since, protected, goal_type, weak_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			m.MemoryID, m.UserID, m.AgentID, string(m.Type), m.Type.Searchable(), string(m.Content), tags, refs, created, created, m.TextHash, m.Pending,
			v.Base, memTime(v.Since), v.Protected, v.GoalType, weakAtColumn(v))
		if err != nil {
			return err
		}
		if n > 0 {
			t.fold.Count(m.AgentRef, 1, int64(len(m.Content)))
		}
		for _, e := range m.Embeddings {
			if n == 0 {
				err = t.recordEmbedding(m.AgentRef, m.MemoryID, e, m.TextHash)
			} else {
				err = t.run(`INSERT INTO memory_embeddings (memory_id, model, dimensions, text_hash) VALUES (?, ?, ?, ?)
					ON CONFLICT (memory_id, model, dimensions) DO UPDATE SET text_hash = excluded.text_hash`,
					m.MemoryID, e.Model, e.Dimensions, m.TextHash)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *memoriesTx) AgentExists(ctx context.Context, ref memory.AgentRef) (bool, error) {
	if ok, known := t.agents[ref]; known {
		return ok, nil
	}
	ok, err := t.exists(`SELECT 1 FROM agents WHERE user_id = ? AND agent_id = ?`, ref.UserID, ref.AgentID)
	if err == nil {
		t.agents[ref] = ok
	}
	return ok, err
}

func (t *memoriesTx) AgentModel(ctx context.Context, ref memory.AgentRef) (model string, dimensions int, found bool, err error) {
	a, err := t.agentModel(ref)
	return a.model.Model, a.model.Dimensions, a.found, err
}

func (t *memoriesTx) agentModel(ref memory.AgentRef) (agentModel, error) {
	if a, known := t.models[ref]; known {
		return a, nil
	}
	var a agentModel
	err := t.queryRow(`SELECT embedding_model, dimensions FROM agents WHERE user_id = ? AND agent_id = ?`, ref.UserID, ref.AgentID).
		Scan(&a.model.Model, &a.model.Dimensions)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	} else {
		a.found = err == nil
	}
	if err == nil {
		t.models[ref] = a
	}
	return a, err
}

func (t *memoriesTx) AddAgent(ctx context.Context, a memory.AgentCreated) error {
	err := t.run(`INSERT INTO agents (user_id, agent_id, embedding_model, dimensions, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, agent_id) DO NOTHING`,
		a.UserID, a.AgentID, a.EmbeddingModel, a.Dimensions, memTime(a.CreatedAt))
	if err == nil {
		t.agents[a.AgentRef] = true
		delete(t.models, a.AgentRef)
	}
	return err
}

func (t *memoriesTx) DeleteAgent(ctx context.Context, ref memory.AgentRef) error {
	if err := t.writeHeld(); err != nil {
		return err
	}
	t.fold.DropCounts(ref) // they die with the agent's row
	for _, q := range []string{
		`DELETE FROM agent_settings WHERE user_id = ? AND agent_id = ?`,
		`DELETE FROM memory_embeddings WHERE memory_id IN (SELECT id FROM memories WHERE user_id = ? AND agent_id = ?)`,
		`DELETE FROM memories WHERE user_id = ? AND agent_id = ?`,
		`DELETE FROM agents WHERE user_id = ? AND agent_id = ?`,
	} {
		if err := t.run(q, ref.UserID, ref.AgentID); err != nil {
			return err
		}
	}
	t.agents[ref] = false
	delete(t.models, ref)
	return nil
}

func (t *memoriesTx) SetAgentModel(ctx context.Context, ref memory.AgentRef, model string, dimensions int) error {
	if err := t.writeHeld(); err != nil {
		return err
	}
	delete(t.models, ref)
	return t.run(`UPDATE agents SET embedding_model = ?, dimensions = ? WHERE user_id = ? AND agent_id = ?`,
		model, dimensions, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) DropEmbeddings(ctx context.Context, ref memory.AgentRef, model string, dimensions int) error {
	if err := t.writeHeld(); err != nil {
		return err
	}
	return t.run(`DELETE FROM memory_embeddings WHERE model = ? AND dimensions = ?
		AND memory_id IN (SELECT id FROM memories WHERE user_id = ? AND agent_id = ?)`,
		model, dimensions, ref.UserID, ref.AgentID)
}

// AddToAgent is held back to the batch's end: nothing in a batch reads the
// counters.
func (t *memoriesTx) AddToAgent(ctx context.Context, ref memory.AgentRef, memories int, contentBytes int64) error {
	t.fold.Count(ref, memories, contentBytes)
	return nil
}

func (t *memoriesTx) PutSettings(ctx context.Context, ref memory.AgentRef, settings json.RawMessage, lazyDecay bool, at time.Time) error {
	return t.run(`INSERT INTO agent_settings (user_id, agent_id, settings, lazy_decay, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (user_id, agent_id) DO UPDATE SET settings = excluded.settings, lazy_decay = excluded.lazy_decay, updated_at = excluded.updated_at`,
		ref.UserID, ref.AgentID, string(settings), lazyDecay, memTime(at))
}

func (t *memoriesTx) LazyDecay(ctx context.Context, ref memory.AgentRef) (bool, error) {
	st, err := t.stmt(`SELECT lazy_decay FROM agent_settings WHERE user_id = ? AND agent_id = ?`)
	if err != nil {
		return false, err
	}
	var on bool
	err = st.QueryRowContext(t.ctx, ref.UserID, ref.AgentID).Scan(&on)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	return on, err
}

func (t *memoriesTx) Memory(ctx context.Context, ref memory.AgentRef, id string) (m memory.StoredMemory, found bool, err error) {
	if err := t.settle(id); err != nil {
		return m, false, err
	}
	st, err := t.stmt(`SELECT type, content, goal_type, strength, strength_since, protected, forgotten_at IS NOT NULL
		FROM memories WHERE id = ? AND user_id = ? AND agent_id = ?`)
	if err != nil {
		return m, false, err
	}
	var typ, content, since string
	v := &m.Vitality
	err = st.QueryRowContext(t.ctx, id, ref.UserID, ref.AgentID).Scan(&typ, &content, &v.GoalType, &v.Base, &since, &v.Protected, &v.Forgotten)
	if errors.Is(err, sql.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	m.Type, v.Type, m.Content = memory.Type(typ), memory.Type(typ), json.RawMessage(content)
	v.Since, err = parseMemTime(since)
	return m, err == nil, err
}

// InsertMemory is held back (writeHeld).
func (t *memoriesTx) InsertMemory(ctx context.Context, m memory.NewMemory) error {
	t.fold.Insert(m)
	return nil
}

func (t *memoriesTx) SetContent(ctx context.Context, ref memory.AgentRef, id string, content json.RawMessage, tags *[]string, textHash string, at time.Time) error {
	if err := t.settle(id); err != nil {
		return err
	}
	if tags != nil {
		list, err := memJSONList(*tags)
		if err != nil {
			return err
		}
		if err := t.run(`UPDATE memories SET tags = ? WHERE id = ? AND user_id = ? AND agent_id = ?`, list, id, ref.UserID, ref.AgentID); err != nil {
			return err
		}
	}
	return t.run(`UPDATE memories SET content = ?, text_hash = ?, updated_at = ?, version = version + 1 WHERE id = ? AND user_id = ? AND agent_id = ?`,
		string(content), textHash, memTime(at), id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) SetVitality(ctx context.Context, ref memory.AgentRef, id string, v memory.Vitality) error {
	if err := t.settle(id); err != nil {
		return err
	}
	return t.run(`UPDATE memories SET strength = ?, strength_since = ?, protected = ?, goal_type = ?, weak_at = ? WHERE id = ? AND user_id = ? AND agent_id = ?`,
		v.Base, memTime(v.Since), v.Protected, v.GoalType, weakAtColumn(v), id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) CountVersion(ctx context.Context, ref memory.AgentRef, id string) error {
	if err := t.settle(id); err != nil {
		return err
	}
	return t.run(`UPDATE memories SET version = version + 1 WHERE id = ? AND user_id = ? AND agent_id = ?`, id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) Forget(ctx context.Context, ref memory.AgentRef, id string, at time.Time) error {
	if err := t.settle(id); err != nil {
		return err
	}
	n, err := t.exec(`UPDATE memories SET forgotten_at = ?, embed_pending = 0, version = version + 1
		WHERE id = ? AND user_id = ? AND agent_id = ? AND forgotten_at IS NULL`,
		memTime(at), id, ref.UserID, ref.AgentID)
	if err != nil || n == 0 {
		return err
	}
	return t.countForgotten(ref, 1)
}

// countForgotten changes the agent's count of forgotten memories, which
// its memory_count subtracts from stored_memories (see memAgentColumns).
func (t *memoriesTx) countForgotten(ref memory.AgentRef, delta int) error {
	return t.run(`UPDATE agents SET forgotten_memories = forgotten_memories + ? WHERE user_id = ? AND agent_id = ?`,
		delta, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) MarkConsumed(ctx context.Context, ref memory.AgentRef, id string) error {
	if err := t.settle(id); err != nil {
		return err
	}
	return t.run(`UPDATE memories SET consumed = 1 WHERE id = ? AND user_id = ? AND agent_id = ?`, id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) Recover(ctx context.Context, ref memory.AgentRef, id string) error {
	if err := t.settle(id); err != nil {
		return err
	}
	n, err := t.exec(`UPDATE memories SET forgotten_at = NULL WHERE id = ? AND user_id = ? AND agent_id = ? AND forgotten_at IS NOT NULL`,
		id, ref.UserID, ref.AgentID)
	if err != nil || n == 0 {
		return err
	}
	return t.countForgotten(ref, -1)
}

func (t *memoriesTx) CountVerification(ctx context.Context, ref memory.AgentRef, id string, at time.Time) error {
	if err := t.settle(id); err != nil {
		return err
	}
	return t.run(`UPDATE memories SET verification_count = verification_count + 1, last_verified_at = ? WHERE id = ? AND user_id = ? AND agent_id = ?`,
		memTime(at), id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) DeleteMemory(ctx context.Context, ref memory.AgentRef, id string) error {
	if err := t.settle(id); err != nil {
		return err
	}
	st, err := t.stmt(`DELETE FROM memories WHERE id = ? AND user_id = ? AND agent_id = ? RETURNING forgotten_at IS NOT NULL`)
	if err != nil {
		return err
	}
	var forgotten bool
	err = st.QueryRowContext(t.ctx, id, ref.UserID, ref.AgentID).Scan(&forgotten)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if forgotten {
		if err := t.countForgotten(ref, -1); err != nil {
			return err
		}
	}
	return t.run(`DELETE FROM memory_embeddings WHERE memory_id = ?`, id)
}

// RecordEmbedding folds a vector of a held memory's text into its row
// (memory.WriteFold.Embed); any other goes to the table's rows.
func (t *memoriesTx) RecordEmbedding(ctx context.Context, ref memory.AgentRef, id, model string, dimensions int, textHash string) error {
	agent, err := t.agentModel(ref)
	if err != nil {
		return err
	}
	embedding := memory.EmbeddingModel{Model: model, Dimensions: dimensions}
	if agent.found && t.fold.Embed(ref, id, embedding, textHash, agent.model) {
		return nil
	}
	if err := t.settle(id); err != nil {
		return err
	}
	return t.recordEmbedding(ref, id, embedding, textHash)
}

// recordEmbedding records the vector when the agent's memory has that
// text, and then clears embed_pending if the vector is in the agent's
// model.
func (t *memoriesTx) recordEmbedding(ref memory.AgentRef, id string, e memory.EmbeddingModel, textHash string) error {
	model, dimensions := e.Model, e.Dimensions
	n, err := t.exec(`INSERT INTO memory_embeddings (memory_id, model, dimensions, text_hash)
		SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE id = ? AND user_id = ? AND agent_id = ? AND text_hash = ?)
		ON CONFLICT (memory_id, model, dimensions) DO UPDATE SET text_hash = excluded.text_hash`,
		id, model, dimensions, textHash, id, ref.UserID, ref.AgentID, textHash)
	if err != nil || n == 0 {
		return err
	}
	return t.run(`UPDATE memories SET embed_pending = 0 WHERE id = ? AND EXISTS (
			SELECT 1 FROM agents WHERE user_id = ? AND agent_id = ? AND embedding_model = ? AND dimensions = ?)`,
		id, ref.UserID, ref.AgentID, model, dimensions)
}

// refreshPendingSQL recomputes embed_pending for the memories matching
// the WHERE it is completed with (over alias m) from their agent's active
// model and their current text.
const refreshPendingSQL = `UPDATE memories AS m SET embed_pending = (
		m.searchable = 1 AND m.forgotten_at IS NULL AND NOT EXISTS (
			SELECT 1 FROM agents a JOIN memory_embeddings e
				ON e.memory_id = m.id AND e.model = a.embedding_model AND e.dimensions = a.dimensions AND e.text_hash = m.text_hash
			WHERE a.user_id = m.user_id AND a.agent_id = m.agent_id))
	WHERE m.user_id = ? AND m.agent_id = ?`

func (t *memoriesTx) RefreshPending(ctx context.Context, ref memory.AgentRef, id string) error {
	if id == "" {
		if err := t.writeHeld(); err != nil {
			return err
		}
		return t.run(refreshPendingSQL, ref.UserID, ref.AgentID)
	}
	if err := t.settle(id); err != nil {
		return err
	}
	return t.run(refreshPendingSQL+` AND m.id = ?`, ref.UserID, ref.AgentID, id)
}

func (t *memoriesTx) RecordStreamVersion(ctx context.Context, stream string, version uint64) error {
	return t.run(`INSERT INTO agent_streams (stream, version) VALUES (?, ?)
		ON CONFLICT (stream) DO UPDATE SET version = excluded.version`, stream, version)
}

// weakAtColumn is memory.WeakAt as stored: NULL for never.
func weakAtColumn(v memory.Vitality) any {
	if at := memory.WeakAt(v); !at.IsZero() {
		return memTime(at)
	}
	return nil
}
