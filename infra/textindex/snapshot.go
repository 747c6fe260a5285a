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

	"github.com/engram-memory/engram/domain"
)

// SnapshotVersion is the format version of the image WriteSnapshot
// writes; ReadSnapshot reads this version only.
const SnapshotVersion = 1

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
	var e encoder
	e.u32(p.ix.metaUnits)
	e.u32(uint32(len(images)))
	for _, img := range images {
		e.str(img.name)
		img.captured.encode(&e)
		if _, err := w.Write(e.take()); err != nil {
			return err
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
	_, err := w.Write(e.take())
	return err
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
// data, with opts and saturation as NewPort takes them. It keeps no
// reference into data, which may be unmapped once it returns. An image
// written with another metadata weight is refused: its term frequencies
// would not be the ones opts give.
func ReadSnapshot(data []byte, opts Options, saturation float64) (*Port, error) {
	p := NewPort(opts, saturation)
	d := decoder{b: data}
	if units := d.u32(); d.err == nil && units != p.ix.metaUnits {
		return nil, fmt.Errorf("%w: metadata weight %d/%d, configured %d/%d", errImage, units, fieldScale, p.ix.metaUnits, fieldScale)
	}
	n := d.count(1)
	for range n {
		name := d.str()
		c := decodeCollection(&d, p.ix.metaUnits)
		if d.err != nil {
			break
		}
		p.ix.cols[name] = c
	}
	scopes := d.count(2)
	for range scopes {
		scope := domain.IndexScope{UserID: d.str(), AgentID: d.str()}
		for _, id := range d.strs() {
			p.forgotten.Mark(scope, id, true)
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d bytes after the image", errImage, len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return p, nil
}

// capture returns what encode reads of c (read-locked, with no port
// write running), and marks c imaged and lent until release. The arrays
// writes change in place whatever the image holds (the document
// frequencies, the outer postings and blocks, the blocks' last entries,
// bigTF) are copied: proportional to the terms, not the documents. The
// rest are slice headers cut to their current lengths: writes append past
// them, and copy before they change them in place (see collection.lent).
func (c *collection) capture() *collection {
	totalBlocks := 0
	for id := range c.blocks {
		totalBlocks += len(c.blocks[id])
	}
	blocks := make([]block, 0, totalBlocks)
	n, terms := len(c.ids), len(c.terms)
	d := &collection{
		metaUnits: c.metaUnits, terms: c.terms[:terms:terms],
		postings: make([][]posting, terms), blocks: make([][]block, terms), df: slices.Clone(c.df),
		ids: c.ids[:n:n], dead: c.dead[:n:n], length: c.length[:n:n], created: c.created[:n:n],
		types: c.types[:n:n], tags: c.tags[:n:n], docTerms: c.docTerms[:n:n], bigTF: maps.Clone(c.bigTF),
		live: c.live, nDead: c.nDead, totalLen: c.totalLen,
	}
	for id, list := range c.postings {
		d.postings[id] = list[:len(list):len(list)]
		start := len(blocks)
		blocks = append(blocks, c.blocks[id]...)
		d.blocks[id] = blocks[start:len(blocks):len(blocks)]
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

// encode appends the image of the collection to e.
func (c *collection) encode(e *encoder) {
	e.u32(uint32(len(c.terms)))
	for id, term := range c.terms {
		e.str(term)
		e.u32(uint32(c.df[id]))
		list := c.postings[id]
		e.u32(uint32(len(list)))
		for _, p := range list {
			e.u32(p.slot)
			e.u16(p.tf)
			e.u16(p.length)
		}
		blocks := c.blocks[id]
		e.u32(uint32(len(blocks)))
		for _, bl := range blocks {
			e.u32(bl.last)
			e.u32(bl.maxTF)
			e.u32(bl.minLen)
		}
	}
	e.u32(uint32(len(c.ids)))
	for slot, id := range c.ids {
		e.str(id)
		e.bool(c.dead[slot])
		e.u32(c.length[slot])
		e.u64(uint64(c.created[slot]))
		e.str(c.types[slot])
		e.strs(c.tags[slot])
		e.u32(uint32(len(c.docTerms[slot])))
		for _, t := range c.docTerms[slot] {
			e.u32(t)
		}
	}
	e.u32(uint32(len(c.bigTF)))
	for key, tf := range c.bigTF {
		e.u64(key)
		e.u32(tf)
	}
	e.u64(uint64(c.live))
	e.u64(uint64(c.nDead))
	e.u64(uint64(c.totalLen))
}

// decodeCollection reads a collection encode wrote, checking that every
// slot and term it refers to exists, so a bad image fails here rather than
// in a search.
func decodeCollection(d *decoder, metaUnits uint32) *collection {
	nTerms := d.count(4)
	// Neither the term map nor the id map is built: lookups scan until
	// they pay for one (lazyIndex).
	c := &collection{metaUnits: metaUnits, bigTF: map[uint64]uint32{}}
	c.postings, c.blocks, c.df = make([][]posting, nTerms), make([][]block, nTerms), make([]int32, nTerms)
	for id := range nTerms {
		c.terms = append(c.terms, d.str())
		c.df[id] = int32(d.u32())
		// A list's fixed-size fields are read from one slice, checked
		// once, rather than field by field (the bulk of an image).
		n := d.count(8)
		list, raw := make([]posting, n), d.next(8*n)
		for i := range list {
			if raw != nil {
				at := raw[8*i:]
				list[i] = posting{slot: le.Uint32(at), tf: le.Uint16(at[4:]), length: le.Uint16(at[6:])}
			}
		}
		c.postings[id] = list
		n = d.count(12)
		blocks, raw := make([]block, n), d.next(12*n)
		for i := range blocks {
			if raw != nil {
				at := raw[12*i:]
				blocks[i] = block{last: le.Uint32(at), maxTF: le.Uint32(at[4:]), minLen: le.Uint32(at[8:])}
			}
		}
		c.blocks[id] = blocks
		if d.err != nil {
			return nil
		}
	}
	nSlots := d.count(4)
	c.ids, c.dead, c.length = make([]string, nSlots), make([]bool, nSlots), make([]uint32, nSlots)
	c.created, c.types, c.tags, c.docTerms = make([]int64, nSlots), make([]string, nSlots), make([][]string, nSlots), make([][]uint32, nSlots)
	types := map[string]string{} // a handful of types: one string each
	live := 0
	for slot := range nSlots {
		c.ids[slot], c.dead[slot], c.length[slot], c.created[slot] = d.str(), d.bool(), d.u32(), int64(d.u64())
		raw := d.strBytes()
		t, ok := types[string(raw)] // no copy made to look it up
		if !ok {
			t = string(raw)
			types[t] = t
		}
		c.types[slot], c.tags[slot] = t, d.strs()
		if n := d.count(4); n > 0 {
			terms, raw := make([]uint32, n), d.next(4*n)
			for i := range terms {
				if raw == nil {
					break
				}
				if terms[i] = le.Uint32(raw[4*i:]); int(terms[i]) >= nTerms {
					d.fail("a document's term %d of %d", terms[i], nTerms)
				}
			}
			c.docTerms[slot] = terms
		}
		if d.err != nil {
			return nil
		}
		if !c.dead[slot] {
			live++
		}
	}
	for _, list := range c.postings {
		for _, p := range list {
			if int(p.slot) >= nSlots {
				d.fail("a posting of slot %d of %d", p.slot, nSlots)
				return nil
			}
		}
	}
	for range d.count(12) {
		key, tf := d.u64(), d.u32()
		c.bigTF[key] = tf
	}
	c.live, c.nDead, c.totalLen = int(d.u64()), int(d.u64()), int64(d.u64())
	if d.err == nil && (c.live != live || c.live+c.nDead != nSlots) {
		d.fail("%d live and %d dead documents in %d slots", c.live, c.nDead, nSlots)
	}
	return c
}

var le = binary.LittleEndian

// encoder appends little-endian fields to a buffer.
type encoder struct{ b []byte }

func (e *encoder) take() []byte {
	b := e.b
	e.b = e.b[:0:0]
	return b
}
func (e *encoder) u16(v uint16) { e.b = binary.LittleEndian.AppendUint16(e.b, v) }
func (e *encoder) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}
func (e *encoder) strs(ss []string) {
	e.u32(uint32(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}
func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// decoder reads what encoder wrote; the first error sticks and every
// later read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{errImage}, args...)...)
	}
}

func (d *decoder) next(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail("truncated")
		return nil
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

func (d *decoder) u16() uint16 {
	if b := d.next(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}
func (d *decoder) u32() uint32 {
	if b := d.next(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}
func (d *decoder) u64() uint64 {
	if b := d.next(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}
func (d *decoder) bool() bool {
	b := d.next(1)
	return b != nil && b[0] != 0
}

// count reads a length of items of at least minSize bytes each, refusing
// one the rest of the image cannot hold (so a bad length never allocates).
func (d *decoder) count(minSize int) int {
	n := d.u32()
	if d.err == nil && uint64(n)*uint64(minSize) > uint64(len(d.b)) {
		d.fail("%d items in %d bytes", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) str() string { return string(d.strBytes()) }

// strBytes is str's bytes, in the image.
func (d *decoder) strBytes() []byte {
	if d.err != nil {
		return nil
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > math.MaxInt32 {
		d.fail("bad string length")
		return nil
	}
	d.b = d.b[k:]
	return d.next(int(n))
}

func (d *decoder) strs() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}
