package vectorindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"unsafe"

	"github.com/engram-memory/engram/domain"
)

// ErrSnapshot is returned (wrapped) by ReadSnapshot for a body it cannot
// use: another version, truncated, or inconsistent.
var ErrSnapshot = errors.New("vectorindex: bad snapshot")

// ReadSnapshot builds a Port from a body written by WriteSnapshot; opts
// are the loaded index's options (as New takes them: thresholds, FloatDir
// and Seed for graphs built from now on). The image's collections keep
// the modes, graphs and quantisation they were written with.
//
// Where data is 8-byte aligned on a little-endian machine the index uses
// its big arrays in place instead of copying them: vectors, int8 codes and
// scales, full-precision floats of quantised collections, graph links and
// per-slot metadata. data may then be a read-only memory mapping: the
// caller must keep it mapped and unchanged for the life of the returned
// Port (until its Index is closed and dropped). Writes never change data:
// a collection copies what it would change in place on its first write
// (collection.ownArrays), and arrays it appends to are copied when they
// grow. The slot tables, interned names and tag posting lists are rebuilt
// on the heap.
//
// Every length, offset, code and link is checked, so a malformed body
// yields an error wrapping ErrSnapshot, never a panic or an index that
// reads out of bounds.
func ReadSnapshot(data []byte, opts Options) (*Port, error) {
	d := &decoder{data: data, floatDir: opts.FloatDir}
	if d.version = d.u32(); d.err == nil && d.version != SnapshotVersion && d.version != 1 {
		return nil, fmt.Errorf("%w: body version %d, want %d or 1", ErrSnapshot, d.version, SnapshotVersion)
	}
	ix := New(opts)
	p := NewPort(ix)
	for range d.count(8) {
		scope := domain.IndexScope{UserID: d.str(), AgentID: d.str()}
		for range d.count(4) {
			p.forgotten.Mark(scope, d.str(), true)
		}
	}
	for range d.count(32) {
		if d.err != nil {
			break
		}
		c := d.collection()
		if d.err != nil {
			break
		}
		if _, dup := ix.cols[c.name]; dup {
			d.fail("collection %q twice", c.name)
			break
		}
		ix.cols[c.name] = c
	}
	if d.err == nil && d.off != len(d.data) {
		d.fail("%d bytes after the last collection", len(d.data)-d.off)
	}
	if d.err != nil {
		ix.Close()
		for _, c := range ix.cols {
			c.release()
		}
		return nil, d.err
	}
	p.imageUnbuilt = p.Unbuilt()
	p.imageOutdated = d.version < SnapshotVersion
	for _, c := range ix.cols {
		c.mu.Lock()
		if c.stable && c.graph.n < c.ids.len() {
			ix.startIndexer(c) // carries on where the original's build was
		}
		c.mu.Unlock()
	}
	return p, nil
}

// maxSnapshotDim bounds a loaded collection's dimension (models have at
// most a few thousand), so a damaged one cannot make a query allocate much.
const maxSnapshotDim = 1 << 16

// decoder reads the layout; the first error sticks and every later read
// returns zero values.
type decoder struct {
	data []byte
	off  int
	err  error
	// floatDir takes the vectors loaded quantised collections append.
	floatDir string
	// version is the body's format: 1 has no live slots in ID order.
	version uint32
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrSnapshot, d.off, fmt.Sprintf(format, args...))
	}
}

// take returns the next n bytes.
func (d *decoder) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.data)-d.off) {
		d.fail("truncated: %d bytes wanted, %d left", n, len(d.data)-d.off)
		return nil
	}
	b := d.data[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return b
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// count reads a count of entries that take at least minBytes each, and
// refuses one the rest of the body cannot hold.
func (d *decoder) count(minBytes int) int {
	n := uint64(d.u32())
	if n > uint64(len(d.data)-d.off)/uint64(minBytes) {
		d.fail("count %d exceeds the body", n)
		return 0
	}
	return int(n)
}

// size reads a u64 length that must fit in an int and the body.
func (d *decoder) size(elemBytes uint64) int {
	n := d.u64()
	if n > uint64(len(d.data)-d.off)/elemBytes {
		d.fail("length %d exceeds the body", n)
		return 0
	}
	return int(n)
}

func (d *decoder) str() string { return string(d.take(uint64(d.u32()))) }

func (d *decoder) strs() []string {
	out := make([]string, d.count(4))
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *decoder) align() {
	if pad := (arrayAlign - d.off%arrayAlign) % arrayAlign; pad > 0 {
		d.take(uint64(pad))
	}
}

// readArray returns the next n elements: data itself when it is aligned on
// a little-endian machine (borrowed reports so), else a decoded copy.
func readArray[T fixedSize](d *decoder, n int) (s []T, borrowed bool) {
	d.align()
	var zero T
	size := uint64(unsafe.Sizeof(zero))
	if uint64(n) > math.MaxInt/size {
		d.fail("array of %d elements", n)
		return nil, false
	}
	b := d.take(uint64(n) * size)
	if d.err != nil || n == 0 {
		return nil, false
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if littleEndian && uintptr(p)%unsafe.Alignof(zero) == 0 {
		return unsafe.Slice((*T)(p), n), true
	}
	out := make([]T, n)
	if littleEndian { // misaligned: a plain copy
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), len(b)), b)
		return out, false
	}
	if _, err := binary.Decode(b, binary.LittleEndian, out); err != nil {
		d.fail("%v", err)
		return nil, false
	}
	return out, false
}

// readSlots reads a per-slot array as readArray does: used in place, it
// is the array's read-only base, which appends leave as it is; a decoded
// copy is the heap's.
func readSlots[T fixedSize](d *decoder, n int) (slotArray[T], bool) {
	s, borrowed := readArray[T](d, n)
	if borrowed {
		return slotArray[T]{base: s}, true
	}
	return heapSlots(s), false
}

// collection reads and checks one collection.
func (d *decoder) collection() *collection {
	c := &collection{name: d.str()}
	c.published = sync.NewCond(&c.mu)
	dim := d.u32()
	flags := d.u32()
	slots, graphBase, nDead := d.u64(), d.u64(), d.u64()
	idGarbage, tagGarbage := d.u64(), d.u64()
	idBytesLen, tagArenaLen := d.size(1), d.size(4)
	typeNames, tagNames := d.strs(), d.strs()
	if d.err != nil {
		return nil
	}
	c.stable = flags&snapStable != 0
	quantized := flags&snapQuantized != 0
	c.caughtUp = flags&snapCaughtUp != 0
	switch {
	case flags&^(snapStable|snapQuantized|snapCaughtUp) != 0:
		d.fail("collection %q: unknown flags %#x", c.name, flags)
	case quantized && !c.stable:
		d.fail("collection %q: quantised but not a graph collection", c.name)
	case slots > math.MaxUint32 || slots > uint64(len(d.data)):
		d.fail("collection %q: %d slots", c.name, slots)
	case dim > maxSnapshotDim, slots > 0 && (dim == 0 || uint64(dim) > uint64(len(d.data))/slots):
		d.fail("collection %q: %d slots of %d dimensions", c.name, slots, dim)
	case graphBase > slots, nDead > slots, !c.stable && nDead > 0:
		d.fail("collection %q: graph base %d, %d tombstones, %d slots", c.name, graphBase, nDead, slots)
	case idGarbage > uint64(idBytesLen), tagGarbage > uint64(tagArenaLen):
		d.fail("collection %q: garbage exceeds its arena", c.name)
	case len(typeNames) > maxTypes:
		d.fail("collection %q: %d types", c.name, len(typeNames))
	}
	if d.err != nil {
		return nil
	}
	n, vecLen := int(slots), int(slots)*int(dim)
	c.dim, c.graphBase, c.nDead = int(dim), int(graphBase), int(nDead)
	c.ids.garbage, c.tagGarbage = int(idGarbage), int(tagGarbage)
	c.typeNames, c.tagNames = d.interner(c.name, typeNames), d.interner(c.name, tagNames)

	var borrowed [12]bool
	c.ids.bytes.base, borrowed[0] = readArray[byte](d, idBytesLen)
	c.ids.off, borrowed[1] = readArray[uint32](d, n)
	c.created, borrowed[2] = readArray[int64](d, n)
	c.types, borrowed[3] = readArray[uint16](d, n)
	c.tagOff, borrowed[4] = readArray[uint32](d, n)
	c.tagN, borrowed[5] = readArray[uint8](d, n)
	c.tagArena, borrowed[6] = readArray[uint32](d, tagArenaLen)
	var idOrder []uint32
	if d.version >= 2 {
		idOrder, _ = readArray[uint32](d, n-int(nDead))
	}
	if c.stable {
		c.dead, borrowed[7] = readArray[uint64](d, (n+63)/64)
		c.tagSlots = d.postings(c.name, n, c.tagNames.len())
	}
	if quantized {
		c.codes, borrowed[8] = readSlots[int8](d, vecLen)
		c.scales, borrowed[9] = readSlots[float32](d, n)
		d.align()
		floats := d.take(uint64(vecLen) * 4)
		if d.err == nil {
			ff, err := newFloatFile(d.floatDir, c.dim)
			if err != nil {
				d.err = err
				return nil
			}
			ff.mapped, ff.mappedSlots = floats, n
			c.floats = ff
		}
	} else {
		c.vecs, borrowed[10] = readSlots[float32](d, vecLen)
	}
	if c.stable {
		c.graph = d.graph(c.name, n)
	}
	for _, b := range borrowed {
		c.borrowed = c.borrowed || b
	}
	c.inPlace = borrowed[2] // the int64 creation times: 8-byte aligned
	if d.err == nil {
		d.check(c)
	}
	if d.err != nil {
		c.release()
		return nil
	}
	if d.version == 1 {
		c.slotOf.rebuild(&c.ids)
		if c.slotOf.n != c.live() {
			d.fail("collection %q: %d distinct live ids in %d live slots", c.name, c.slotOf.n, c.live())
			c.release()
			return nil
		}
		return c
	}
	if !d.checkIDOrder(c, idOrder) {
		c.release()
		return nil
	}
	c.idOrder, c.imageIDs = idOrder, c.ids
	// imageIDs must keep the image's offsets: the first write changes a
	// copy of them (ownArrays), even of offsets decoded to the heap.
	c.borrowed = true
	return c
}

// checkIDOrder checks that order is c's live slots in strictly ascending
// ID order (so the live IDs are distinct), which c then searches in
// place of a slot table.
func (d *decoder) checkIDOrder(c *collection, order []uint32) bool {
	if len(order) != c.live() {
		d.fail("collection %q: %d slots in ID order, %d live", c.name, len(order), c.live())
		return false
	}
	var prev []byte // the ID of order[i-1], decoded once
	for i, s := range order {
		if int(s) >= c.ids.len() || c.ids.off[s] == noID {
			d.fail("collection %q: slot %d in ID order is not live", c.name, s)
			return false
		}
		id := c.ids.at(s)
		if i > 0 && bytes.Compare(prev, id) >= 0 {
			d.fail("collection %q: IDs out of order or repeated at %d", c.name, i)
			return false
		}
		prev = id
	}
	return true
}

// postings reads the tag posting lists: ascending slots below n, at most
// one list per tag. They are read rather than rebuilt because they keep
// tombstoned slots until compaction, and their lengths steer the search
// strategy: rebuilt lists could change which hits a search returns.
// Each list is used in place (post copies it when it grows).
func (d *decoder) postings(coll string, n, tags int) [][]uint32 {
	lists := make([][]uint32, d.count(8))
	if len(lists) > tags {
		d.fail("collection %q: %d posting lists for %d tags", coll, len(lists), tags)
		return nil
	}
	for t := range lists {
		l, _ := readArray[uint32](d, d.size(4))
		for i, s := range l {
			if int64(s) >= int64(n) || (i > 0 && s <= l[i-1]) {
				d.fail("collection %q: posting list of tag %d", coll, t)
				return nil
			}
		}
		lists[t] = l
	}
	return lists
}

func (d *decoder) interner(coll string, names []string) interner {
	var in interner
	for _, s := range names {
		if _, dup := in.lookup(s); dup {
			d.fail("collection %q: name %q interned twice", coll, s)
		}
		in.intern(s)
	}
	return in
}

// check verifies every per-slot entry, so searches and writes never index
// outside an array.
func (d *decoder) check(c *collection) {
	n := c.ids.len()
	dead := 0
	for s := range n {
		slot := uint32(s)
		isDead := c.stable && c.isDead(slot)
		if isDead {
			dead++
		}
		off := c.ids.off[s]
		switch {
		case off == noID:
			if !isDead {
				d.fail("collection %q: live slot %d has no id", c.name, s)
				return
			}
		case isDead:
			d.fail("collection %q: tombstone %d keeps an id", c.name, s)
			return
		case int(off) >= len(c.ids.bytes.base):
			d.fail("collection %q: slot %d: id offset %d", c.name, s, off)
			return
		default:
			l, w := binary.Uvarint(c.ids.bytes.base[off:])
			if w <= 0 || l == 0 || l > uint64(len(c.ids.bytes.base)-int(off)-w) {
				d.fail("collection %q: slot %d: bad id", c.name, s)
				return
			}
		}
		if int(c.types[s]) >= c.typeNames.len() {
			d.fail("collection %q: slot %d: type code %d", c.name, s, c.types[s])
			return
		}
		tn := int(c.tagN[s])
		if uint64(c.tagOff[s])+uint64(tn) > uint64(len(c.tagArena)) {
			d.fail("collection %q: slot %d: tags outside the arena", c.name, s)
			return
		}
		tags := c.tagArena[c.tagOff[s] : int(c.tagOff[s])+tn]
		for i, t := range tags {
			if int(t) >= c.tagNames.len() || (i > 0 && t <= tags[i-1]) {
				d.fail("collection %q: slot %d: tag codes", c.name, s)
				return
			}
		}
	}
	if c.stable {
		total := 0
		for _, w := range c.dead {
			total += bits.OnesCount64(w)
		}
		if total != dead || dead != c.nDead {
			d.fail("collection %q: %d tombstones, %d flagged", c.name, c.nDead, total)
			return
		}
		if c.graph.n > n {
			d.fail("collection %q: graph of %d nodes over %d slots", c.name, c.graph.n, n)
		}
	}
}

// graph reads and checks a graph over at most slots nodes. Every link must
// lead to an inserted node that has the link's level, and the entry point
// must be on the top level: a walk then only reads the blocks it may.
func (d *decoder) graph(coll string, slots int) *graph {
	m, m0, efC := int(d.u32()), int(d.u32()), int(d.u32())
	entry, top := d.u32(), int(int32(d.u32()))
	n := d.size(1)
	upperLen := d.size(4)
	rng := d.take(uint64(d.u32()))
	if d.err != nil {
		return nil
	}
	pcg := new(rand.PCG)
	switch {
	case m < 2 || m > 1<<10 || m0 != layer0Degree(m) || efC < 1:
		d.fail("collection %q: graph degree %d/%d, ef %d", coll, m, m0, efC)
	case n > slots:
		d.fail("collection %q: graph of %d nodes over %d slots", coll, n, slots)
	case top < -1 || top > maxLevel || (top >= 0 && int64(entry) >= int64(n)):
		d.fail("collection %q: graph entry %d on level %d", coll, entry, top)
	case pcg.UnmarshalBinary(rng) != nil:
		d.fail("collection %q: graph random state", coll)
	}
	if d.err != nil {
		return nil
	}
	g := &graph{
		m: m, m0: m0, efC: efC, levelMult: 1 / math.Log(float64(m)),
		pcg: pcg, rng: rand.New(pcg), n: n, entry: entry, maxLevel: top,
	}
	g.levels, _ = readArray[uint8](d, n)
	g.upperOff, _ = readArray[uint32](d, n)
	g.upper, _ = readArray[uint32](d, upperLen)
	if uint64(n)*uint64(m0) > uint64(len(d.data)) {
		d.fail("collection %q: graph of %d nodes", coll, n)
		return nil
	}
	g.links0, _ = readArray[uint32](d, n*m0)
	if d.err != nil {
		return nil
	}
	if top < 0 {
		top = 0 // nodes inserted as tombstones: level 0, no links
	} else if int(g.levels[entry]) != top {
		d.fail("collection %q: graph entry %d is on level %d, not %d", coll, entry, g.levels[entry], top)
		return nil
	}
	if msg := g.checkLinks(top, upperLen); msg != "" {
		d.fail("collection %q: %s", coll, msg)
		return nil
	}
	return g
}

// checkLinks says what is wrong with the graph's nodes and links ("":
// nothing): every node is on a level up to top, its upper blocks within
// the upper array, and every link of a block (up to its first noLink)
// names a node on that level or above. Level 0, n·m0 words and most of
// the check, is one pass over its array: every node is on level 0, so a
// link there need only name a node, and its level is not looked up.
func (g *graph) checkLinks(top, upperLen int) string {
	n := uint32(g.n)
	for b := 0; b < len(g.links0); b += g.m0 {
		for _, nb := range g.links0[b : b+g.m0] {
			if nb == noLink {
				break
			}
			if nb >= n {
				return fmt.Sprintf("graph node %d links %d on level 0", b/g.m0, nb)
			}
		}
	}
	for id := range n {
		level := int(g.levels[id])
		if level > top || (level > 0 && uint64(g.upperOff[id])+uint64(level*g.m) > uint64(upperLen)) {
			return fmt.Sprintf("graph node %d on level %d", id, level)
		}
		for l := 1; l <= level; l++ {
			for _, nb := range g.block(id, l) {
				if nb == noLink {
					break
				}
				if nb >= n || int(g.levels[nb]) < l {
					return fmt.Sprintf("graph node %d links %d on level %d", id, nb, l)
				}
			}
		}
	}
	return ""
}
