package textindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/engram-memory/engram/domain"
)

// SnapshotVersion is the format version of the image WriteSnapshot
// writes; ReadSnapshot reads this version only. Version 1 was decoded
// into heap arrays; version 2 (encode) is read in place.
const SnapshotVersion = 2

// errImage: the image is not one this build wrote.
var errImage = errors.New("textindex: malformed snapshot")

// WriteSnapshot writes an image of the index: its collections (postings,
// blocks, slots, statistics) as they are, so that ReadSnapshot restores
// them without tokenising a document, and the forgotten flags.
//
// The image is taken in two steps, as the vector index's is:
//
//  1. Under Port.writes (which every port write read-locks for its whole
//     length) and each collection's read lock in turn, it captures every
//     collection (collection.capture: slice headers, and copies of the
//     small arrays writes change in place) and the forgotten sets. Writers
//     wait for that alone: no document is copied or encoded.
//  2. Without any lock it encodes what it captured and writes it to w.
//     Writers go on meanwhile: what they append lies past the captured
//     lengths, the first delete or replace in a collection copies the
//     slot arrays it changes in place (collection.ownSlots), and a
//     compaction waits for the next delete after the image.
//
// So the image is the index between two port writes: a projection tags
// it with a checkpoint read before the call, and re-derives everything
// after it, so the writes it holds past the checkpoint are harmless.
func (p *Port) WriteSnapshot(w io.Writer) error {
	p.snapshotMu.Lock()
	defer p.snapshotMu.Unlock()
	images, all := p.capture()
	defer release(images)
	e := encoder{w: w, b: make([]byte, 0, 2*encoderBuffer)}
	e.u32(p.ix.metaUnits)
	e.u32(uint32(len(images)))
	for _, img := range images {
		e.str(img.name)
		img.captured.encode(&e)
		// Each collection's end goes out before the next is encoded, so
		// a writer that holds its first write holds the encoding after
		// the first collection at the latest (TestSnapshotIsTheIndexAtItsCapture
		// writes to the others meanwhile).
		e.flush()
		if e.err != nil {
			return e.err
		}
	}
	scopes := make([]domain.IndexScope, 0, len(all))
	for s := range all {
		scopes = append(scopes, s)
	}
	sort.Slice(scopes, func(i, j int) bool {
		return scopes[i].UserID < scopes[j].UserID || scopes[i].UserID == scopes[j].UserID && scopes[i].AgentID < scopes[j].AgentID
	})
	e.u32(uint32(len(scopes)))
	for _, s := range scopes {
		e.str(s.UserID)
		e.str(s.AgentID)
		e.strs(all[s])
	}
	e.flush()
	return e.err
}

// capture is WriteSnapshot's first step: what writers wait for. The
// caller holds snapshotMu and releases the images.
func (p *Port) capture() ([]collectionImage, map[domain.IndexScope][]string) {
	p.writes.Lock()
	defer p.writes.Unlock()
	names := p.ix.Collections("")
	images := make([]collectionImage, 0, len(names))
	for _, name := range names {
		if c := p.ix.lookup(name); c != nil {
			c.mu.RLock()
			images = append(images, collectionImage{name: name, live: c, captured: c.capture()})
			c.mu.RUnlock()
		}
	}
	return images, p.forgotten.All()
}

func release(images []collectionImage) {
	for _, img := range images {
		img.live.release()
	}
}

// collectionImage is a collection captured for an image: the live one,
// whose flags the image releases, and what the image encodes.
type collectionImage struct {
	name     string
	live     *collection
	captured *collection
}

// ReadSnapshot returns the embedded keyword index WriteSnapshot imaged in
// data, with opts and saturation as NewPort takes them. An image written
// with another metadata weight is refused: its term frequencies would not
// be the ones opts give.
//
// The index reads its terms, posting lists, blocks and per-document
// arrays in place from data (when data is 8-byte aligned on a
// little-endian machine: a mapped body is), so reading costs a check of
// the arrays, not a decode: data may be a read-only memory mapping, which
// the caller keeps mapped and unchanged for the life of the returned Port.
// Writes never change data: they append to heap arrays past the image's,
// and copy what they change in place first (columns.go).
func ReadSnapshot(data []byte, opts Options, saturation float64) (*Port, error) {
	p := NewPort(opts, saturation)
	d := decoder{b: data}
	if units := d.u32(); d.err == nil && units != p.ix.metaUnits {
		return nil, fmt.Errorf("%w: metadata weight %d/%d, configured %d/%d", errImage, units, fieldScale, p.ix.metaUnits, fieldScale)
	}
	n := d.count(d.u32(), 1)
	for range n {
		name := d.str()
		c := decodeCollection(&d, p.ix.metaUnits)
		if d.err != nil {
			break
		}
		p.ix.cols[name] = c
	}
	scopes := d.count(d.u32(), 2)
	for range scopes {
		scope := domain.IndexScope{UserID: d.str(), AgentID: d.str()}
		for _, id := range d.strs() {
			p.forgotten.Mark(scope, id, true)
		}
	}
	if d.err == nil && d.off != len(d.b) {
		d.fail("%d bytes after the image", len(d.b)-d.off)
	}
	if d.err != nil {
		return nil, d.err
	}
	return p, nil
}

// capture returns what encode reads of c (read-locked, with no port
// write running), and marks c imaged and lent until release. The arrays
// writes change in place whatever the image holds (the document
// frequencies changed or added since the collection's own image, the
// outer arrays of the heap's posting lists and blocks, those blocks,
// bigTF) are copied: proportional to the terms, not the documents. The
// image's arrays are shared (nothing writes them); the rest are slice
// headers cut to their current lengths: writes append past them, and
// copy before they change them in place (see collection.lent).
func (c *collection) capture() *collection {
	n, terms := c.ids.len(), len(c.newTerms)
	d := &collection{
		metaUnits: c.metaUnits, img: c.img, tailLists: maps.Clone(c.tailLists), tailBlocks: make(map[uint32][]block, len(c.tailBlocks)), joined: maps.Clone(c.joined),
		newTerms: c.newTerms[:terms:terms], newLists: slices.Clone(c.newLists), newBlocks: make([][]block, terms),
		df:  c.df.capture(),
		ids: c.ids.prefix(n), dead: c.dead.prefix(n), length: c.length.prefix(n), created: c.created.prefix(n),
		types: c.types.prefix(n), typeNames: slices.Clip(c.typeNames), tags: c.tags.prefix(n), docTerms: c.docTerms.prefix(n),
		bigTF: maps.Clone(c.bigTF), idOrder: c.idOrder,
		live: c.live, nDead: c.nDead, totalLen: c.totalLen,
	}
	for id, blocks := range c.tailBlocks {
		d.tailBlocks[id] = slices.Clone(blocks)
	}
	for id, blocks := range c.newBlocks {
		d.newBlocks[id] = slices.Clone(blocks)
	}
	c.lent.Store(true)
	c.imaged.Store(true)
	return d
}

// release ends an image's use of c's arrays (capture).
func (c *collection) release() {
	c.imaged.Store(false)
	c.lent.Store(false)
}

// A collection's image (format 2) is laid out so that ReadSnapshot uses
// it in place: after its counts, every array starts 8-byte aligned in the
// body, in the order below, and holds fixed-size little-endian elements.
// Strings are tables (offsets, then bytes); lists per term or per slot are
// one array cut at offsets (n+1 of them).
//
//	df            [terms]int32
//	postOff       [terms+1]uint32, postings [..]posting (slot u32, tf u16, length u16)
//	blockOff      [terms+1]uint32, blocks   [..]block   (last, maxTF, minLen u32)
//	termOff       [terms+1]uint32, termBytes
//	termOrder     [terms]uint32   term ids in term order (a binary search)
//	idOff         [slots+1]uint32, idBytes
//	idOrder       [slots]uint32   slots in id order, then slot order
//	dead          [slots]byte     0 or 1
//	length        [slots]uint32
//	created       [slots]int64
//	types         [slots]uint32   in the type names (strings before the arrays)
//	tagOff        [slots+1]uint32, tagRefs [..]uint32 in the tag names:
//	tagNameOff    [tagNames+1]uint32, tagNameBytes
//	docTermOff    [slots+1]uint32, docTerms [..]uint32
//	bigTF         [..](key u64, tf u64)
//
// A dead slot's tags and terms are written empty (nothing reads them).
type imageCounts struct {
	terms, slots, postings, blocks, termBytes, idBytes, tagRefs, tagNames, tagNameBytes, docTerms, big, types uint32
	live, nDead, totalLen                                                                                     uint64
}

// encode writes the image of the collection to e.
func (c *collection) encode(e *encoder) {
	nTerms, nSlots := c.termCount(), c.ids.len()
	k := imageCounts{terms: uint32(nTerms), slots: uint32(nSlots), types: uint32(len(c.typeNames)),
		live: uint64(c.live), nDead: uint64(c.nDead), totalLen: uint64(c.totalLen), big: uint32(len(c.bigTF))}

	df := c.df.base
	if len(c.df.changed) > 0 || len(c.df.tail) > 0 {
		df = c.df.heap()
	}
	// A term of the image with postings written since is one list in the
	// new image: its blocks are computed for the two segments joined.
	computed := make(map[uint32][]block, len(c.tailLists))
	blocksOf := func(id uint32) []block {
		image, heap := c.segments(id)
		if len(heap.postings) == 0 {
			return image.blocks
		}
		if len(image.postings) == 0 {
			return heap.blocks
		}
		blocks, ok := computed[id]
		if !ok {
			blocks = c.blocksOf(id, slices.Concat(image.postings, heap.postings))
			computed[id] = blocks
		}
		return blocks
	}
	postOff, blockOff, termOff := make([]uint32, nTerms+1), make([]uint32, nTerms+1), make([]uint32, nTerms+1)
	for id := range uint32(nTerms) {
		postOff[id+1] = postOff[id] + uint32(c.postingCount(id))
		blockOff[id+1] = blockOff[id] + uint32(len(blocksOf(id)))
		termOff[id+1] = termOff[id] + uint32(len(c.term(id)))
	}
	k.postings, k.blocks, k.termBytes = postOff[nTerms], blockOff[nTerms], termOff[nTerms]
	termOrder := c.img.order
	if len(c.newTerms) > 0 || termOrder == nil {
		termOrder = make([]uint32, nTerms)
		for id := range termOrder {
			termOrder[id] = uint32(id)
		}
		slices.SortFunc(termOrder, func(a, b uint32) int { return strings.Compare(c.term(a), c.term(b)) })
	}

	idOff, tagOff, docTermOff := make([]uint32, nSlots+1), make([]uint32, nSlots+1), make([]uint32, nSlots+1)
	dead, length, created, types := make([]byte, nSlots), make([]uint32, nSlots), make([]int64, nSlots), make([]uint32, nSlots)
	var tagRefs []uint32
	tagIDs := map[string]uint32{}
	var tagNames []string
	for slot := range uint32(nSlots) {
		idOff[slot+1] = idOff[slot] + uint32(len(c.ids.at(slot)))
		length[slot], created[slot], types[slot] = c.length.at(slot), c.created.at(slot), c.types.at(slot)
		docTermOff[slot+1] = docTermOff[slot]
		if c.dead.at(slot) {
			dead[slot] = 1
		} else {
			for _, tag := range c.tags.at(slot) {
				id, ok := tagIDs[tag]
				if !ok {
					id = uint32(len(tagNames))
					tagIDs[tag] = id
					tagNames = append(tagNames, tag)
				}
				tagRefs = append(tagRefs, id)
			}
			docTermOff[slot+1] += uint32(len(c.docTerms.at(slot)))
		}
		tagOff[slot+1] = uint32(len(tagRefs))
	}
	idOrder := c.idOrder
	if len(c.ids.tail) > 0 || idOrder == nil {
		idOrder = make([]uint32, nSlots)
		for slot := range idOrder {
			idOrder[slot] = uint32(slot)
		}
		slices.SortStableFunc(idOrder, func(a, b uint32) int { return strings.Compare(c.ids.at(a), c.ids.at(b)) })
	}
	tagNameOff := make([]uint32, len(tagNames)+1)
	for i, tag := range tagNames {
		tagNameOff[i+1] = tagNameOff[i] + uint32(len(tag))
	}
	k.idBytes, k.tagRefs, k.docTerms = idOff[nSlots], uint32(len(tagRefs)), docTermOff[nSlots]
	k.tagNames, k.tagNameBytes = uint32(len(tagNames)), tagNameOff[len(tagNames)]

	e.align()
	for _, v := range []uint32{k.terms, k.slots, k.postings, k.blocks, k.termBytes, k.idBytes, k.tagRefs, k.tagNames, k.tagNameBytes, k.docTerms, k.big, k.types} {
		e.u32(v)
	}
	e.u64(k.live)
	e.u64(k.nDead)
	e.u64(k.totalLen)
	for _, t := range c.typeNames {
		e.str(t)
	}

	writeArray(e, df, putI32)
	writeArray(e, postOff, putU32)
	e.align()
	for id := range uint32(nTerms) {
		image, heap := c.segments(id)
		writeElems(e, image.postings, putPosting)
		writeElems(e, heap.postings, putPosting)
	}
	writeArray(e, blockOff, putU32)
	e.align()
	for id := range uint32(nTerms) {
		writeElems(e, blocksOf(id), putBlock)
	}
	writeArray(e, termOff, putU32)
	e.align()
	for id := range uint32(nTerms) {
		e.rawString(c.term(id))
	}
	writeArray(e, termOrder, putU32)
	writeArray(e, idOff, putU32)
	e.align()
	for slot := range uint32(nSlots) {
		e.rawString(c.ids.at(slot))
	}
	writeArray(e, idOrder, putU32)
	writeArray(e, dead, putByte)
	writeArray(e, length, putU32)
	writeArray(e, created, putI64)
	writeArray(e, types, putU32)
	writeArray(e, tagOff, putU32)
	writeArray(e, tagRefs, putU32)
	writeArray(e, tagNameOff, putU32)
	e.align()
	for _, tag := range tagNames {
		e.rawString(tag)
	}
	writeArray(e, docTermOff, putU32)
	// A live slot's terms, straight from the collection (the offsets
	// above skip the dead ones).
	e.align()
	for slot := range uint32(nSlots) {
		if !c.dead.at(slot) {
			writeElems(e, c.docTerms.at(slot), putU32)
		}
	}
	e.align()
	for _, key := range slices.Sorted(maps.Keys(c.bigTF)) {
		e.u64(key)
		e.u64(uint64(c.bigTF[key]))
	}
}

// decodeCollection reads a collection encode wrote, in place where data
// allows (see readArray). It checks every count, offset, slot and term id
// the arrays hold, so a bad image fails here rather than in a search; the
// order of termOrder and idOrder is the writer's (a misordered one makes
// lookups miss, not read out of bounds), and the body's checksum
// (infra/snapshot) stands for it.
func decodeCollection(d *decoder, metaUnits uint32) *collection {
	d.align()
	var k imageCounts
	for _, v := range []*uint32{&k.terms, &k.slots, &k.postings, &k.blocks, &k.termBytes, &k.idBytes, &k.tagRefs, &k.tagNames, &k.tagNameBytes, &k.docTerms, &k.big, &k.types} {
		*v = d.u32()
	}
	k.live, k.nDead, k.totalLen = d.u64(), d.u64(), d.u64()
	if d.err != nil {
		return nil
	}
	if k.types > uint32(len(d.b)-d.off) {
		d.fail("%d types", k.types)
		return nil
	}
	c := &collection{metaUnits: metaUnits, bigTF: map[uint64]uint32{}, newIDs: map[string]uint32{}, slotOf: map[string]uint32{},
		tailLists: map[uint32][]posting{}, tailBlocks: map[uint32][]block{}, joined: map[uint32]struct{}{}}
	for range k.types {
		c.typeNames = append(c.typeNames, d.str())
	}
	nTerms, nSlots := int(k.terms), int(k.slots)
	c.df.base = readArray(d, nTerms, getI32)
	c.img.postOff = d.offsets(nTerms, k.postings)
	c.img.postings = readArray(d, int(k.postings), getPosting)
	c.img.blockOff = d.offsets(nTerms, k.blocks)
	c.img.blocks = readArray(d, int(k.blocks), getBlock)
	c.img.terms = strTable{off: d.offsets(nTerms, k.termBytes), bytes: readArray(d, int(k.termBytes), getByte)}
	c.img.order = d.ids(nTerms, nTerms, "term order")
	c.ids.base = strTable{off: d.offsets(nSlots, k.idBytes), bytes: readArray(d, int(k.idBytes), getByte)}
	c.idOrder = d.ids(nSlots, nSlots, "id order")
	dead := readArray(d, nSlots, getByte)
	c.length.base = readArray(d, nSlots, getU32)
	c.created.base = readArray(d, nSlots, getI64)
	c.types.base = d.ids(nSlots, int(k.types), "type")
	c.tags.base = listColumn[uint32]{off: d.offsets(nSlots, k.tagRefs), values: d.ids(int(k.tagRefs), int(k.tagNames), "tag")}
	c.tags.names = strTable{off: d.offsets(int(k.tagNames), k.tagNameBytes), bytes: readArray(d, int(k.tagNameBytes), getByte)}
	c.docTerms = listColumn[uint32]{off: d.offsets(nSlots, k.docTerms), values: d.ids(int(k.docTerms), nTerms, "document's term")}
	d.align()
	for range d.count(k.big, 16) {
		key, tf := d.u64(), d.u64()
		if key>>32 >= uint64(nSlots) || uint32(key) >= k.terms {
			d.fail("a large count of slot %d and term %d", key>>32, uint32(key))
			return nil
		}
		c.bigTF[key] = uint32(min(tf, math.MaxUint32))
	}
	if d.err != nil {
		return nil
	}
	live := 0
	for _, v := range dead {
		if v > 1 {
			d.fail("a dead flag %d", v)
			return nil
		}
		live += int(1 - v)
	}
	c.dead.base = unsafe.Slice((*bool)(unsafe.Pointer(unsafe.SliceData(dead))), len(dead))
	for id := range uint32(nTerms) {
		if n, blocks := len(c.img.list(id)), len(c.img.blockList(id)); blocks != (n+blockSize-1)/blockSize {
			d.fail("term %d: %d blocks for %d postings", id, blocks, n)
			return nil
		}
	}
	for _, p := range c.img.postings {
		if int(p.slot) >= nSlots {
			d.fail("a posting of slot %d of %d", p.slot, nSlots)
			return nil
		}
	}
	c.live, c.nDead, c.totalLen = int(k.live), int(k.nDead), int64(k.totalLen)
	if c.live != live || c.live+c.nDead != nSlots {
		d.fail("%d live and %d dead documents in %d slots", c.live, c.nDead, nSlots)
		return nil
	}
	return c
}

var le = binary.LittleEndian

// littleEndian: the image's arrays are this machine's own layout, and
// readArray can use them in place.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// arrayAlign is the alignment of every array in the body, relative to its
// start: enough for the widest element (int64). infra/snapshot starts the
// body 64-byte aligned in its file, so a mapped body's arrays are aligned
// in memory.
const arrayAlign = 8

// The elements' little-endian codings, for a big-endian machine (and a
// misaligned body).
func putByte(b []byte, v byte) []byte  { return append(b, v) }
func putU32(b []byte, v uint32) []byte { return le.AppendUint32(b, v) }
func putI32(b []byte, v int32) []byte  { return le.AppendUint32(b, uint32(v)) }
func putI64(b []byte, v int64) []byte  { return le.AppendUint64(b, uint64(v)) }
func putPosting(b []byte, p posting) []byte {
	return le.AppendUint16(le.AppendUint16(le.AppendUint32(b, p.slot), p.tf), p.length)
}
func putBlock(b []byte, bl block) []byte {
	return le.AppendUint32(le.AppendUint32(le.AppendUint32(b, bl.last), bl.maxTF), bl.minLen)
}
func getByte(b []byte) byte  { return b[0] }
func getU32(b []byte) uint32 { return le.Uint32(b) }
func getI32(b []byte) int32  { return int32(le.Uint32(b)) }
func getI64(b []byte) int64  { return int64(le.Uint64(b)) }
func getPosting(b []byte) posting {
	return posting{slot: le.Uint32(b), tf: le.Uint16(b[4:]), length: le.Uint16(b[6:])}
}
func getBlock(b []byte) block {
	return block{last: le.Uint32(b), maxTF: le.Uint32(b[4:]), minLen: le.Uint32(b[8:])}
}

// writeArray writes s's elements little-endian, 8-byte aligned.
func writeArray[T any](e *encoder, s []T, put func([]byte, T) []byte) {
	e.align()
	writeElems(e, s, put)
}

// writeElems writes s's elements where the encoder is: on a
// little-endian machine, s's memory as it is.
func writeElems[T any](e *encoder, s []T, put func([]byte, T) []byte) {
	if len(s) == 0 {
		return
	}
	if littleEndian {
		e.raw(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0]))))
		return
	}
	for _, v := range s {
		e.b = put(e.b, v)
		e.flushIfFull()
	}
}

// readArray returns the next n elements, aligned: data itself when it is
// aligned in memory on a little-endian machine (a mapped body is), else a
// decoded copy.
func readArray[T any](d *decoder, n int, get func([]byte) T) []T {
	d.align()
	var zero T
	size := int(unsafe.Sizeof(zero))
	b := d.next(uint64(n) * uint64(size))
	if b == nil || n == 0 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if littleEndian && uintptr(p)%unsafe.Alignof(zero) == 0 {
		return unsafe.Slice((*T)(p), n)
	}
	out := make([]T, n)
	for i := range out {
		out[i] = get(b[i*size:])
	}
	return out
}

// encoder streams little-endian fields to w: small ones through a buffer
// of at most encoderBuffer bytes, larger byte runs (on a little-endian
// machine every array, as it lies in memory) straight to w, so an image is
// never held whole. A collection of 100,000 documents has an image of
// ~30 MB; building it in one growing buffer cost a copy of every byte per
// doubling and as much heap as the image, at every image a running
// server saves. written counts what went to w, so arrays are aligned
// relative to the body's start; the first error of w sticks (err) and
// nothing more is written.
type encoder struct {
	w       io.Writer
	b       []byte
	written int
	err     error
}

// encoderBuffer is what the encoder holds before writing it out (its
// buffer's capacity is twice that, so that it never grows).
const encoderBuffer = 64 << 10

func (e *encoder) flush() {
	if len(e.b) == 0 {
		return
	}
	e.write(e.b)
	e.b = e.b[:0]
}

func (e *encoder) flushIfFull() {
	if len(e.b) >= encoderBuffer {
		e.flush()
	}
}

func (e *encoder) write(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
	e.written += len(p)
}

// raw writes p as it is: through the buffer when it is small, else
// directly after what the buffer holds.
func (e *encoder) raw(p []byte) {
	if len(p) < encoderBuffer {
		e.b = append(e.b, p...)
		e.flushIfFull()
		return
	}
	e.flush()
	e.write(p)
}

func (e *encoder) u32(v uint32) { e.b = le.AppendUint32(e.b, v); e.flushIfFull() }
func (e *encoder) u64(v uint64) { e.b = le.AppendUint64(e.b, v); e.flushIfFull() }
func (e *encoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.rawString(s)
}

func (e *encoder) rawString(s string) { e.raw(unsafe.Slice(unsafe.StringData(s), len(s))) }
func (e *encoder) strs(ss []string) {
	e.u32(uint32(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}
func (e *encoder) align() {
	for (e.written+len(e.b))%arrayAlign != 0 {
		e.b = append(e.b, 0)
	}
}

// decoder reads what encoder wrote; the first error sticks and every
// later read returns zero.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: "+format, append([]any{errImage, d.off}, args...)...)
	}
}

func (d *decoder) next(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail("truncated")
		return nil
	}
	b := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return b
}

func (d *decoder) align() {
	if pad := (arrayAlign - d.off%arrayAlign) % arrayAlign; pad > 0 {
		d.next(uint64(pad))
	}
}

func (d *decoder) u32() uint32 {
	if b := d.next(4); b != nil {
		return le.Uint32(b)
	}
	return 0
}
func (d *decoder) u64() uint64 {
	if b := d.next(8); b != nil {
		return le.Uint64(b)
	}
	return 0
}

// count reads a length of items of at least minSize bytes each, refusing
// one the rest of the image cannot hold (so a bad length never allocates).
func (d *decoder) count(n uint32, minSize int) int {
	if d.err == nil && uint64(n)*uint64(minSize) > uint64(len(d.b)-d.off) {
		d.fail("%d items in %d bytes", n, len(d.b)-d.off)
		return 0
	}
	return int(n)
}

// offsets reads the n+1 offsets cutting an array of total elements into
// n lists: from 0, never decreasing, to total.
func (d *decoder) offsets(n int, total uint32) []uint32 {
	off := readArray(d, n+1, getU32)
	if d.err != nil {
		return nil
	}
	if off[0] != 0 || off[n] != total {
		d.fail("offsets from %d to %d, want 0 to %d", off[0], off[n], total)
		return nil
	}
	for i := range n {
		if off[i+1] < off[i] {
			d.fail("offset %d decreases", i+1)
			return nil
		}
	}
	return off
}

// ids reads n ids, each below limit (what names them).
func (d *decoder) ids(n, limit int, what string) []uint32 {
	ids := readArray(d, n, getU32)
	for _, id := range ids {
		if int(id) >= limit {
			d.fail("a %s %d of %d", what, id, limit)
			return nil
		}
	}
	return ids
}

func (d *decoder) str() string { return string(d.strBytes()) }

// strBytes is str's bytes, in the image.
func (d *decoder) strBytes() []byte {
	if d.err != nil {
		return nil
	}
	n, k := binary.Uvarint(d.b[d.off:])
	if k <= 0 || n > math.MaxInt32 {
		d.fail("bad string length")
		return nil
	}
	d.off += k
	return d.next(n)
}

func (d *decoder) strs() []string {
	n := d.count(d.u32(), 1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}
