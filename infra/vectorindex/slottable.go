package vectorindex

import (
	"math/bits"
	"math/rand/v2"
	"slices"
)

// slotTable maps a live item's ID to its slot. It is an open-addressing hash
// table (linear probing) of slot numbers whose keys live in the collection's
// ID arena, so an entry costs 4 bytes at ≤ 3/4 load instead of a Go map's
// ~38 (a second string header, the value, padding, control byte and load
// slack): at 100 dimensions that difference is 8% of the raw vector bytes.
//
// A snapshot holds the table (and the index's hash key), and a restored
// collection probes the cells in place (often in a read-only mapping)
// instead of hashing every ID again: that rebuild was most of reading a
// vector image (at 100k IDs ~35 ms of CPU, 12% of a command-line search).
// The first write copies the cells (own), as it copies the other per-slot
// arrays.
//
// Every method takes the ID arena; each stored slot s must hold its key in
// the arena whenever the table is probed.
type slotTable struct {
	key   *idHash  // the index's
	cells []uint32 // slot+1, 0 = empty; the length is a power of two
	n     int      // occupied cells
}

func (t *slotTable) home(id string) int {
	return int(hashID(t.key, id) & uint64(len(t.cells)-1))
}

// homeOf is the home cell of the ID stored at slot (hashID gives bytes and
// strings of equal content the same hash).
func (t *slotTable) homeOf(ids *idArena, slot uint32) int {
	return int(hashID(t.key, ids.at(slot)) & uint64(len(t.cells)-1))
}

// own makes the cells the table's own to change in place (see
// collection.ownArrays).
func (t *slotTable) own() { t.cells = slices.Clone(t.cells) }

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
// renumbered the slots, or for a version 1 image, which holds no table).
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

// idHash is the key of a keyed hash of IDs: the Go runtime's wyhash-based
// fallback for memory hashing (runtime/hash64.go, memhashFallback), whose
// key, unlike hash/maphash's seed, can be written to a snapshot. Each index
// draws a random key (New), as maphash's seed was random, so IDs chosen to
// collide (an import) cannot be prepared against it; its snapshots keep
// it, so a restored index hashes as the original did, and the same writes
// give both the same tables.
type idHash [4]uint64

func newIDHash() idHash {
	var k idHash
	for i := range k {
		k[i] = rand.Uint64() | 1
	}
	return k
}

// hashID hashes id under key k (runtime/hash64.go's memhashFallback with
// the per-call seed 0).
func hashID[T ~string | ~[]byte](k *idHash, id T) uint64 {
	const m5 = 0x1d8e4e27c47d124f
	var a, b uint64
	seed, n := k[0], len(id)
	switch {
	case n == 0:
		return seed
	case n < 4:
		a = uint64(id[0]) | uint64(id[n>>1])<<8 | uint64(id[n-1])<<16
	case n == 4:
		a = read32(id, 0)
		b = a
	case n < 8:
		a, b = read32(id, 0), read32(id, n-4)
	case n == 8:
		a = read64(id, 0)
		b = a
	case n <= 16:
		a, b = read64(id, 0), read64(id, n-8)
	default:
		i, l := 0, n
		if l > 48 {
			seed1, seed2 := seed, seed
			for ; l > 48; i, l = i+48, l-48 {
				seed = hashMix(read64(id, i)^k[1], read64(id, i+8)^seed)
				seed1 = hashMix(read64(id, i+16)^k[2], read64(id, i+24)^seed1)
				seed2 = hashMix(read64(id, i+32)^k[3], read64(id, i+40)^seed2)
			}
			seed ^= seed1 ^ seed2
		}
		for ; l > 16; i, l = i+16, l-16 {
			seed = hashMix(read64(id, i)^k[1], read64(id, i+8)^seed)
		}
		a, b = read64(id, i+l-16), read64(id, i+l-8)
	}
	return hashMix(m5^uint64(n), hashMix(a^k[1], b^seed))
}

func hashMix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func read32[T ~string | ~[]byte](s T, i int) uint64 {
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24
}

func read64[T ~string | ~[]byte](s T, i int) uint64 {
	return read32(s, i) | read32(s, i+4)<<32
}
