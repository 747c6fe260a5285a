package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Memories is the memories read model (memory.ReadModel) in PostgreSQL:
// agents, their memories, and which memory texts have vectors in which
// model. Its queries (memories_queries.go) answer as the SQLite store's
// do; internal/readmodeltest holds both to one specification.
type Memories struct {
	tableModel
}

var _ memory.ReadModel = (*Memories)(nil)

// NewMemories returns the read model stored in db.
func NewMemories(db *DB) *Memories {
	return &Memories{tableModel{db: db, name: "memories",
		tables: []string{"memory_embeddings", "memories", "agents", "agent_settings", "agent_streams"}}}
}

// Apply implements memory.ReadModel.
func (m *Memories) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, memory.ReadModelTx, domain.Event) error) error {
	return applyBatch(ctx, m.db, m.name, events, func(b batchTx) memory.ReadModelTx {
		return &memoriesTx{batchTx: b, agents: map[memory.AgentRef]bool{}, models: map[memory.AgentRef]agentModel{}, fold: memory.NewWriteFold()}
	}, apply)
}

// memoriesTx is memory.ReadModelTx over one batch's transaction.
//
// Its statements find one memory by its id with the owner compared by IS
// NOT DISTINCT FROM, which on these NOT NULL columns means =, but no index
// can serve: the primary key is then the only index the planner can pick.
// With =, a table whose statistics predate its rows (a rebuild fills
// emptied tables in a few transactions, before autovacuum looks) made it
// pick memories_by_user_time with id as a filter under user_id, scanning
// every memory of the user for each event: quadratic in a rebuild.
type memoriesTx struct {
	batchTx
	// agents caches whether an agent exists within the batch, which
	// changes only by AddAgent and DeleteAgent; models caches its active
	// model, which they and SetAgentModel change.
	agents map[memory.AgentRef]bool
	models map[memory.AgentRef]agentModel
	// fold holds the batch's new memories, their vector records and the
	// quota counters' changes back, to write each row once (endBatch);
	// every statement on a held memory or on its agent's memories writes
	// them first (settle, writeHeld). Every UPDATE of a row leaves a new
	// version of it behind until the transaction ends, and later
	// statements reading the row walk them all: one counter update per
	// memory made a rebuild's batch quadratic.
	fold *memory.WriteFold
	// missed are the held memories whose insert found the id held already
	// (writeHeld).
	missed []*memory.FoldedMemory
}

// agentModel is an agent's active model; found is false for an agent the
// read model does not hold.
type agentModel struct {
	model memory.EmbeddingModel
	found bool
}

// endBatch implements batchEnder: the held memories first, whose inserts
// count in their agents' counters when they are sent.
func (t *memoriesTx) endBatch(ctx context.Context) error {
	if err := t.writeHeld(ctx); err != nil {
		return err
	}
	return t.fold.TakeCounts(func(ref memory.AgentRef, c memory.AgentCounts) error {
		return t.run(ctx, `UPDATE agents SET stored_memories = stored_memories + $1, content_bytes = content_bytes + $2
			WHERE user_id = $3 AND agent_id = $4`, c.Memories, c.ContentBytes, ref.UserID, ref.AgentID)
	})
}

// settle writes the held memories when id is one of them, before a
// statement that reads or changes that memory.
func (t *memoriesTx) settle(ctx context.Context, id string) error {
	if t.fold.Holds(id) {
		return t.writeHeld(ctx)
	}
	return nil
}

// writeHeld writes the held memories, each one row with its final pending
// state and its vector records, and sends them: an insert's answer (was
// the row new?) is needed before the counters and the batch's reads. A
// held id the table has already inserts nothing (as InsertMemory
// promises); its vectors are then recorded against the row the table
// has, as without a fold.
func (t *memoriesTx) writeHeld(ctx context.Context) error {
	held := t.fold.TakeMemories()
	if len(held) == 0 {
		return nil
	}
	for _, m := range held {
		tags, err := jsonList(m.Tags)
		if err != nil {
			return err
		}
		refs, err := jsonList(m.DerivedFrom)
		if err != nil {
			return err
		}
		v := m.Vitality
		inserted := func(rows int64) {
			if rows > 0 {
				t.fold.Count(m.AgentRef, 1, int64(len(m.Content)))
			} else if len(m.Embeddings) > 0 {
				t.missed = append(t.missed, m)
			}
		}
		if err := t.runCounted(ctx, inserted, `INSERT INTO memories
			(id, user_id, agent_id, type, searchable, content, tags, derived_from, created_at, updated_at, forgotten_at, text_hash, embed_pending,
			 strength, strength_since, protected, goal_type, weak_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, NULL, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT (id) DO NOTHING`,
			m.MemoryID, m.UserID, m.AgentID, string(m.Type), m.Type.Searchable(), string(m.Content), tags, refs, memTime(m.CreatedAt), m.TextHash,
			m.Pending, v.Base, memTime(v.Since), v.Protected, v.GoalType, weakAt(v)); err != nil {
			return err
		}
		for _, e := range m.Embeddings {
			// Recorded when the memory has the text, which is the row just
			// inserted or, for an id held already, what RecordEmbedding
			// would record.
			if err := t.run(ctx, `INSERT INTO memory_embeddings (memory_id, model, dimensions, text_hash)
				SELECT $1, $4, $5, $6 WHERE EXISTS (
					SELECT 1 FROM memories WHERE id = $1 AND user_id IS NOT DISTINCT FROM $2 AND agent_id IS NOT DISTINCT FROM $3 AND text_hash = $6)
				ON CONFLICT (memory_id, model, dimensions) DO UPDATE SET text_hash = excluded.text_hash`,
				m.MemoryID, m.UserID, m.AgentID, e.Model, e.Dimensions, m.TextHash); err != nil {
				return err
			}
		}
	}
	if err := t.flush(ctx); err != nil {
		return err
	}
	missed := t.missed
	t.missed = nil
	for _, m := range missed {
		for _, e := range m.Embeddings {
			if err := t.recordEmbedding(ctx, m.AgentRef, m.MemoryID, e, m.TextHash); err != nil {
				return err
			}
		}
	}
	return nil
}

var _ memory.ReadModelTx = (*memoriesTx)(nil)

func (t *memoriesTx) AgentExists(ctx context.Context, ref memory.AgentRef) (bool, error) {
	if ok, known := t.agents[ref]; known {
		return ok, nil
	}
	var ok bool
	err := t.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE user_id = $1 AND agent_id = $2)`, ref.UserID, ref.AgentID).Scan(&ok)
	if err == nil {
		t.agents[ref] = ok
	}
	return ok, err
}

func (t *memoriesTx) AgentModel(ctx context.Context, ref memory.AgentRef) (model string, dimensions int, found bool, err error) {
	a, err := t.agentModel(ctx, ref)
	return a.model.Model, a.model.Dimensions, a.found, err
}

func (t *memoriesTx) agentModel(ctx context.Context, ref memory.AgentRef) (agentModel, error) {
	if a, known := t.models[ref]; known {
		return a, nil
	}
	var a agentModel
	err := t.queryRow(ctx, `SELECT embedding_model, dimensions FROM agents WHERE user_id = $1 AND agent_id = $2`, ref.UserID, ref.AgentID).
		Scan(&a.model.Model, &a.model.Dimensions)
	if errors.Is(err, pgx.ErrNoRows) {
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
	err := t.run(ctx, `INSERT INTO agents (user_id, agent_id, embedding_model, dimensions, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id, agent_id) DO NOTHING`,
		a.UserID, a.AgentID, a.EmbeddingModel, a.Dimensions, memTime(a.CreatedAt))
	if err == nil {
		t.agents[a.AgentRef] = true
		delete(t.models, a.AgentRef)
	}
	return err
}

func (t *memoriesTx) DeleteAgent(ctx context.Context, ref memory.AgentRef) error {
	// The counts of the agent's held inserts arrive when they are sent;
	// they die with the agent's row.
	if err := t.writeHeld(ctx); err != nil {
		return err
	}
	t.fold.DropCounts(ref)
	for _, q := range []string{
		`DELETE FROM agent_settings WHERE user_id = $1 AND agent_id = $2`,
		`DELETE FROM memory_embeddings WHERE memory_id IN (SELECT id FROM memories WHERE user_id = $1 AND agent_id = $2)`,
		`DELETE FROM memories WHERE user_id = $1 AND agent_id = $2`,
		`DELETE FROM agents WHERE user_id = $1 AND agent_id = $2`,
	} {
		if err := t.run(ctx, q, ref.UserID, ref.AgentID); err != nil {
			return err
		}
	}
	t.agents[ref] = false
	delete(t.models, ref)
	return nil
}

func (t *memoriesTx) SetAgentModel(ctx context.Context, ref memory.AgentRef, model string, dimensions int) error {
	if err := t.writeHeld(ctx); err != nil {
		return err
	}
	delete(t.models, ref)
	return t.run(ctx, `UPDATE agents SET embedding_model = $1, dimensions = $2 WHERE user_id = $3 AND agent_id = $4`,
		model, dimensions, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) DropEmbeddings(ctx context.Context, ref memory.AgentRef, model string, dimensions int) error {
	if err := t.writeHeld(ctx); err != nil {
		return err
	}
	return t.run(ctx, `DELETE FROM memory_embeddings WHERE model = $1 AND dimensions = $2
		AND memory_id IN (SELECT id FROM memories WHERE user_id = $3 AND agent_id = $4)`,
		model, dimensions, ref.UserID, ref.AgentID)
}

// AddToAgent is held back to the batch's end: nothing in a batch reads the
// counters.
func (t *memoriesTx) AddToAgent(ctx context.Context, ref memory.AgentRef, memories int, contentBytes int64) error {
	t.fold.Count(ref, memories, contentBytes)
	return nil
}

func (t *memoriesTx) PutSettings(ctx context.Context, ref memory.AgentRef, settings json.RawMessage, lazyDecay bool, at time.Time) error {
	return t.run(ctx, `INSERT INTO agent_settings (user_id, agent_id, settings, lazy_decay, updated_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (user_id, agent_id) DO UPDATE SET settings = excluded.settings, lazy_decay = excluded.lazy_decay, updated_at = excluded.updated_at`,
		ref.UserID, ref.AgentID, string(settings), lazyDecay, memTime(at))
}

func (t *memoriesTx) LazyDecay(ctx context.Context, ref memory.AgentRef) (bool, error) {
	var on bool
	err := t.queryRow(ctx, `SELECT lazy_decay FROM agent_settings WHERE user_id = $1 AND agent_id = $2`, ref.UserID, ref.AgentID).Scan(&on)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	return on, err
}

func (t *memoriesTx) Memory(ctx context.Context, ref memory.AgentRef, id string) (m memory.StoredMemory, found bool, err error) {
	if err := t.settle(ctx, id); err != nil {
		return m, false, err
	}
	var typ, content, since string
	v := &m.Vitality
	err = t.queryRow(ctx, `SELECT type, content, goal_type, strength, strength_since, protected, forgotten_at IS NOT NULL
		FROM memories WHERE id = $1 AND user_id IS NOT DISTINCT FROM $2 AND agent_id IS NOT DISTINCT FROM $3`, id, ref.UserID, ref.AgentID).
		Scan(&typ, &content, &v.GoalType, &v.Base, &since, &v.Protected, &v.Forgotten)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.StoredMemory{}, false, nil
	}
	if err != nil {
		return memory.StoredMemory{}, false, err
	}
	m.Type, v.Type, m.Content = memory.Type(typ), memory.Type(typ), json.RawMessage(content)
	if v.Since, err = parseMemTime(since); err != nil {
		return memory.StoredMemory{}, false, err
	}
	return m, true, nil
}

// InsertMemory is held back (writeHeld).
func (t *memoriesTx) InsertMemory(ctx context.Context, m memory.NewMemory) error {
	t.fold.Insert(m)
	return nil
}

func (t *memoriesTx) SetContent(ctx context.Context, ref memory.AgentRef, id string, content json.RawMessage, tags *[]string, textHash string, at time.Time) error {
	if err := t.settle(ctx, id); err != nil {
		return err
	}
	if tags != nil {
		list, err := jsonList(*tags)
		if err != nil {
			return err
		}
		if err := t.run(ctx, `UPDATE memories SET tags = $1 WHERE id = $2 AND user_id IS NOT DISTINCT FROM $3 AND agent_id IS NOT DISTINCT FROM $4`, list, id, ref.UserID, ref.AgentID); err != nil {
			return err
		}
	}
	return t.run(ctx, `UPDATE memories SET content = $1, text_hash = $2, updated_at = $3, version = version + 1 WHERE id = $4 AND user_id IS NOT DISTINCT FROM $5 AND agent_id IS NOT DISTINCT FROM $6`,
		string(content), textHash, memTime(at), id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) SetVitality(ctx context.Context, ref memory.AgentRef, id string, v memory.Vitality) error {
	if err := t.settle(ctx, id); err != nil {
		return err
	}
	return t.run(ctx, `UPDATE memories SET strength = $1, strength_since = $2, protected = $3, goal_type = $4, weak_at = $5 WHERE id = $6 AND user_id IS NOT DISTINCT FROM $7 AND agent_id IS NOT DISTINCT FROM $8`,
		v.Base, memTime(v.Since), v.Protected, v.GoalType, weakAt(v), id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) CountVersion(ctx context.Context, ref memory.AgentRef, id string) error {
	if err := t.settle(ctx, id); err != nil {
		return err
	}
	return t.run(ctx, `UPDATE memories SET version = version + 1 WHERE id = $1 AND user_id IS NOT DISTINCT FROM $2 AND agent_id IS NOT DISTINCT FROM $3`, id, ref.UserID, ref.AgentID)
}

// Forget, Recover and DeleteMemory keep the agent's count of forgotten
// memories, which its memory_count subtracts from stored_memories
// (memAgentColumns), in the statement that changes the memory: the count
// moves only when a row did, and the statement still needs no answer, so
// it is queued with the batch's other writes.

func (t *memoriesTx) Forget(ctx context.Context, ref memory.AgentRef, id string, at time.Time) error {
	if err := t.settle(ctx, id); err != nil {
		return err
	}
	return t.run(ctx, `WITH forgotten AS (UPDATE memories SET forgotten_at = $1, embed_pending = FALSE, version = version + 1
			WHERE id = $2 AND user_id IS NOT DISTINCT FROM $3 AND agent_id IS NOT DISTINCT FROM $4 AND forgotten_at IS NULL RETURNING 1)
		UPDATE agents SET forgotten_memories = forgotten_memories + 1
		WHERE user_id = $3 AND agent_id = $4 AND EXISTS (SELECT 1 FROM forgotten)`,
		memTime(at), id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) MarkConsumed(ctx context.Context, ref memory.AgentRef, id string) error {
	if err := t.settle(ctx, id); err != nil {
		return err
	}
	return t.run(ctx, `UPDATE memories SET consumed = TRUE WHERE id = $1 AND user_id IS NOT DISTINCT FROM $2 AND agent_id IS NOT DISTINCT FROM $3`, id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) Recover(ctx context.Context, ref memory.AgentRef, id string) error {
	if err := t.settle(ctx, id); err != nil {
		return err
	}
	return t.run(ctx, `WITH recovered AS (UPDATE memories SET forgotten_at = NULL
			WHERE id = $1 AND user_id IS NOT DISTINCT FROM $2 AND agent_id IS NOT DISTINCT FROM $3 AND forgotten_at IS NOT NULL RETURNING 1)
		UPDATE agents SET forgotten_memories = forgotten_memories - 1
		WHERE user_id = $2 AND agent_id = $3 AND EXISTS (SELECT 1 FROM recovered)`, id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) CountVerification(ctx context.Context, ref memory.AgentRef, id string, at time.Time) error {
	if err := t.settle(ctx, id); err != nil {
		return err
	}
	return t.run(ctx, `UPDATE memories SET verification_count = verification_count + 1, last_verified_at = $1 WHERE id = $2 AND user_id IS NOT DISTINCT FROM $3 AND agent_id IS NOT DISTINCT FROM $4`,
		memTime(at), id, ref.UserID, ref.AgentID)
}

func (t *memoriesTx) DeleteMemory(ctx context.Context, ref memory.AgentRef, id string) error {
	if err := t.settle(ctx, id); err != nil {
		return err
	}
	return t.run(ctx, `WITH deleted AS (DELETE FROM memories
			WHERE id = $1 AND user_id IS NOT DISTINCT FROM $2 AND agent_id IS NOT DISTINCT FROM $3 RETURNING id, forgotten_at IS NOT NULL AS forgotten),
		embeddings AS (DELETE FROM memory_embeddings WHERE memory_id IN (SELECT id FROM deleted))
		UPDATE agents SET forgotten_memories = forgotten_memories - 1
		WHERE user_id = $2 AND agent_id = $3 AND EXISTS (SELECT 1 FROM deleted WHERE forgotten)`, id, ref.UserID, ref.AgentID)
}

// RecordEmbedding folds a vector of a held memory's text into its row
// (memory.WriteFold.Embed); any other goes to the table's rows.
func (t *memoriesTx) RecordEmbedding(ctx context.Context, ref memory.AgentRef, id, model string, dimensions int, textHash string) error {
	agent, err := t.agentModel(ctx, ref)
	if err != nil {
		return err
	}
	embedding := memory.EmbeddingModel{Model: model, Dimensions: dimensions}
	if agent.found && t.fold.Embed(ref, id, embedding, textHash, agent.model) {
		return nil
	}
	if err := t.settle(ctx, id); err != nil {
		return err
	}
	return t.recordEmbedding(ctx, ref, id, embedding, textHash)
}

// recordEmbedding records the vector when the agent's memory has that
// text, and clears embed_pending if the vector is in the agent's model,
// in one statement queued with the batch's other writes: both parts carry
// the whole condition, so neither depends on the other's effect.
func (t *memoriesTx) recordEmbedding(ctx context.Context, ref memory.AgentRef, id string, e memory.EmbeddingModel, textHash string) error {
	return t.run(ctx, `WITH recorded AS (INSERT INTO memory_embeddings (memory_id, model, dimensions, text_hash)
			SELECT $1, $4, $5, $6 WHERE EXISTS (
				SELECT 1 FROM memories WHERE id = $1 AND user_id IS NOT DISTINCT FROM $2 AND agent_id IS NOT DISTINCT FROM $3 AND text_hash = $6)
			ON CONFLICT (memory_id, model, dimensions) DO UPDATE SET text_hash = excluded.text_hash)
		UPDATE memories SET embed_pending = FALSE
		WHERE id = $1 AND user_id IS NOT DISTINCT FROM $2 AND agent_id IS NOT DISTINCT FROM $3 AND text_hash = $6 AND EXISTS (
			SELECT 1 FROM agents WHERE user_id = $2 AND agent_id = $3 AND embedding_model = $4 AND dimensions = $5)`,
		id, ref.UserID, ref.AgentID, e.Model, e.Dimensions, textHash)
}

// refreshPendingSQL recomputes embed_pending for the memories matching
// the WHERE it is completed with (over alias m) from their agent's active
// model and their current text.
const refreshPendingSQL = `UPDATE memories AS m SET embed_pending = (
		m.searchable AND m.forgotten_at IS NULL AND NOT EXISTS (
			SELECT 1 FROM agents a JOIN memory_embeddings e
				ON e.memory_id = m.id AND e.model = a.embedding_model AND e.dimensions = a.dimensions AND e.text_hash = m.text_hash
			WHERE a.user_id = m.user_id AND a.agent_id = m.agent_id)) `

func (t *memoriesTx) RefreshPending(ctx context.Context, ref memory.AgentRef, id string) error {
	if id == "" {
		if err := t.writeHeld(ctx); err != nil {
			return err
		}
		return t.run(ctx, refreshPendingSQL+`WHERE m.user_id = $1 AND m.agent_id = $2`, ref.UserID, ref.AgentID)
	}
	if err := t.settle(ctx, id); err != nil {
		return err
	}
	return t.run(ctx, refreshPendingSQL+`WHERE m.id = $3 AND m.user_id IS NOT DISTINCT FROM $1 AND m.agent_id IS NOT DISTINCT FROM $2`, ref.UserID, ref.AgentID, id)
}

func (t *memoriesTx) RecordStreamVersion(ctx context.Context, stream string, version uint64) error {
	return t.run(ctx, `INSERT INTO agent_streams (stream, version) VALUES ($1, $2)
		ON CONFLICT (stream) DO UPDATE SET version = excluded.version`, stream, int64(version))
}

// weakAt is memory.WeakAt as stored: NULL for never.
func weakAt(v memory.Vitality) *string {
	at := memory.WeakAt(v)
	if at.IsZero() {
		return nil
	}
	s := memTime(at)
	return &s
}

// memTimeLayout is how the memories read model stores times (migration
// 0009), as the SQLite store does: UTC text at a fixed width, so text
// order is time order and the nanoseconds of event times survive.
const memTimeLayout = "2006-01-02T15:04:05.000000000Z"

func memTime(t time.Time) string { return t.UTC().Format(memTimeLayout) }

func parseMemTime(s string) (time.Time, error) {
	t, err := time.Parse(memTimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("postgres: stored time %q: %w", s, err)
	}
	return t, nil
}

// parseMemTimeOrNil reads a nullable stored time.
func parseMemTimeOrNil(s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := parseMemTime(*s)
	return &t, err
}

// jsonList encodes a string list, nil as [].
func jsonList(v []string) (string, error) {
	if v == nil {
		v = []string{}
	}
	b, err := json.Marshal(v)
	return string(b), err
}
