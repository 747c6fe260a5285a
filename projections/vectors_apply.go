package projections

import (
	"context"
	"errors"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// apply changes the state for one event, queues the matching index writes
// in w and the changes of the agents' spaces in spaces.
func (p *Vectors) apply(ctx context.Context, tx domain.VectorStateTx, e domain.Event, w *indexWrites, spaces *[]func()) error {
	payload, err := e.Decoded()
	if err != nil {
		return err
	}
	switch d := payload.(type) {
	case *memory.AgentCreated:
		ev := *d
		// As in the memories read model, the first AgentCreated binds the
		// model; a second one (racing writers) changes nothing.
		if _, exists, err := tx.Agent(ctx, ev.UserID, ev.AgentID); err != nil || exists {
			return err
		}
		a := domain.VectorAgent{UserID: ev.UserID, AgentID: ev.AgentID, Space: domain.VectorSpace{Model: ev.EmbeddingModel, Dimensions: ev.Dimensions}}
		if err := tx.PutAgent(ctx, a); err != nil {
			return err
		}
		*spaces = append(*spaces, func() { p.setAgent(a) })
	case *memory.AgentModelSwitched:
		ev := *d
		return p.switchModel(ctx, tx, ev, w, spaces)
	case *memory.AgentDeleted:
		ev := *d
		if err := tx.DeleteAgent(ctx, ev.UserID, ev.AgentID); err != nil {
			return err
		}
		scope := scopeOf(ev.AgentRef)
		w.do(func(ctx context.Context) error { return p.index.DeleteAgent(ctx, scope) })
		*spaces = append(*spaces, func() {
			p.mu.Lock()
			delete(p.agents, scope)
			p.mu.Unlock()
		})
	case *memory.MemoryCreated:
		ev := *d
		// Memory events of an agent deleted earlier in the log are ignored.
		if _, exists, err := tx.Agent(ctx, ev.UserID, ev.AgentID); err != nil || !exists {
			return err
		}
		// A repeated creation keeps the first, as in the read model.
		_, err := tx.InsertMemory(ctx, domain.VectorMemory{
			MemoryID: ev.MemoryID, UserID: ev.UserID, AgentID: ev.AgentID, Type: string(ev.Type),
			Tags: ev.Tags, CreatedAt: ev.CreatedAt, TextHash: ev.TextHash,
		})
		return err
	case *memory.MemoryEmbedded:
		ev := *d
		return p.embedded(ctx, tx, ev, w)
	case *memory.MemoryUpdated:
		ev := *d
		return p.updated(ctx, tx, ev.AgentRef, ev.MemoryID, ev.TextHash, &ev.Tags, w)
	case *memory.MemoryPatched:
		ev := *d
		return p.updated(ctx, tx, ev.AgentRef, ev.MemoryID, ev.TextHash, ev.Tags, w)
	case *memory.MemoryForgotten:
		ev := *d
		m, ok, err := memoryOf(ctx, tx, ev.AgentRef, ev.MemoryID)
		if err != nil || !ok {
			return err
		}
		m.Forgotten = true
		if err := tx.PutMemory(ctx, m); err != nil {
			return err
		}
		scope := scopeOf(ev.AgentRef)
		w.do(func(ctx context.Context) error { return p.index.SetForgotten(ctx, scope, ev.MemoryID, true) })
	case *memory.MemoryRecovered:
		ev := *d
		m, ok, err := memoryOf(ctx, tx, ev.AgentRef, ev.MemoryID)
		if err != nil || !ok || !m.Forgotten {
			return err
		}
		m.Forgotten = false
		if err := tx.PutMemory(ctx, m); err != nil {
			return err
		}
		// Its current vectors are indexed again, not just unflagged: a
		// remote index written before forgotten points were kept lacks
		// them.
		return p.updated(ctx, tx, ev.AgentRef, ev.MemoryID, m.TextHash, nil, w)
	case *memory.MemoryPurged:
		ev := *d
		if _, ok, err := memoryOf(ctx, tx, ev.AgentRef, ev.MemoryID); err != nil || !ok {
			return err
		}
		if err := tx.DeleteMemory(ctx, ev.MemoryID); err != nil {
			return err
		}
		p.removeEverywhere(w, ev.AgentRef, ev.MemoryID)
	}
	return nil
}

// embedded stores every vector (one for a text that is no longer current
// may become current again, and a model other than the active one is a
// re-embedding in progress, kept for the switch) and indexes it when it is
// of the memory's current text.
func (p *Vectors) embedded(ctx context.Context, tx domain.VectorStateTx, ev memory.MemoryEmbedded, w *indexWrites) error {
	m, ok, err := memoryOf(ctx, tx, ev.AgentRef, ev.MemoryID)
	if err != nil || !ok {
		return err // a vector of a purged memory has nothing to attach to
	}
	if len(ev.Vector) == 0 {
		return nil
	}
	space := domain.VectorSpace{Model: ev.Model, Dimensions: ev.Dimensions}
	if err := tx.PutVector(ctx, ev.MemoryID, space, ev.TextHash, ev.Vector); err != nil {
		return err
	}
	if ev.TextHash == m.TextHash && memory.Type(m.Type).Searchable() {
		w.upsertPoints(m.Point(space, ev.Vector))
	}
	return nil
}

// updated re-reads the memory's current vectors: a new text hash makes its
// vectors of the old text stale, and new tags (nil: unchanged) change what
// filters see.
func (p *Vectors) updated(ctx context.Context, tx domain.VectorStateTx, ref memory.AgentRef, memoryID, textHash string, tags *[]string, w *indexWrites) error {
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
	if !memory.Type(m.Type).Searchable() {
		return nil
	}
	current, err := tx.CurrentVectors(ctx, m.MemoryID)
	if err != nil {
		return err
	}
	if textChanged {
		p.removeEverywhere(w, ref, m.MemoryID)
	}
	for _, v := range current {
		w.upsertPoints(m.Point(v.Space, v.Vector))
	}
	return nil
}

// switchModel makes ev.Model the agent's active model; the old model's
// vectors are no longer needed by anything and are dropped.
func (p *Vectors) switchModel(ctx context.Context, tx domain.VectorStateTx, ev memory.AgentModelSwitched, w *indexWrites, spaces *[]func()) error {
	old, had, err := tx.Agent(ctx, ev.UserID, ev.AgentID)
	if err != nil || !had {
		return err
	}
	a := domain.VectorAgent{UserID: ev.UserID, AgentID: ev.AgentID, Space: domain.VectorSpace{Model: ev.Model, Dimensions: ev.Dimensions}}
	if err := tx.PutAgent(ctx, a); err != nil {
		return err
	}
	*spaces = append(*spaces, func() { p.setAgent(a) })
	if old.Space != a.Space {
		if err := tx.DeleteSpace(ctx, ev.UserID, ev.AgentID, old.Space); err != nil {
			return err
		}
		w.do(func(ctx context.Context) error { return p.index.DeleteSpace(ctx, a.Scope(), old.Space) })
	}
	return nil
}

// memoryOf returns the memory if it exists and belongs to ref's agent, as
// the memories read model scopes every memory event.
func memoryOf(ctx context.Context, tx domain.VectorStateTx, ref memory.AgentRef, memoryID string) (domain.VectorMemory, bool, error) {
	m, ok, err := tx.Memory(ctx, memoryID)
	if err != nil || !ok || m.UserID != ref.UserID || m.AgentID != ref.AgentID {
		return domain.VectorMemory{}, false, err
	}
	return m, true, nil
}

func (p *Vectors) setAgent(a domain.VectorAgent) {
	p.mu.Lock()
	p.agents[a.Scope()] = a.Space
	p.mu.Unlock()
}

// removeEverywhere deletes a memory's points in every space.
func (p *Vectors) removeEverywhere(w *indexWrites, ref memory.AgentRef, memoryID string) {
	scope := scopeOf(ref)
	w.do(func(ctx context.Context) error { return p.index.DeleteMemory(ctx, scope, memoryID) })
}

// loadBatch groups loaded vectors and upserts them in batches; vectors
// are copied into one reused slab, since the index copies what it stores.
type loadBatch struct {
	p      *Vectors
	slab   []float32
	points []domain.VectorPoint
}

const loadBatchSize = 1024

func (b *loadBatch) add(ctx context.Context, v domain.LoadedVector) error {
	if !memory.Type(v.Memory.Type).Searchable() {
		return nil
	}
	if len(b.slab)+len(v.Vector) > cap(b.slab) {
		if err := b.flush(ctx); err != nil {
			return err
		}
		if cap(b.slab) < len(v.Vector)*loadBatchSize {
			b.slab = make([]float32, 0, len(v.Vector)*loadBatchSize)
		}
	}
	start := len(b.slab)
	b.slab = append(b.slab, v.Vector...)
	b.points = append(b.points, v.Memory.Point(v.Space, b.slab[start:len(b.slab):len(b.slab)]))
	return nil
}

// flush upserts the batch; vectors the index cannot take are logged and
// left out, as when they are applied.
func (b *loadBatch) flush(ctx context.Context) error {
	if len(b.points) == 0 {
		return nil
	}
	err := b.p.index.UpsertVectors(ctx, b.points...)
	if errors.Is(err, domain.ErrIndexRejected) && !errors.Is(err, domain.ErrIndexUnavailable) && ctx.Err() == nil {
		b.p.logger.Warn("index left out vectors it cannot take", "error", err)
		err = nil
	}
	b.points = b.points[:0]
	b.slab = b.slab[:0]
	return err
}
