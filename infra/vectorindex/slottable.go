package vectorindex

import "hash/maphash"

// slotTable maps a live item's ID to its slot. It is an open-addressing hash
// table (linear probing) of slot numbers whose keys live in the collection's
// ID arena, so an entry costs 4 bytes at ≤ 3/4 load instead of a Go map's
// ~38 (a second string header, the value, padding, control byte and load
// slack): at 100 dimensions that difference is 8% of the raw vector bytes.
//
// Every method takes the ID arena; each stored slot s must hold its key in
// the arena whenever the table is probed.
type slotTable struct {
	seed  maphash.Seed
	cells []uint32 // slot+1, 0 = empty; the length is a power of two
	n     int      // occupied cells
}

func (t *slotTable) home(id string) int {
	return int(maphash.String(t.seed, id) & uint64(len(t.cells)-1))
}

// homeOf is the home cell of the ID stored at slot (maphash gives bytes and
// strings of equal content the same hash).
func (t *slotTable) homeOf(ids *idArena, slot uint32) int {
	return int(maphash.Bytes(t.seed, ids.at(slot)) & uint64(len(t.cells)-1))
}

// find returns the cell holding id, or the empty cell where it would go.
func (t *slotTable) find(ids *idArena, id string) (cell int, found bool) {
	mask := len(t.cells) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		switch c := t.cells[i]; {
		case c == 0:
			return i, false
		case ids.is(c-1, id):
			return i, true
		}
	}
}

func (t *slotTable) get(ids *idArena, id string) (uint32, bool) {
	if t.n == 0 {
		return 0, false
	}
	i, ok := t.find(ids, id)
	return t.cells[i] - 1, ok
}

// put maps id to slot, adding or replacing its entry.
func (t *slotTable) put(ids *idArena, id string, slot uint32) {
	t.reserve(ids, 1)
	i, ok := t.find(ids, id)
	if !ok {
		t.n++
	}
	t.cells[i] = slot + 1
}

// remove deletes id's entry, shifting later entries of its probe run back
// so that no lookup stops early at the hole.
func (t *slotTable) remove(ids *idArena, id string) {
	if t.n == 0 {
		return
	}
	hole, ok := t.find(ids, id)
	if !ok {
		return
	}
	mask := len(t.cells) - 1
	for j := (hole + 1) & mask; t.cells[j] != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole unless its home lies cyclically
		// in (hole, j]: then a lookup would start past the hole.
		h := t.homeOf(ids, t.cells[j]-1)
		if (j-h)&mask >= (j-hole)&mask {
			t.cells[hole], hole = t.cells[j], j
		}
	}
	t.cells[hole] = 0
	t.n--
}

// reserve makes room for extra more entries without exceeding 3/4 load.
func (t *slotTable) reserve(ids *idArena, extra int) {
	need := t.n + extra
	if need*4 <= len(t.cells)*3 {
		return
	}
	size := max(8, len(t.cells))
	for need*4 > size*3 {
		size *= 2
	}
	old := t.cells
	if old == nil {
		t.seed = maphash.MakeSeed()
	}
	t.cells, t.n = make([]uint32, size), 0
	for _, c := range old {
		if c != 0 {
			i := t.homeOf(ids, c-1)
			for t.cells[i] != 0 {
				i = (i + 1) & (size - 1)
			}
			t.cells[i] = c
			t.n++
		}
	}
}

// rebuild indexes every live slot of ids afresh (after compaction has
// renumbered the slots).
func (t *slotTable) rebuild(ids *idArena) {
	t.cells, t.n = nil, 0
	t.reserve(ids, ids.len())
	for s := range uint32(ids.len()) {
		if id := ids.at(s); id != nil {
			t.put(ids, string(id), s)
		}
	}
}

func (t *slotTable) heldBytes() int64 { return int64(cap(t.cells)) * 4 }
