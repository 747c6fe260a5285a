package vectorindex

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// collection stores one caller-chosen key's vectors. Every per-item array is
// indexed by slot; vecs holds slot i at [i*dim, (i+1)*dim).
//
// Slots move only in flat mode (delete = swap-remove). Once a collection has
// reached the ANN threshold it is "stable": a slot keeps its vector for ever,
// which lets HNSW node ids be slots. Deletes and vector changes then leave a
// tombstone, reclaimed by compact.
type collection struct {
	mu   sync.RWMutex
	name string
	dim  int

	vecs slotArray[float32] // empty when quantised
	// A quantised collection (Options.Quantize; graph collections only)
	// keeps int8 codes and their scales on the heap and the full-precision
	// vectors in floats; see quant.go.
	codes  slotArray[int8]
	scales slotArray[float32]
	floats *floatFile
	// quantizeErr is why a collection that should be quantised is not (the
	// float file could not be written); it then keeps its floats.
	quantizeErr error

	ids    idArena
	slotOf slotTable
	// idOrder is a collection read from an image's live slots in ID order,
	// read in place from the image, and imageIDs the image's IDs it is
	// ordered by (its offsets are never changed: a write changes a copy,
	// see ownArrays). The collection finds an image slot's ID by binary
	// search in idOrder, and slotOf holds only the slots appended since
	// the image: a process that only searches, or catches up a few
	// captures, never builds the whole table (at 100k vectors ~50 ms of
	// CPU, most of a command-line search's open). A graph collection's
	// slots never move, so its writes keep idOrder: a replaced or deleted
	// image slot is a tombstone, which the lookup skips. A flat
	// collection's appends and replacements move no slot either; its
	// first delete builds the whole table (indexSlots), since a
	// swap-remove moves one; so does a compaction, which renumbers them.
	idOrder  []uint32
	imageIDs idArena
	created  []int64  // unix nanos (see unixNanos)
	types    []uint16 // code in typeNames
	tagOff   []uint32 // item tags are tagArena[tagOff : tagOff+tagN], sorted codes
	tagN     []uint8

	tagArena   []uint32
	tagGarbage int // arena entries no slot refers to any more
	typeNames  interner
	tagNames   interner

	dead     []uint64 // tombstone bitset (stable mode only)
	nDead    int
	tagSlots [][]uint32 // tag code → slots carrying it (stable mode only; see posting.go)

	stable bool
	graph  *graph // non-nil in stable mode: covers slots [0, graph.n)
	// graphBase is the slot count when the current graph was started.
	graphBase int
	// caughtUp: the current graph has covered every slot at least once
	// since it was started. Until then writes are a bulk load (a start-up
	// fill, an import crossing the threshold) and are not held back.
	caughtUp bool
	// lastWrite is when an Upsert last changed the collection.
	lastWrite time.Time
	epoch     uint64 // bumped when the graph is replaced or dropped: stale indexers stop
	indexing  bool   // a background indexer is running for this epoch
	dropped   bool
	// borrowed: the per-slot arrays are not the collection's own to
	// change in place: they alias a loaded snapshot's bytes (often a
	// read-only mapping). lent: a snapshot being written reads them
	// without the lock. The next write copies them first (ownArrays).
	borrowed bool
	// inPlace: borrowed, and the arrays that need alignment (the 8-byte
	// ones too) alias the snapshot's bytes rather than a copy of them.
	inPlace bool
	lent    atomic.Bool
	// vecsShared: a flat collection's vectors may still be read by an
	// image (the snapshot's bytes, or one being written): ownVectors
	// copies them before a write changes one in place. Appends go to the
	// heap tail past them (slotArray) and need no copy.
	vecsShared bool
	// published is signalled (with c.mu as its lock) whenever the graph
	// grows, the indexer stops or the collection is dropped: writers held
	// back by Options.MaxTail wait on it.
	published *sync.Cond
}

// buildDeferral is how long a graph build should hold off at now to leave
// the cores to writes (0: build now); bound is the tail bound (0: none).
// It holds off while the last write is under quiet old and the new tail
// is under half the bound, so writers never reach the bound because of it.
func (c *collection) buildDeferral(now time.Time, quiet time.Duration, bound int) time.Duration {
	since := now.Sub(c.lastWrite)
	if bound <= 0 || since >= quiet || 2*c.newSlots() >= bound {
		return 0
	}
	return quiet - since
}

// newSlots is the number of slots appended since the current graph was
// started that it does not cover yet. Slots that existed when it started
// (a collection crossing the threshold, a compaction) are not counted: they
// are the build's own backlog, not writers outrunning it.
func (c *collection) newSlots() int {
	if c.graph == nil {
		return 0
	}
	return c.ids.len() - max(c.graph.n, c.graphBase)
}

// prepared is one validated item ready to be stored.
type prepared struct {
	id      string
	vec     []float32
	inv     float64
	typ     string
	tags    []string
	created int64
}

func (c *collection) live() int { return c.ids.len() - c.nDead }

// holds reports whether id is a live item (caller holds the lock).
func (c *collection) holds(id string) bool {
	_, ok := c.slot(id)
	return ok
}

// slot returns the slot of the live item id (caller holds the lock, read
// or write).
func (c *collection) slot(id string) (uint32, bool) {
	if s, ok := c.slotOf.get(&c.ids, id); ok || c.idOrder == nil {
		return s, ok
	}
	i, found := slices.BinarySearchFunc(c.idOrder, id, func(slot uint32, id string) int {
		return compareID(c.imageIDs.at(slot), id)
	})
	if !found || c.stable && c.isDead(c.idOrder[i]) {
		return 0, false
	}
	return c.idOrder[i], true
}

// indexSlots builds the slot table of a flat collection read from an
// image, before its first delete moves slots (caller holds the write
// lock). A graph collection keeps its ID order (see idOrder).
func (c *collection) indexSlots() {
	if c.idOrder != nil && !c.stable {
		c.dropIDOrder()
	}
}

// dropIDOrder indexes every live slot in slotOf instead of idOrder.
func (c *collection) dropIDOrder() {
	c.slotOf.rebuild(&c.ids)
	c.idOrder, c.imageIDs = nil, idArena{}
}

func (c *collection) quantized() bool { return c.floats != nil }

// view is the current vectors for the graph and the scans (see vectorView).
func (c *collection) view() vectorView {
	return vectorView{dim: c.dim, quantized: c.quantized(), floats: c.vecs, codes: c.codes, scales: c.scales}
}

// vec is slot's full-precision vector (unquantised collections only).
func (c *collection) vec(slot uint32) []float32 {
	o := int(slot) * c.dim
	return c.vecs.at(o, c.dim)
}

func (c *collection) isDead(slot uint32) bool { return c.dead[slot/64]&(1<<(slot%64)) != 0 }

// checkCodes fails before any mutation if the batch would overflow the
// compact type code or the ID arena (counting every ID as new).
func (c *collection) checkCodes(items []prepared) error {
	var unseen map[string]bool // usually stays nil: types are few and known
	idBytes := 0
	for _, it := range items {
		idBytes += idSize(it.id)
		if _, ok := c.typeNames.lookup(it.typ); !ok {
			if unseen == nil {
				unseen = map[string]bool{}
			}
			unseen[it.typ] = true
		}
	}
	if c.typeNames.len()+len(unseen) > maxTypes {
		return fmt.Errorf("vectorindex: collection %q would exceed %d distinct types", c.name, maxTypes)
	}
	if !c.ids.fits(idBytes) {
		return fmt.Errorf("vectorindex: collection %q would exceed %d bytes of item IDs", c.name, c.ids.max())
	}
	return nil
}

const (
	maxTypes = 1 << 16 // type codes are uint16
	maxTags  = 255     // tags per item; the count is a uint8
)

// upsert stores items (caller holds the write lock; items are validated).
// A quantised collection writes the batch's full-precision vectors to its
// float file first, so that a failed write leaves the collection as it was.
func (c *collection) upsert(items []prepared) error {
	var units []float32 // quantised: item i's unit vector at [i*dim, (i+1)*dim)
	if c.quantized() {
		units = make([]float32, len(items)*c.dim)
		for i, it := range items {
			scaleInto(c.unit(units, i), it.vec, it.inv)
		}
		// Quantised collections are stable: every item appends a slot.
		if err := c.floats.write(c.ids.len(), units); err != nil {
			return err
		}
	}
	fresh, freshBytes := 0, 0
	for _, it := range items {
		if _, ok := c.slot(it.id); !ok {
			fresh, freshBytes = fresh+1, freshBytes+idSize(it.id)
		}
	}
	c.reserve(fresh, freshBytes)
	for i, it := range items {
		slot, exists := c.slot(it.id)
		switch {
		case !exists:
			c.appendSlot(it, c.unit(units, i))
		case !c.stable:
			c.ownVectors()
			scaleInto(c.vec(slot), it.vec, it.inv)
			c.setMeta(slot, it)
		default: // stable slots never change: graph links and posting lists stay valid
			c.tombstone(slot)
			c.appendSlot(it, c.unit(units, i))
		}
	}
	return nil
}

// unit is item i's vector in a batch's units (nil when there are none).
func (c *collection) unit(units []float32, i int) []float32 {
	if units == nil {
		return nil
	}
	return units[i*c.dim : (i+1)*c.dim]
}

// reserve grows every per-slot array once for a batch, so a bulk load
// allocates exactly what it needs instead of doubling repeatedly.
func (c *collection) reserve(n, idBytes int) {
	if n == 0 {
		return
	}
	if c.quantized() {
		c.codes.reserve(n * c.dim)
		c.scales.reserve(n)
	} else {
		c.vecs.reserve(n * c.dim)
	}
	c.ids.reserve(n, idBytes)
	c.created = slices.Grow(c.created, n)
	c.types = slices.Grow(c.types, n)
	c.tagOff = slices.Grow(c.tagOff, n)
	c.tagN = slices.Grow(c.tagN, n)
	c.slotOf.reserve(&c.ids, n)
}

// appendSlot adds it in a new slot; a quantised collection stores the
// codes of unit, its unit vector.
func (c *collection) appendSlot(it prepared, unit []float32) {
	slot := uint32(c.ids.len())
	if c.quantized() {
		codes := c.codes.extend(c.dim)
		c.scales.extend(1)[0] = quantizeInto(codes, unit)
	} else {
		scaleInto(c.vecs.extend(c.dim), it.vec, it.inv)
	}
	c.ids.add(it.id)
	c.slotOf.put(&c.ids, it.id, slot)
	c.created = append(c.created, 0)
	c.types = append(c.types, 0)
	c.tagOff = append(c.tagOff, 0)
	c.tagN = append(c.tagN, 0)
	c.setMeta(slot, it)
	if c.stable {
		if len(c.dead)*64 < c.ids.len() {
			c.dead = append(c.dead, 0)
		}
		c.post(slot)
	}
}

func (c *collection) setMeta(slot uint32, it prepared) {
	c.created[slot] = it.created
	c.types[slot] = uint16(c.typeNames.intern(it.typ))
	c.tagGarbage += int(c.tagN[slot])
	c.tagOff[slot], c.tagN[slot] = 0, 0
	if len(it.tags) == 0 {
		return
	}
	codes := make([]uint32, 0, len(it.tags))
	for _, t := range it.tags {
		codes = append(codes, c.tagNames.intern(t))
	}
	slices.Sort(codes)
	codes = slices.Compact(codes)
	c.tagOff[slot] = uint32(len(c.tagArena))
	c.tagN[slot] = uint8(len(codes))
	c.tagArena = append(c.tagArena, codes...)
	c.compactTagsIfSparse()
}

// remove deletes one id. Flat mode swap-removes the last slot into the hole;
// stable mode leaves a tombstone.
func (c *collection) remove(id string) {
	c.indexSlots()
	slot, ok := c.slot(id)
	if !ok {
		return
	}
	if c.stable {
		c.tombstone(slot)
		return
	}
	c.ownVectors()
	c.slotOf.remove(&c.ids, id)
	c.ids.drop(slot)
	c.tagGarbage += int(c.tagN[slot])
	last := uint32(c.ids.len() - 1)
	if slot != last {
		copy(c.vec(slot), c.vec(last))
		c.ids.off[slot] = c.ids.off[last]
		c.created[slot] = c.created[last]
		c.types[slot] = c.types[last]
		c.tagOff[slot] = c.tagOff[last]
		c.tagN[slot] = c.tagN[last]
		c.slotOf.put(&c.ids, string(c.ids.at(slot)), slot)
	}
	c.vecs.tail = c.vecs.tail[:int(last)*c.dim] // owned: see ownVectors
	c.ids.off = c.ids.off[:last]
	c.created = c.created[:last]
	c.types = c.types[:last]
	c.tagOff = c.tagOff[:last]
	c.tagN = c.tagN[:last]
}

func (c *collection) tombstone(slot uint32) {
	c.slotOf.remove(&c.ids, string(c.ids.at(slot)))
	c.ids.drop(slot)
	c.tagGarbage += int(c.tagN[slot])
	c.tagN[slot] = 0
	c.dead[slot/64] |= 1 << (slot % 64)
	c.nDead++
}

// ownArrays makes the arrays a write may change in place the collection's
// own before it does (caller holds the write lock): the per-slot metadata
// (tombstones, flat-mode swap-removes and replacements, compaction move
// entries). The vectors, codes and scales only ever grow past the length
// a snapshot took, appends going to their heap tails (slotArray), except
// a flat collection's, which a delete or a replacement changes in place:
// ownVectors copies those first, so a restored flat collection's appends
// (a catch-up's captures) copy none. Its ID bytes, tag arena and interned
// names are append-only or replaced by compaction; they stay shared. The
// copies keep room for the write's appends, which would copy them again.
func (c *collection) ownArrays() {
	if !c.borrowed && !c.lent.Load() {
		return
	}
	c.ids.off = ownCopy(c.ids.off)
	c.created = ownCopy(c.created)
	c.types = ownCopy(c.types)
	c.tagOff = ownCopy(c.tagOff)
	c.tagN = ownCopy(c.tagN)
	c.dead = ownCopy(c.dead)
	c.vecsShared = c.vecsShared || !c.stable
	c.borrowed, c.inPlace = false, false
	c.lent.Store(false)
}

// ownVectors makes a flat collection's vectors its own before a write
// changes one in place (caller holds the write lock; see vecsShared).
func (c *collection) ownVectors() {
	if c.vecsShared || c.vecs.base != nil {
		c.vecs = heapSlots(ownCopy(c.vecs.owned()))
		c.vecsShared = false
	}
}

// ownCopy is a copy of s with room to grow (see grow).
func ownCopy[T any](s []T) []T {
	c := make([]T, len(s), headroom(len(s), len(s)+1))
	copy(c, s)
	return c
}

// release frees everything when the collection is dropped; searches holding
// a stale pointer see an empty collection.
func (c *collection) release() {
	if c.quantized() {
		c.floats.close()
	}
	c.vecs, c.codes, c.scales, c.floats = slotArray[float32]{}, slotArray[int8]{}, slotArray[float32]{}, nil
	c.ids, c.slotOf, c.idOrder, c.imageIDs, c.created, c.types, c.tagOff, c.tagN = idArena{}, slotTable{}, nil, idArena{}, nil, nil, nil, nil
	c.tagArena, c.tagGarbage, c.typeNames, c.tagNames = nil, 0, interner{}, interner{}
	c.dead, c.nDead, c.tagSlots, c.stable, c.graph, c.indexing = nil, 0, nil, false, nil, false
	c.dropped = true
	c.epoch++
	c.published.Broadcast()
}
