package vectorindex

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"unsafe"

	"github.com/engram-memory/engram/domain"
)

// Snapshots: a Port's whole state as bytes (WriteSnapshot), and a Port
// built back from them (ReadSnapshot, snapshot_read.go) that answers every
// query exactly as the original and goes on accepting writes exactly as it
// would. The layout is in the package documentation (doc.go).
//
// Consistency without blocking writers. WriteSnapshot takes its image in
// two steps:
//
//  1. Under Port.writes (which every port write read-locks for its whole
//     length, so no write is half done) and each collection's read lock in
//     turn, it copies slice headers, the published graph's pointer, the
//     interned names' headers and the forgotten sets (small), marks each
//     collection lent and takes a reference on its float file. Nothing of
//     size proportional to the vectors is copied: writers wait for a few
//     pointer copies per collection.
//  2. Without any lock it encodes what it captured. This stays valid while
//     writers go on: a published graph is never mutated (the indexer works
//     on a copy); a stable collection's vectors, codes and scales only grow
//     past the captured lengths, or are replaced by compaction; the ID
//     bytes, tag arena and names are append-only or replaced; and the first
//     write to a lent collection copies the arrays it would change in place
//     (collection.ownArrays) before changing them. A float file closed
//     meanwhile (compaction, drop) stays open until the image releases it.
//
// So the image is the state between two port writes. Only one snapshot is
// written at a time (Index.snapshotMu), because a collection's lent flag
// belongs to the one image in flight.

// SnapshotVersion is the body layout's version, the body's first word.
// ReadSnapshot accepts this version and 1; a caller that finds another
// refills the index instead.
// Version 2 added each collection's live slots in ID order; ReadSnapshot
// still reads version 1, rebuilding the slot tables.
const SnapshotVersion = 2

// Collection flags in a snapshot.
const (
	snapStable    = 1 << iota // tombstone deletes, a graph follows
	snapQuantized             // int8 codes and scales, floats apart
	snapCaughtUp              // the graph has covered every slot once
)

// collectionImage is what step 1 captures of one collection.
type collectionImage struct {
	c *collection

	name                                  string
	dim                                   int
	stable, caughtUp                      bool
	graphBase, nDead, idGarbage, tagGarbg int
	typeNames, tagNames                   []string

	idBytes  slotArray[byte]
	idOff    []uint32
	created  []int64
	types    []uint16
	tagOff   []uint32
	tagN     []uint8
	tagArena []uint32
	dead     []uint64
	tagSlots [][]uint32 // a copy of the outer slice: post appends in place

	vecs   slotArray[float32]
	codes  slotArray[int8]
	scales slotArray[float32]
	floats *floatFile // acquired; released by Index.releaseImage
	graph  *graph
}

// capture takes c's image (caller holds c's read lock and Index.snapshotMu).
func (c *collection) capture() collectionImage {
	n := c.ids.len()
	img := collectionImage{
		c: c, name: c.name, dim: c.dim, stable: c.stable, caughtUp: c.caughtUp,
		graphBase: c.graphBase, nDead: c.nDead, idGarbage: c.ids.garbage, tagGarbg: c.tagGarbage,
		typeNames: c.typeNames.names[:c.typeNames.len():c.typeNames.len()],
		tagNames:  c.tagNames.names[:c.tagNames.len():c.tagNames.len()],
		idBytes:   c.ids.bytes.prefix(c.ids.bytes.len()),
		idOff:     c.ids.off[:n:n],
		created:   c.created[:n:n],
		types:     c.types[:n:n],
		tagOff:    c.tagOff[:n:n],
		tagN:      c.tagN[:n:n],
		tagArena:  c.tagArena[:len(c.tagArena):len(c.tagArena)],
		dead:      c.dead[:len(c.dead):len(c.dead)],
		tagSlots:  slices.Clone(c.tagSlots),
		graph:     c.graph,
	}
	if c.quantized() {
		img.codes, img.scales, img.floats = c.codes.prefix(n*c.dim), c.scales.prefix(n), c.floats
		c.floats.acquire()
	} else {
		img.vecs = c.vecs.prefix(n * c.dim)
	}
	c.lent.Store(true)
	return img
}

// image captures every live collection, sorted by name (step 1; the caller
// holds Port.writes and snapshotMu).
func (ix *Index) image() []collectionImage {
	ix.mu.RLock()
	cols := make([]*collection, 0, len(ix.cols))
	for _, c := range ix.cols {
		cols = append(cols, c)
	}
	ix.mu.RUnlock()
	slices.SortFunc(cols, func(a, b *collection) int { return cmp.Compare(a.name, b.name) })
	imgs := make([]collectionImage, 0, len(cols))
	for _, c := range cols {
		c.mu.RLock()
		if !c.dropped {
			imgs = append(imgs, c.capture())
		}
		c.mu.RUnlock()
	}
	return imgs
}

// releaseImage ends step 2: writers need no longer copy, float files may
// close.
func releaseImage(imgs []collectionImage) {
	for _, img := range imgs {
		img.c.lent.Store(false)
		if img.floats != nil {
			img.floats.release()
		}
	}
}

// WriteSnapshot writes the port's image to w (see the consistency argument
// above). Writes wait only while the image is captured; searches never.
// A write that the graph build's tail bound (Options.MaxTail) holds back
// holds the capture with it, and the writes queued behind the capture
// until then. The first write to each collection after the capture copies
// its per-slot metadata (19 bytes a slot; the vectors too in a flat
// collection).
func (p *Port) WriteSnapshot(w io.Writer) error {
	p.ix.snapshotMu.Lock()
	defer p.ix.snapshotMu.Unlock()
	p.writes.Lock()
	hidden := p.forgotten.All()
	imgs := p.ix.image()
	p.writes.Unlock()
	defer releaseImage(imgs)

	e := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	e.u32(SnapshotVersion)
	scopes := make([]domain.IndexScope, 0, len(hidden))
	for s := range hidden {
		scopes = append(scopes, s)
	}
	slices.SortFunc(scopes, func(a, b domain.IndexScope) int {
		return cmp.Or(cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.AgentID, b.AgentID))
	})
	e.u32(uint32(len(scopes)))
	for _, s := range scopes {
		e.str(s.UserID)
		e.str(s.AgentID)
		e.strs(hidden[s])
	}
	e.u32(uint32(len(imgs)))
	for i := range imgs {
		if err := e.collection(&imgs[i]); err != nil {
			return err
		}
	}
	if e.err != nil {
		return fmt.Errorf("vectorindex: write snapshot: %w", e.err)
	}
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("vectorindex: write snapshot: %w", err)
	}
	return nil
}

// encoder writes the little-endian layout, tracking the offset so that
// arrays start 8-byte aligned (ReadSnapshot can then use them in place).
type encoder struct {
	w   *bufio.Writer
	off int64
	err error
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(b)
	e.off += int64(n)
	e.err = err
}

func (e *encoder) u32(v uint32) { e.bytes(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *encoder) u64(v uint64) { e.bytes(binary.LittleEndian.AppendUint64(nil, v)) }

func (e *encoder) str(s string) {
	e.u32(uint32(len(s)))
	e.bytes([]byte(s))
}

func (e *encoder) strs(ss []string) {
	e.u32(uint32(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func (e *encoder) align() {
	if pad := (arrayAlign - e.off%arrayAlign) % arrayAlign; pad > 0 {
		e.bytes(make([]byte, pad))
	}
}

// arrayAlign is the alignment of every array in the body, relative to its
// start: enough for the widest element (uint64, int64).
const arrayAlign = 8

// writeArray writes s's elements little-endian, aligned. On a
// little-endian machine that is s's memory as it is.
func writeArray[T fixedSize](e *encoder, s []T) {
	e.align()
	writeElems(e, s)
}

// writeSlots writes a's segments as one array.
func writeSlots[T fixedSize](e *encoder, a slotArray[T]) {
	e.align()
	writeElems(e, a.base)
	writeElems(e, a.tail)
}

// writeElems writes s's elements little-endian, where the encoder is.
func writeElems[T fixedSize](e *encoder, s []T) {
	if len(s) == 0 {
		return
	}
	if littleEndian {
		e.bytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0]))))
		return
	}
	const chunk = 1 << 14
	for lo := 0; lo < len(s); lo += chunk {
		b, err := binary.Append(nil, binary.LittleEndian, s[lo:min(len(s), lo+chunk)])
		if err != nil {
			e.err = err
			return
		}
		e.bytes(b)
	}
}

type fixedSize interface {
	~uint8 | ~int8 | ~uint16 | ~uint32 | ~uint64 | ~int64 | ~float32
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// liveInIDOrder is the live slots of ids sorted by ID: a collection read
// from the image finds an ID's slot by binary search in them until its
// first write, instead of building its slot table at the read.
func liveInIDOrder(ids idArena) []uint32 {
	order := make([]uint32, 0, ids.len())
	for s, off := range ids.off {
		if off != noID {
			order = append(order, uint32(s))
		}
	}
	slices.SortFunc(order, func(a, b uint32) int { return bytes.Compare(ids.at(a), ids.at(b)) })
	return order
}

func (e *encoder) collection(img *collectionImage) error {
	slots := len(img.idOff)
	e.str(img.name)
	e.u32(uint32(img.dim))
	var flags uint32
	if img.stable {
		flags |= snapStable
	}
	if img.floats != nil {
		flags |= snapQuantized
	}
	if img.caughtUp {
		flags |= snapCaughtUp
	}
	e.u32(flags)
	for _, v := range []int{slots, img.graphBase, img.nDead, img.idGarbage, img.tagGarbg, img.idBytes.len(), len(img.tagArena)} {
		e.u64(uint64(v))
	}
	e.strs(img.typeNames)
	e.strs(img.tagNames)
	writeSlots(e, img.idBytes)
	writeArray(e, img.idOff)
	writeArray(e, img.created)
	writeArray(e, img.types)
	writeArray(e, img.tagOff)
	writeArray(e, img.tagN)
	writeArray(e, img.tagArena)
	writeArray(e, liveInIDOrder(idArena{bytes: img.idBytes, off: img.idOff}))
	if img.stable {
		writeArray(e, img.dead)
		e.u32(uint32(len(img.tagSlots)))
		for _, l := range img.tagSlots {
			e.u64(uint64(len(l)))
			writeArray(e, l)
		}
	}
	if img.floats != nil {
		writeSlots(e, img.codes)
		writeSlots(e, img.scales)
		if err := e.floatFile(img.floats, slots); err != nil {
			return err
		}
	} else {
		writeSlots(e, img.vecs)
	}
	if img.stable {
		e.graph(img.graph)
	}
	return nil
}

// floatFile copies a quantised collection's full-precision vectors: the
// file holds them little-endian already, as the body does.
func (e *encoder) floatFile(ff *floatFile, slots int) error {
	e.align()
	total := int64(slots) * ff.slotBytes()
	inMap := min(total, int64(len(ff.mapped)))
	e.bytes(ff.mapped[:inMap])
	if e.err != nil || inMap == total {
		return nil
	}
	n, err := io.Copy(e.w, io.NewSectionReader(ff.f, 0, total-inMap))
	e.off += n
	if err == nil && n != total-inMap {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("vectorindex: read float file: %w", err)
	}
	return nil
}

func (e *encoder) graph(g *graph) {
	e.u32(uint32(g.m))
	e.u32(uint32(g.m0))
	e.u32(uint32(g.efC))
	e.u32(g.entry)
	e.u32(uint32(int32(g.maxLevel)))
	e.u64(uint64(g.n))
	e.u64(uint64(len(g.upper)))
	rng, err := g.pcg.MarshalBinary()
	if err != nil { // cannot happen: a PCG always marshals
		e.err = err
		return
	}
	e.bytes(binary.LittleEndian.AppendUint32(nil, uint32(len(rng))))
	e.bytes(rng)
	writeArray(e, g.levels[:g.n])
	writeArray(e, g.upperOff[:g.n])
	writeArray(e, g.upper)
	writeArray(e, g.links0[:g.n*g.m0])
}
