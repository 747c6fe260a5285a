package memory

import (
	"cmp"
	"maps"
	"slices"
)

// WriteFold is how a ReadModelTx store holds back the writes of one batch
// that it can fold, so that they reach its tables once: the memories the
// batch inserted, with the vectors recorded for them since, and the
// changes to the agents' quota counters. A batch write of a thousand
// memories is a MemoryCreated and a MemoryEmbedded per memory; unfolded,
// each memory was an insert, an update of the row just inserted (and of
// its partial pending index) and an update of its agent's row.
//
// The store writes a held memory (TakeMemories) before any statement that
// reads or changes it (Holds) or changes its agent's rows, and everything
// (TakeMemories, then TakeCounts) when the batch's events are applied, so
// every read in the batch sees the state the unfolded writes would have
// left. SQLite and PostgreSQL stores share it, so both fold alike.
type WriteFold struct {
	memories []*FoldedMemory
	byID     map[string]*FoldedMemory
	counts   map[AgentRef]AgentCounts
}

// FoldedMemory is a memory inserted within the batch, as its row is to be
// written.
type FoldedMemory struct {
	NewMemory
	// Pending is its embed_pending: searchable, with no vector of its text
	// in its agent's model recorded within the batch.
	Pending bool
	// Embeddings are the models with a vector of its text recorded within
	// the batch, in the order recorded, each once.
	Embeddings []EmbeddingModel
}

// EmbeddingModel is a model at a size, as a memory's vector record keys it.
type EmbeddingModel struct {
	Model      string
	Dimensions int
}

// AgentCounts are changes to an agent's quota counters.
type AgentCounts struct {
	Memories     int
	ContentBytes int64
}

// NewWriteFold returns an empty fold.
func NewWriteFold() *WriteFold {
	return &WriteFold{byID: map[string]*FoldedMemory{}, counts: map[AgentRef]AgentCounts{}}
}

// Insert holds m to be written; a second insert of an id held is ignored,
// as the store ignores an id it holds. Whether the row is new is known
// only when it is written: the store counts it then (Count).
func (f *WriteFold) Insert(m NewMemory) {
	if _, held := f.byID[m.MemoryID]; held {
		return
	}
	fm := &FoldedMemory{NewMemory: m, Pending: m.Type.Searchable()}
	f.memories = append(f.memories, fm)
	f.byID[m.MemoryID] = fm
}

// Holds reports whether the memory id is held.
func (f *WriteFold) Holds(id string) bool {
	_, held := f.byID[id]
	return held
}

// Embed records a vector of the held memory's text textHash in model, and
// that it is no longer pending when model is its agent's (active). It
// reports false, recording nothing, when the memory is not held under ref
// with that text: the store then writes what it holds and records the
// vector as it would without a fold (a held insert of an id the store
// has already is no row of its own).
func (f *WriteFold) Embed(ref AgentRef, id string, model EmbeddingModel, textHash string, active EmbeddingModel) bool {
	fm, held := f.byID[id]
	if !held || fm.AgentRef != ref || fm.TextHash != textHash {
		return false
	}
	if !slices.Contains(fm.Embeddings, model) {
		fm.Embeddings = append(fm.Embeddings, model)
	}
	if model == active {
		fm.Pending = false
	}
	return true
}

// TakeMemories returns the held memories in the order inserted and holds
// none from then on.
func (f *WriteFold) TakeMemories() []*FoldedMemory {
	taken := f.memories
	f.memories = nil
	clear(f.byID)
	return taken
}

// Count adds changes to the agent's quota counters.
func (f *WriteFold) Count(ref AgentRef, memories int, contentBytes int64) {
	c := f.counts[ref]
	c.Memories += memories
	c.ContentBytes += contentBytes
	f.counts[ref] = c
}

// DropCounts forgets the changes to the agent's counters: its row is
// being deleted, and they die with it.
func (f *WriteFold) DropCounts(ref AgentRef) { delete(f.counts, ref) }

// TakeCounts calls write for each agent whose counters changed, in
// (user, agent) order, and holds no changes from then on; it stops at the
// first error.
func (f *WriteFold) TakeCounts(write func(ref AgentRef, c AgentCounts) error) error {
	refs := slices.SortedFunc(maps.Keys(f.counts), func(a, b AgentRef) int {
		return cmp.Or(cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.AgentID, b.AgentID))
	})
	for _, ref := range refs {
		if c := f.counts[ref]; c != (AgentCounts{}) {
			if err := write(ref, c); err != nil {
				return err
			}
		}
	}
	clear(f.counts)
	return nil
}
