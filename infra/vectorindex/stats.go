package vectorindex

import "slices"

// Mode is how a collection is searched.
type Mode string

const (
	ModeFlat     Mode = "flat"     // exact scan only
	ModeBuilding Mode = "building" // graph being built: graph walk + exact scan of the rest
	ModeHNSW     Mode = "hnsw"     // graph covers every slot
)

// Stats describes the index's contents and memory.
type Stats struct {
	Collections   int
	Vectors       int   // live items
	Tombstones    int   // deleted items still holding a slot (graph collections)
	VectorBytes   int64 // raw float32 bytes of the live vectors
	HeldBytes     int64 // estimate of all memory held: vectors incl. spare capacity, graphs, ids, metadata
	FileBytes     int64 // full-precision vectors of quantised collections, in files (page cache)
	PerCollection []CollectionStats
}

// CollectionStats describes one collection.
type CollectionStats struct {
	Name        string
	Dim         int
	Vectors     int
	Tombstones  int
	Indexed     int // slots covered by the graph
	Mode        Mode
	VectorBytes int64
	HeldBytes   int64
	// Quantized: held as int8 codes, the floats in a file of FileBytes.
	Quantized bool
	FileBytes int64
	// QuantizeError is why a collection that should be quantised is not.
	QuantizeError string
	// InPlace: its arrays are read in place from the snapshot bytes it was
	// loaded from (ReadSnapshot of 8-byte aligned bytes), not copied to the
	// heap; the first write copies them.
	InPlace bool
}

// Stats takes each collection's read lock in turn; figures are a consistent
// snapshot per collection, not across them.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	cols := make([]*collection, 0, len(ix.cols))
	for _, c := range ix.cols {
		cols = append(cols, c)
	}
	ix.mu.RUnlock()
	var st Stats
	for _, c := range cols {
		c.mu.RLock()
		cs, dropped := c.stats(), c.dropped
		c.mu.RUnlock()
		if dropped {
			continue
		}
		st.Collections++
		st.Vectors += cs.Vectors
		st.Tombstones += cs.Tombstones
		st.VectorBytes += cs.VectorBytes
		st.HeldBytes += cs.HeldBytes
		st.FileBytes += cs.FileBytes
		st.PerCollection = append(st.PerCollection, cs)
	}
	slices.SortFunc(st.PerCollection, func(a, b CollectionStats) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return st
}

// Approximate costs of things whose capacity Go does not expose.
const (
	// mapEntryBytes: a Swiss-table slot for a string key and a uint32
	// (24 bytes, plus control bytes) at a typical 3/4 load.
	mapEntryBytes = 34
)

func (c *collection) stats() CollectionStats {
	cs := CollectionStats{Name: c.name, Dim: c.dim, Vectors: c.live(), Tombstones: c.nDead, Mode: ModeFlat, InPlace: c.inPlace}
	cs.VectorBytes = int64(c.live()) * int64(c.dim) * 4
	if c.graph != nil {
		cs.Indexed = c.graph.n
		cs.Mode = ModeBuilding
		if c.graph.n == c.ids.len() {
			cs.Mode = ModeHNSW
		}
		cs.HeldBytes += c.graph.heldBytes()
	}
	if c.quantized() {
		cs.Quantized, cs.FileBytes = true, int64(c.ids.len())*c.floats.slotBytes()
	}
	if c.quantizeErr != nil {
		cs.QuantizeError = c.quantizeErr.Error()
	}
	cs.HeldBytes += int64(c.vecs.heldElems())*4 + int64(c.codes.heldElems()) + int64(c.scales.heldElems())*4 +
		c.ids.heldBytes() + c.slotOf.heldBytes() +
		int64(cap(c.created))*8 + int64(cap(c.types))*2 + int64(cap(c.tagOff))*4 + int64(cap(c.tagN)) +
		int64(cap(c.tagArena))*4 + int64(cap(c.dead))*8 + c.postingBytes() +
		c.typeNames.heldBytes() + c.tagNames.heldBytes()
	return cs
}
