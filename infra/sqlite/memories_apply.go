package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/stack"
)

// memApplier applies the events of one batch in one transaction. It
// prepares each statement once per batch: a batch write of 1000 memories
// is 2000 events, and parsing SQL for each was most of the apply time.
type memApplier struct {
	batchTx
	// agents caches whether an agent exists within the batch, which
	// changes only by AgentCreated and AgentDeleted.
	agents map[memory.AgentRef]bool
}

func (a *memApplier) agentExists(ref memory.AgentRef) (bool, error) {
	if ok, known := a.agents[ref]; known {
		return ok, nil
	}
	ok, err := a.exists(`SELECT 1 FROM agents WHERE user_id = ? AND agent_id = ?`, ref.UserID, ref.AgentID)
	if err == nil {
		a.agents[ref] = ok
	}
	return ok, err
}

// batchTx is the transaction of one batch of events with its statements,
// each prepared once per batch: a batch write of 1000 memories is 2000
// events, and parsing SQL for each was most of the apply time. Every
// SQLite read model's applier uses it.
type batchTx struct {
	ctx   context.Context
	tx    *sql.Tx
	stmts map[string]*sql.Stmt // closed with the transaction
}

func newBatchTx(ctx context.Context, tx *sql.Tx) batchTx {
	return batchTx{ctx: ctx, tx: tx, stmts: map[string]*sql.Stmt{}}
}

func (a *batchTx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := a.stmts[query]; ok {
		return st, nil
	}
	st, err := a.tx.PrepareContext(a.ctx, query)
	if err != nil {
		return nil, err
	}
	a.stmts[query] = st
	return st, nil
}

// exec runs query and returns the number of rows it changed.
func (a *batchTx) exec(query string, args ...any) (int64, error) {
	st, err := a.stmt(query)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(a.ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// exists runs a SELECT 1 query and reports whether it found a row.
func (a *batchTx) exists(query string, args ...any) (bool, error) {
	st, err := a.stmt(query)
	if err != nil {
		return false, err
	}
	var one int
	err = st.QueryRowContext(a.ctx, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// memEmbeddedFields is MemoryEmbedded without its vector: this read model
// records which texts have vectors, not the vectors, so it need not decode
// them.
type memEmbeddedFields struct {
	memory.AgentRef
	MemoryID   string `json:"memory_id"`
	Model      string `json:"model"`
	Dimensions int    `json:"dimensions"`
	TextHash   string `json:"text_hash"`
}

func (a *memApplier) apply(e domain.Event) error {
	switch e.Type {
	case memory.AgentCreated{}.EventType():
		var p memory.AgentCreated
		return decodeMemEvent(e, &p, func() error { return a.agentCreated(p) })
	case memory.MemoryCreated{}.EventType():
		var p memory.MemoryCreated
		return decodeMemEvent(e, &p, func() error { return a.memoryCreated(p, e.Time) })
	case memory.MemoryEmbedded{}.EventType():
		var p memEmbeddedFields
		return decodeMemEvent(e, &p, func() error { return a.memoryEmbedded(p) })
	case memory.MemoryUpdated{}.EventType():
		var p memory.MemoryUpdated
		return decodeMemEvent(e, &p, func() error { return a.memoryUpdated(p) })
	case memory.MemoryPatched{}.EventType():
		var p memory.MemoryPatched
		return decodeMemEvent(e, &p, func() error { return a.memoryPatched(p) })
	case memory.MemoryForgotten{}.EventType():
		var p memory.MemoryForgotten
		return decodeMemEvent(e, &p, func() error { return a.memoryForgotten(p) })
	case memory.MemoryPurged{}.EventType():
		var p memory.MemoryPurged
		return decodeMemEvent(e, &p, func() error { return a.memoryPurged(p) })
	case memory.AgentDeleted{}.EventType():
		var p memory.AgentDeleted
		return decodeMemEvent(e, &p, func() error { return a.agentDeleted(p) })
	case memory.AgentModelSwitched{}.EventType():
		var p memory.AgentModelSwitched
		return decodeMemEvent(e, &p, func() error { return a.agentModelSwitched(p) })
	case memory.MemoryRecovered{}.EventType():
		var p memory.MemoryRecovered
		return decodeMemEvent(e, &p, func() error { return a.memoryRecovered(p) })
	case memory.MemoryProtected{}.EventType():
		var p memory.MemoryProtected
		return decodeMemEvent(e, &p, func() error {
			return a.changeVitality(p.AgentRef, p.MemoryID, func(v *memory.Vitality) { v.Protected, v.Base, v.Since = true, p.Strength, p.At })
		})
	case memory.MemoryUnprotected{}.EventType():
		var p memory.MemoryUnprotected
		return decodeMemEvent(e, &p, func() error {
			return a.changeVitality(p.AgentRef, p.MemoryID, func(v *memory.Vitality) { v.Protected, v.Base, v.Since = false, p.Strength, p.At })
		})
	case memory.MemoryWeakened{}.EventType():
		var p memory.MemoryWeakened
		return decodeMemEvent(e, &p, func() error {
			return a.changeVitality(p.AgentRef, p.MemoryID, func(v *memory.Vitality) { v.Base, v.Since = p.Strength, p.At })
		})
	case memory.MemoryVerified{}.EventType():
		var p memory.MemoryVerified
		return decodeMemEvent(e, &p, func() error { return a.memoryVerified(p) })
	case stack.SettingsChanged{}.EventType():
		var p stack.SettingsChanged
		return decodeMemEvent(e, &p, func() error { return a.settingsChanged(p) })
	}
	return nil // not an agent-stream event
}

// recordStreamVersion records that the read model applied the agent
// stream up to e.
func (a *memApplier) recordStreamVersion(e domain.Event) error {
	_, err := a.exec(`INSERT INTO agent_streams (stream, version) VALUES (?, ?)
		ON CONFLICT (stream) DO UPDATE SET version = excluded.version`, e.Stream, e.Version)
	return err
}

// isAgentEvent reports whether events of this type are appended to agent
// streams (memory.AgentStream).
func isAgentEvent(eventType string) bool {
	switch eventType {
	case memory.AgentCreated{}.EventType(), memory.MemoryCreated{}.EventType(), memory.MemoryEmbedded{}.EventType(),
		memory.MemoryUpdated{}.EventType(), memory.MemoryPatched{}.EventType(), memory.MemoryForgotten{}.EventType(),
		memory.MemoryPurged{}.EventType(), memory.AgentDeleted{}.EventType(), memory.AgentModelSwitched{}.EventType(),
		memory.MemoryRecovered{}.EventType(), memory.MemoryProtected{}.EventType(), memory.MemoryUnprotected{}.EventType(),
		memory.MemoryWeakened{}.EventType(), memory.MemoryVerified{}.EventType(), stack.SettingsChanged{}.EventType():
		return true
	}
	return false
}

func decodeMemEvent(e domain.Event, payload any, apply func() error) error {
	if err := e.Decode(payload); err != nil {
		return fmt.Errorf("decode %s: %w", e.Type, err)
	}
	return apply()
}

func (a *memApplier) agentCreated(p memory.AgentCreated) error {
	_, err := a.exec(`INSERT INTO agents (user_id, agent_id, embedding_model, dimensions, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, agent_id) DO NOTHING`,
		p.UserID, p.AgentID, p.EmbeddingModel, p.Dimensions, memTime(p.CreatedAt))
	if err == nil {
		a.agents[p.AgentRef] = true
	}
	return err
}

// memoryCreated records a memory at its initial strength from the time
// the log recorded it (at): a client's created_at is when the memory
// happened, not when this agent learned it.
func (a *memApplier) memoryCreated(p memory.MemoryCreated, at time.Time) error {
	if ok, err := a.agentExists(p.AgentRef); err != nil || !ok {
		return err
	}
	tags, err := memJSONList(p.Tags)
	if err != nil {
		return err
	}
	refs, err := memJSONList(p.DerivedFrom)
	if err != nil {
		return err
	}
	searchable := p.Type.Searchable()
	created := memTime(p.CreatedAt)
	v := memory.InitialVitality(p.Type, p.Content, at)
	n, err := a.exec(`INSERT INTO memories
		(id, user_id, agent_id, type, searchable, content, tags, derived_from, created_at, updated_at, forgotten_at, text_hash, embed_pending,
		 strength, strength_since, protected, goal_type, weak_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		p.MemoryID, p.UserID, p.AgentID, string(p.Type), searchable, string(p.Content), tags, refs, created, created, p.TextHash, searchable,
		v.Base, memTime(v.Since), v.Protected, v.GoalType, weakAtColumn(v))
	if err != nil || n == 0 {
		return err
	}
	return a.addToAgent(p.AgentRef, 1, int64(len(p.Content)))
}

// addToAgent changes the agent's memory count and content size.
func (a *memApplier) addToAgent(ref memory.AgentRef, memories int, bytes int64) error {
	_, err := a.exec(`UPDATE agents SET stored_memories = stored_memories + ?, content_bytes = content_bytes + ?
		WHERE user_id = ? AND agent_id = ?`, memories, bytes, ref.UserID, ref.AgentID)
	return err
}

// storedContent returns the memory's type and content; found is false for
// a memory that does not exist (purged, or its agent deleted).
func (a *memApplier) storedContent(ref memory.AgentRef, id string) (typ memory.Type, content string, found bool, err error) {
	st, err := a.stmt(`SELECT type, content FROM memories WHERE id = ? AND user_id = ? AND agent_id = ?`)
	if err != nil {
		return "", "", false, err
	}
	var t string
	err = st.QueryRowContext(a.ctx, id, ref.UserID, ref.AgentID).Scan(&t, &content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	return memory.Type(t), content, err == nil, err
}

func (a *memApplier) memoryEmbedded(p memEmbeddedFields) error {
	// Recorded only for the memory's current text: a vector of a text a
	// later patch replaced is ignored.
	n, err := a.exec(`INSERT INTO memory_embeddings (memory_id, model, dimensions, text_hash)
		SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE id = ? AND user_id = ? AND agent_id = ? AND text_hash = ?)
		ON CONFLICT (memory_id, model, dimensions) DO UPDATE SET text_hash = excluded.text_hash`,
		p.MemoryID, p.Model, p.Dimensions, p.TextHash, p.MemoryID, p.UserID, p.AgentID, p.TextHash)
	if err != nil || n == 0 {
		return err
	}
	_, err = a.exec(`UPDATE memories SET embed_pending = 0 WHERE id = ? AND EXISTS (
			SELECT 1 FROM agents WHERE user_id = ? AND agent_id = ? AND embedding_model = ? AND dimensions = ?)`,
		p.MemoryID, p.UserID, p.AgentID, p.Model, p.Dimensions)
	return err
}

func (a *memApplier) memoryUpdated(p memory.MemoryUpdated) error {
	return a.changeMemory(p.AgentRef, p.MemoryID, func(memory.Type, string) (json.RawMessage, *[]string, error) {
		return p.Content, &p.Tags, nil
	}, p.TextHash, p.UpdatedAt)
}

// memoryPatched applies the changed fields to the content as it stands
// now in log order, which is what lets concurrent patches of different
// fields all survive.
func (a *memApplier) memoryPatched(p memory.MemoryPatched) error {
	err := a.changeMemory(p.AgentRef, p.MemoryID, func(t memory.Type, stored string) (json.RawMessage, *[]string, error) {
		if p.Content == nil {
			return json.RawMessage(stored), p.Tags, nil
		}
		content, err := memory.ApplyContentChanges(t, json.RawMessage(stored), p.Content)
		return content, p.Tags, err
	}, p.TextHash, p.UpdatedAt)
	if err != nil {
		return err
	}
	return a.patchedMetadata(p)
}

// changeMemory replaces an existing memory's content and (when change
// returns them) tags, bumps its version, and keeps its agent's content
// size and the memory's pending state current.
func (a *memApplier) changeMemory(ref memory.AgentRef, id string, change func(memory.Type, string) (json.RawMessage, *[]string, error),
	textHash string, at time.Time) error {
	typ, stored, found, err := a.storedContent(ref, id)
	if err != nil || !found {
		return err
	}
	content, tags, err := change(typ, stored)
	if err != nil {
		return err
	}
	if tags != nil {
		list, err := memJSONList(*tags)
		if err != nil {
			return err
		}
		if _, err := a.exec(`UPDATE memories SET tags = ? WHERE id = ?`, list, id); err != nil {
			return err
		}
	}
	if _, err := a.exec(`UPDATE memories SET content = ?, text_hash = ?, updated_at = ?, version = version + 1 WHERE id = ?`,
		string(content), textHash, memTime(at), id); err != nil {
		return err
	}
	if goalType := memory.GoalType(typ, content); typ == memory.Goal {
		// A goal's half-life follows its goal_type.
		if err := a.storeVitality(ref, id, func(v *memory.Vitality) { v.GoalType = goalType }); err != nil {
			return err
		}
	}
	if err := a.addToAgent(ref, 0, int64(len(content)-len(stored))); err != nil {
		return err
	}
	return a.refreshPending(`m.id = ?`, id)
}

func (a *memApplier) memoryForgotten(p memory.MemoryForgotten) error {
	// The first forget wins: forgetting twice keeps the original time.
	_, err := a.exec(`UPDATE memories SET forgotten_at = ?, embed_pending = 0, version = version + 1
		WHERE id = ? AND user_id = ? AND agent_id = ? AND forgotten_at IS NULL`,
		memTime(p.ForgottenAt), p.MemoryID, p.UserID, p.AgentID)
	return err
}

func (a *memApplier) memoryPurged(p memory.MemoryPurged) error {
	_, stored, found, err := a.storedContent(p.AgentRef, p.MemoryID)
	if err != nil || !found {
		return err
	}
	if _, err := a.exec(`DELETE FROM memories WHERE id = ?`, p.MemoryID); err != nil {
		return err
	}
	if _, err := a.exec(`DELETE FROM memory_embeddings WHERE memory_id = ?`, p.MemoryID); err != nil {
		return err
	}
	return a.addToAgent(p.AgentRef, -1, -int64(len(stored)))
}

func (a *memApplier) agentDeleted(p memory.AgentDeleted) error {
	for _, q := range []string{
		`DELETE FROM agent_settings WHERE user_id = ? AND agent_id = ?`,
		`DELETE FROM memory_embeddings WHERE memory_id IN (SELECT id FROM memories WHERE user_id = ? AND agent_id = ?)`,
		`DELETE FROM memories WHERE user_id = ? AND agent_id = ?`,
		`DELETE FROM agents WHERE user_id = ? AND agent_id = ?`,
	} {
		if _, err := a.exec(q, p.UserID, p.AgentID); err != nil {
			return err
		}
	}
	a.agents[p.AgentRef] = false
	return nil
}

// agentModelSwitched moves the agent to another model. Vectors of the old
// model are dropped, as the vector projection drops them: switching back
// later needs them made again (a re-embedding job does that first).
func (a *memApplier) agentModelSwitched(p memory.AgentModelSwitched) error {
	st, err := a.stmt(`SELECT embedding_model, dimensions FROM agents WHERE user_id = ? AND agent_id = ?`)
	if err != nil {
		return err
	}
	var oldModel string
	var oldDims int
	err = st.QueryRowContext(a.ctx, p.UserID, p.AgentID).Scan(&oldModel, &oldDims)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if oldModel == p.Model && oldDims == p.Dimensions {
		return nil
	}
	if _, err := a.exec(`DELETE FROM memory_embeddings WHERE model = ? AND dimensions = ?
		AND memory_id IN (SELECT id FROM memories WHERE user_id = ? AND agent_id = ?)`,
		oldModel, oldDims, p.UserID, p.AgentID); err != nil {
		return err
	}
	if _, err := a.exec(`UPDATE agents SET embedding_model = ?, dimensions = ? WHERE user_id = ? AND agent_id = ?`,
		p.Model, p.Dimensions, p.UserID, p.AgentID); err != nil {
		return err
	}
	return a.refreshPending(`m.user_id = ? AND m.agent_id = ?`, p.UserID, p.AgentID)
}

// refreshPending recomputes embed_pending for the memories matching where
// (over alias m) from their agent's active model and their current text.
func (a *memApplier) refreshPending(where string, args ...any) error {
	_, err := a.exec(`UPDATE memories AS m SET embed_pending = (
			m.searchable = 1 AND m.forgotten_at IS NULL AND NOT EXISTS (
				SELECT 1 FROM agents a JOIN memory_embeddings e
					ON e.memory_id = m.id AND e.model = a.embedding_model AND e.dimensions = a.dimensions AND e.text_hash = m.text_hash
				WHERE a.user_id = m.user_id AND a.agent_id = m.agent_id))
		WHERE `+where, args...)
	return err
}

// weakAtColumn is memory.WeakAt as stored: NULL for never.
func weakAtColumn(v memory.Vitality) any {
	if at := memory.WeakAt(v); !at.IsZero() {
		return memTime(at)
	}
	return nil
}

// vitality reads an existing memory's strength basis; found is false for
// a memory that does not exist.
func (a *memApplier) vitality(ref memory.AgentRef, id string) (v memory.Vitality, found bool, err error) {
	st, err := a.stmt(`SELECT type, goal_type, strength, strength_since, protected, forgotten_at IS NOT NULL
		FROM memories WHERE id = ? AND user_id = ? AND agent_id = ?`)
	if err != nil {
		return v, false, err
	}
	var typ, since string
	err = st.QueryRowContext(a.ctx, id, ref.UserID, ref.AgentID).Scan(&typ, &v.GoalType, &v.Base, &since, &v.Protected, &v.Forgotten)
	if errors.Is(err, sql.ErrNoRows) {
		return v, false, nil
	}
	if err != nil {
		return v, false, err
	}
	v.Type = memory.Type(typ)
	v.Since, err = parseMemTime(since)
	return v, err == nil, err
}

// changeVitality applies change to an existing memory's strength basis,
// stores it with its weak_at and counts a new version of the memory. A
// memory that does not exist is ignored.
func (a *memApplier) changeVitality(ref memory.AgentRef, id string, change func(*memory.Vitality)) error {
	if err := a.storeVitality(ref, id, change); err != nil {
		return err
	}
	_, err := a.exec(`UPDATE memories SET version = version + 1 WHERE id = ? AND user_id = ? AND agent_id = ?`, id, ref.UserID, ref.AgentID)
	return err
}

// storeVitality is changeVitality within a change that already counted
// its version (a patch).
func (a *memApplier) storeVitality(ref memory.AgentRef, id string, change func(*memory.Vitality)) error {
	v, found, err := a.vitality(ref, id)
	if err != nil || !found {
		return err
	}
	change(&v)
	_, err = a.exec(`UPDATE memories SET strength = ?, strength_since = ?, protected = ?, goal_type = ?, weak_at = ? WHERE id = ?`,
		v.Base, memTime(v.Since), v.Protected, v.GoalType, weakAtColumn(v), id)
	return err
}

// lazyDecay is the agent's lazy_decay setting (on without a settings row).
func (a *memApplier) lazyDecay(ref memory.AgentRef) (bool, error) {
	st, err := a.stmt(`SELECT lazy_decay FROM agent_settings WHERE user_id = ? AND agent_id = ?`)
	if err != nil {
		return false, err
	}
	var on bool
	err = st.QueryRowContext(a.ctx, ref.UserID, ref.AgentID).Scan(&on)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	return on, err
}

// patchedMetadata applies a patch of the content fields strength and
// is_protected to the memory's live strength and protection, from the
// patch's time: the strength it had then is kept (or replaced by the new
// strength), and a null restores the default (1, or the type's default
// protection), as it does in content.
func (a *memApplier) patchedMetadata(p memory.MemoryPatched) error {
	strength, hasStrength := p.Content["strength"]
	protected, hasProtected := p.Content["is_protected"]
	if !hasStrength && !hasProtected {
		return nil
	}
	decay, err := a.lazyDecay(p.AgentRef)
	if err != nil {
		return err
	}
	var newStrength *float64
	var newProtected *bool
	if err := errors.Join(json.Unmarshal(orNull(strength), &newStrength), json.Unmarshal(orNull(protected), &newProtected)); err != nil {
		return err
	}
	return a.storeVitality(p.AgentRef, p.MemoryID, func(v *memory.Vitality) {
		if v.Forgotten {
			return // recover decides a forgotten memory's strength
		}
		v.Base, v.Since = memory.Strength(p.UpdatedAt, *v, decay), p.UpdatedAt
		if hasStrength {
			v.Base = memory.InitialStrength
			if newStrength != nil {
				v.Base = max(memory.MinDecayedStrength, *newStrength)
			}
		}
		if hasProtected {
			v.Protected = memory.DefaultProtected(v.Type)
			if newProtected != nil {
				v.Protected = *newProtected
			}
		}
	})
}

// orNull is raw, or JSON null when raw is empty.
func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// memoryRecovered brings a forgotten memory back at the event's strength,
// decaying from the time of the recovery; its embedding state is
// recomputed (a vector made before it was forgotten still serves).
func (a *memApplier) memoryRecovered(p memory.MemoryRecovered) error {
	n, err := a.exec(`UPDATE memories SET forgotten_at = NULL WHERE id = ? AND user_id = ? AND agent_id = ? AND forgotten_at IS NOT NULL`,
		p.MemoryID, p.UserID, p.AgentID)
	if err != nil || n == 0 {
		return err
	}
	if err := a.changeVitality(p.AgentRef, p.MemoryID, func(v *memory.Vitality) { v.Forgotten, v.Base, v.Since = false, p.Strength, p.RecoveredAt }); err != nil {
		return err
	}
	return a.refreshPending(`m.id = ?`, p.MemoryID)
}

func (a *memApplier) memoryVerified(p memory.MemoryVerified) error {
	if err := a.changeVitality(p.AgentRef, p.MemoryID, func(v *memory.Vitality) { v.Base, v.Since = p.Strength, p.VerifiedAt }); err != nil {
		return err
	}
	_, err := a.exec(`UPDATE memories SET verification_count = verification_count + 1, last_verified_at = ? WHERE id = ? AND user_id = ? AND agent_id = ?`,
		memTime(p.VerifiedAt), p.MemoryID, p.UserID, p.AgentID)
	return err
}

// settingsChanged stores the agent's whole settings (ignored for an agent
// that does not exist).
func (a *memApplier) settingsChanged(p stack.SettingsChanged) error {
	if ok, err := a.agentExists(p.AgentRef); err != nil || !ok {
		return err
	}
	raw, err := json.Marshal(p.Settings)
	if err != nil {
		return err
	}
	_, err = a.exec(`INSERT INTO agent_settings (user_id, agent_id, settings, lazy_decay, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (user_id, agent_id) DO UPDATE SET settings = excluded.settings, lazy_decay = excluded.lazy_decay, updated_at = excluded.updated_at`,
		p.UserID, p.AgentID, string(raw), p.Settings.LazyDecay, memTime(p.ChangedAt))
	return err
}
