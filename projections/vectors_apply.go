package projections

import (
	"context"
	"errors"
	"fmt"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/vectorindex"
)

// apply changes the store for one event and queues the matching index
// changes in ops.
func (p *Vectors) apply(ctx context.Context, tx VectorTx, e domain.Event, ops *[]func()) error {
	switch e.Type {
	case memory.AgentCreated{}.EventType():
		var ev memory.AgentCreated
		if err := e.Decode(&ev); err != nil {
			return err
		}
		// As in the memories read model, the first AgentCreated binds the
		// model; a second one (racing writers) changes nothing.
		if _, exists, err := tx.Agent(ctx, ev.UserID, ev.AgentID); err != nil || exists {
			return err
		}
		a := VectorAgent{UserID: ev.UserID, AgentID: ev.AgentID, Model: ev.EmbeddingModel, Dimensions: ev.Dimensions}
		if err := tx.PutAgent(ctx, a); err != nil {
			return err
		}
		*ops = append(*ops, func() { p.setAgent(a) })
	case memory.AgentModelSwitched{}.EventType():
		var ev memory.AgentModelSwitched
		if err := e.Decode(&ev); err != nil {
			return err
		}
		return p.switchModel(ctx, tx, ev, ops)
	case memory.AgentDeleted{}.EventType():
		var ev memory.AgentDeleted
		if err := e.Decode(&ev); err != nil {
			return err
		}
		if err := tx.DeleteAgent(ctx, ev.UserID, ev.AgentID); err != nil {
			return err
		}
		*ops = append(*ops, func() {
			p.mu.Lock()
			delete(p.agents, agentKey{ev.UserID, ev.AgentID})
			p.mu.Unlock()
			for _, c := range p.index.Collections(agentPrefix(ev.UserID, ev.AgentID)) {
				p.index.DropCollection(c)
			}
		})
	case memory.MemoryCreated{}.EventType():
		var ev memory.MemoryCreated
		if err := e.Decode(&ev); err != nil {
			return err
		}
		// Memory events of an agent deleted earlier in the log are ignored.
		if _, exists, err := tx.Agent(ctx, ev.UserID, ev.AgentID); err != nil || !exists {
			return err
		}
		if _, exists, err := tx.Memory(ctx, ev.MemoryID); err != nil || exists {
			return err
		}
		return tx.PutMemory(ctx, VectorMemory{
			MemoryID: ev.MemoryID, UserID: ev.UserID, AgentID: ev.AgentID, Type: ev.Type,
			Tags: ev.Tags, CreatedAt: ev.CreatedAt, TextHash: ev.TextHash,
		})
	case memory.MemoryEmbedded{}.EventType():
		var ev memory.MemoryEmbedded
		if err := e.Decode(&ev); err != nil {
			return err
		}
		return p.embedded(ctx, tx, ev, ops)
	case memory.MemoryUpdated{}.EventType():
		var ev memory.MemoryUpdated
		if err := e.Decode(&ev); err != nil {
			return err
		}
		return p.updated(ctx, tx, ev.AgentRef, ev.MemoryID, ev.TextHash, &ev.Tags, ops)
	case memory.MemoryPatched{}.EventType():
		var ev memory.MemoryPatched
		if err := e.Decode(&ev); err != nil {
			return err
		}
		return p.updated(ctx, tx, ev.AgentRef, ev.MemoryID, ev.TextHash, ev.Tags, ops)
	case memory.MemoryForgotten{}.EventType():
		var ev memory.MemoryForgotten
		if err := e.Decode(&ev); err != nil {
			return err
		}
		m, ok, err := memoryOf(ctx, tx, ev.AgentRef, ev.MemoryID)
		if err != nil || !ok {
			return err
		}
		m.Forgotten = true
		if err := tx.PutMemory(ctx, m); err != nil {
			return err
		}
		*ops = append(*ops, p.removeEverywhere(m.UserID, m.AgentID, m.MemoryID))
	case memory.MemoryRecovered{}.EventType():
		var ev memory.MemoryRecovered
		if err := e.Decode(&ev); err != nil {
			return err
		}
		m, ok, err := memoryOf(ctx, tx, ev.AgentRef, ev.MemoryID)
		if err != nil || !ok || !m.Forgotten {
			return err
		}
		m.Forgotten = false
		if err := tx.PutMemory(ctx, m); err != nil {
			return err
		}
		// Its vectors were kept: index the current ones again.
		return p.updated(ctx, tx, ev.AgentRef, ev.MemoryID, m.TextHash, nil, ops)
	case memory.MemoryPurged{}.EventType():
		var ev memory.MemoryPurged
		if err := e.Decode(&ev); err != nil {
			return err
		}
		if _, ok, err := memoryOf(ctx, tx, ev.AgentRef, ev.MemoryID); err != nil || !ok {
			return err
		}
		if err := tx.DeleteMemory(ctx, ev.MemoryID); err != nil {
			return err
		}
		*ops = append(*ops, p.removeEverywhere(ev.UserID, ev.AgentID, ev.MemoryID))
	}
	return nil
}

// embedded stores every vector (one for a text that is no longer current
// may become current again, and a model other than the active one is a
// re-embedding in progress, kept for the switch) and indexes it when it is
// of the memory's current text.
func (p *Vectors) embedded(ctx context.Context, tx VectorTx, ev memory.MemoryEmbedded, ops *[]func()) error {
	m, ok, err := memoryOf(ctx, tx, ev.AgentRef, ev.MemoryID)
	if err != nil || !ok {
		return err // a vector of a purged memory has nothing to attach to
	}
	if len(ev.Vector) == 0 {
		return nil
	}
	space := VectorSpace{ev.Model, ev.Dimensions}
	if err := tx.PutVector(ctx, ev.MemoryID, space, ev.TextHash, ev.Vector); err != nil {
		return err
	}
	if ev.TextHash == m.TextHash && !m.Forgotten && m.Type.Searchable() {
		item := indexItem(m, ev.Vector)
		coll := collectionName(m.UserID, m.AgentID, space)
		*ops = append(*ops, func() { p.upsert(coll, item) })
	}
	return nil
}

// updated re-reads the memory's current vectors: a new text hash makes its
// vectors of the old text stale, and new tags (nil: unchanged) change what
// filters see.
func (p *Vectors) updated(ctx context.Context, tx VectorTx, ref memory.AgentRef, memoryID, textHash string, tags *[]string, ops *[]func()) error {
	m, ok, err := memoryOf(ctx, tx, ref, memoryID)
	if err != nil || !ok {
		return err
	}
	textChanged := m.TextHash != textHash
	m.TextHash = textHash
	if tags != nil {
		m.Tags = *tags
	}
	if err := tx.PutMemory(ctx, m); err != nil {
		return err
	}
	if m.Forgotten || !m.Type.Searchable() {
		return nil
	}
	current, err := tx.CurrentVectors(ctx, m.MemoryID)
	if err != nil {
		return err
	}
	if textChanged {
		*ops = append(*ops, p.removeEverywhere(m.UserID, m.AgentID, m.MemoryID))
	}
	for _, v := range current {
		item := indexItem(m, v.Vector)
		coll := collectionName(m.UserID, m.AgentID, v.VectorSpace)
		*ops = append(*ops, func() { p.upsert(coll, item) })
	}
	return nil
}

// switchModel makes ev.Model the agent's active model; the old model's
// vectors are no longer needed by anything and are dropped.
func (p *Vectors) switchModel(ctx context.Context, tx VectorTx, ev memory.AgentModelSwitched, ops *[]func()) error {
	old, had, err := tx.Agent(ctx, ev.UserID, ev.AgentID)
	if err != nil || !had {
		return err
	}
	a := VectorAgent{UserID: ev.UserID, AgentID: ev.AgentID, Model: ev.Model, Dimensions: ev.Dimensions}
	if err := tx.PutAgent(ctx, a); err != nil {
		return err
	}
	dropOld := old.Space() != a.Space()
	if dropOld {
		if err := tx.DeleteSpace(ctx, ev.UserID, ev.AgentID, old.Space()); err != nil {
			return err
		}
	}
	*ops = append(*ops, func() {
		p.setAgent(a)
		if dropOld {
			p.index.DropCollection(collectionName(ev.UserID, ev.AgentID, old.Space()))
		}
	})
	return nil
}

// memoryOf returns the memory if it exists and belongs to ref's agent, as
// the memories read model scopes every memory event.
func memoryOf(ctx context.Context, tx VectorTx, ref memory.AgentRef, memoryID string) (VectorMemory, bool, error) {
	m, ok, err := tx.Memory(ctx, memoryID)
	if err != nil || !ok || m.UserID != ref.UserID || m.AgentID != ref.AgentID {
		return VectorMemory{}, false, err
	}
	return m, true, nil
}

func (p *Vectors) setAgent(a VectorAgent) {
	p.mu.Lock()
	p.agents[agentKey{a.UserID, a.AgentID}] = a
	p.mu.Unlock()
}

// removeEverywhere deletes a memory from all its agent's collections.
func (p *Vectors) removeEverywhere(userID, agentID, memoryID string) func() {
	return func() {
		for _, c := range p.index.Collections(agentPrefix(userID, agentID)) {
			p.index.Delete(c, memoryID)
		}
	}
}

// upsert adds to the index; a vector the index rejects (zero, or of the
// wrong size for its collection) is logged and left out rather than
// stopping the projection, which would retry it for ever.
func (p *Vectors) upsert(collection string, items ...vectorindex.Item) {
	err := p.index.Upsert(collection, items...)
	if err == nil {
		return
	}
	if len(items) > 1 && !errors.Is(err, context.Canceled) {
		for _, it := range items {
			p.upsert(collection, it)
		}
		return
	}
	p.logger.Warn("vector left out of the index", "collection", collection, "memory_id", items[0].ID, "error", err)
}

func indexItem(m VectorMemory, v []float32) vectorindex.Item {
	return vectorindex.Item{ID: m.MemoryID, Vector: v, Type: string(m.Type), Tags: m.Tags, CreatedAt: m.CreatedAt}
}

// Load fills the index from the store, once; Reset makes it a no-op.
func (p *Vectors) Load(ctx context.Context) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	if p.loaded {
		return nil
	}
	agents, err := p.store.VectorAgents(ctx)
	if err != nil {
		return fmt.Errorf("vectors: load agents: %w", err)
	}
	p.mu.Lock()
	for _, a := range agents {
		p.agents[agentKey{a.UserID, a.AgentID}] = a
	}
	p.mu.Unlock()
	b := newLoadBatch(p)
	if err := p.store.LoadVectors(ctx, b.add); err != nil {
		return fmt.Errorf("vectors: load: %w", err)
	}
	b.flush()
	p.loaded = true
	return nil
}

// loadBatch groups loaded vectors by collection and upserts them in
// batches; vectors are copied into one reused slab, since the index copies
// what it stores.
type loadBatch struct {
	p      *Vectors
	slab   []float32
	n      int
	groups map[string][]vectorindex.Item
	order  []string
}

const loadBatchSize = 1024

func newLoadBatch(p *Vectors) *loadBatch {
	return &loadBatch{p: p, groups: map[string][]vectorindex.Item{}}
}

func (b *loadBatch) add(v LoadedVector) error {
	if !v.Memory.Type.Searchable() {
		return nil
	}
	if len(b.slab)+len(v.Vector) > cap(b.slab) {
		if b.n > 0 {
			b.flush()
		}
		if cap(b.slab) < len(v.Vector)*loadBatchSize {
			b.slab = make([]float32, 0, len(v.Vector)*loadBatchSize)
		}
	}
	start := len(b.slab)
	b.slab = append(b.slab, v.Vector...)
	c := collectionName(v.Memory.UserID, v.Memory.AgentID, v.VectorSpace)
	if _, ok := b.groups[c]; !ok {
		b.order = append(b.order, c)
	}
	b.groups[c] = append(b.groups[c], indexItem(v.Memory, b.slab[start:len(b.slab):len(b.slab)]))
	b.n++
	return nil
}

func (b *loadBatch) flush() {
	for _, c := range b.order {
		b.p.upsert(c, b.groups[c]...)
	}
	clear(b.groups)
	b.order = b.order[:0]
	b.slab = b.slab[:0]
	b.n = 0
}
