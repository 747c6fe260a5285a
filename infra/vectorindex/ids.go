package vectorindex

import (
	"encoding/binary"
	"math"
)

// idArena holds the slots' item IDs back to back in one byte array, each
// preceded by its uvarint length, and one 4-byte offset per slot. A []string
// cost a 16-byte header per slot plus a separately allocated, size-class
// rounded string: ~17 bytes more per item, 4% of a 100-d vector.
//
// Removed IDs leave garbage, reclaimed once it is most of the arena.
//
// The bytes are a slotArray: an arena read from a snapshot reads its IDs
// in place from the image (base, never written) and appends new ones to a
// heap tail, so a restored collection's first append (a catch-up's
// capture) copies no image IDs (~3 MB at 100k). An offset past the base
// is in the tail; an ID never straddles the two.
type idArena struct {
	bytes   slotArray[byte]
	off     []uint32 // per slot; noID for a tombstone
	garbage int      // bytes no slot refers to any more
	limit   int      // maximum len(bytes); the offsets are uint32
}

const noID = math.MaxUint32

func (a *idArena) len() int { return len(a.off) }

// at is slot's ID, nil for a tombstone. It aliases the arena: valid until
// the next write.
func (a *idArena) at(slot uint32) []byte {
	o := a.off[slot]
	if o == noID {
		return nil
	}
	seg := a.bytes.base
	if int(o) >= len(seg) {
		seg, o = a.bytes.tail, o-uint32(len(seg))
	}
	n, w := binary.Uvarint(seg[o:])
	start := int(o) + w
	return seg[start : start+int(n) : start+int(n)]
}

func (a *idArena) is(slot uint32, id string) bool { return string(a.at(slot)) == id }

// compareID orders an ID in the arena against id (the conversions in the
// comparisons copy nothing).
func compareID(b []byte, id string) int {
	switch {
	case string(b) < id:
		return -1
	case string(b) == id:
		return 0
	}
	return 1
}

// size is the arena bytes id takes.
func idSize(id string) int { return uvarintLen(len(id)) + len(id) }

func uvarintLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(n))
}

// fits reports whether ids of idBytes total arena size can be appended.
func (a *idArena) fits(idBytes int) bool { return a.bytes.len()-a.garbage+idBytes <= a.max() }

func (a *idArena) max() int {
	if a.limit == 0 {
		return noID
	}
	return a.limit
}

// reserve makes room for n more slots.
func (a *idArena) reserve(n, idBytes int) {
	a.off = grow(a.off, n)
	a.bytes.reserve(idBytes)
}

// add appends a slot holding id. The caller checked that the batch fits,
// so dropping the garbage always makes room.
func (a *idArena) add(id string) {
	if a.bytes.len()+idSize(id) > a.max() {
		a.compact()
	}
	a.off = append(a.off, uint32(a.bytes.len()))
	a.bytes.tail = binary.AppendUvarint(a.bytes.tail, uint64(len(id)))
	a.bytes.tail = append(a.bytes.tail, id...)
}

// drop forgets slot's ID, leaving a tombstone. It may move the other IDs.
func (a *idArena) drop(slot uint32) {
	if a.off[slot] != noID {
		a.garbage += idSize(string(a.at(slot)))
		a.off[slot] = noID
		a.compactIfSparse()
	}
}

// compactIfSparse rewrites the arena once most of it is garbage.
func (a *idArena) compactIfSparse() {
	if a.garbage > 4096 && a.garbage > a.bytes.len()/2 {
		a.compact()
	}
}

func (a *idArena) compact() {
	b := make([]byte, 0, a.bytes.len()-a.garbage)
	for s, o := range a.off {
		if o == noID {
			continue
		}
		id := a.at(uint32(s))
		a.off[s] = uint32(len(b))
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
	}
	a.bytes, a.garbage = heapSlots(b), 0
}

func (a *idArena) heldBytes() int64 { return int64(a.bytes.heldElems()) + int64(cap(a.off))*4 }
