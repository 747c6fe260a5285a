package textindex

import (
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/engram-memory/engram/domain"
)

// fieldScale is how many units one occurrence of a term in the text field
// counts. Term frequencies are field-weighted sums (BM25F): an occurrence
// in the metadata field counts metaUnits units. Document lengths count the
// text field only.
const fieldScale = 4

// posting is one document's field-weighted count of a term (in units of
// 1/fieldScale), with the document's length
// so that scoring a posting reads nothing else (the walk of a common
// word's list is bound by memory access, not arithmetic). Both counts
// saturate at maxPacked; a saturated posting is scored from the
// document's own records (exactCounts), so scores stay exact.
type posting struct {
	slot   uint32
	tf     uint16
	length uint16
}

const maxPacked = math.MaxUint16

func newPosting(slot, tf, length uint32) posting {
	return posting{slot: slot, tf: uint16(min(tf, maxPacked)), length: uint16(min(length, maxPacked))}
}

// saturated reports whether p's counts must be read from the document.
func (p posting) saturated() bool { return p.tf == maxPacked || p.length == maxPacked }

// exactCounts returns the term frequency and document length of a
// saturated posting of term.
func (c *collection) exactCounts(p posting, term uint32) (tf, length uint32) {
	tf = uint32(p.tf)
	if p.tf == maxPacked {
		tf = c.bigTF[slotTerm(p.slot, term)]
	}
	return tf, c.length.at(p.slot)
}

// slotTerm keys bigTF.
func slotTerm(slot, term uint32) uint64 { return uint64(slot)<<32 | uint64(term) }

// collection is one agent's index. Documents live in slots; a delete or a
// replace marks the slot dead (postings keep pointing at it and are
// skipped) and compaction reclaims dead slots once they are a quarter of
// the total. Statistics (live count, total length, document frequencies)
// always count live documents only, so scores do not depend on history.
//
// A collection restored from an image reads the image's arrays in place
// (columns.go): its terms, posting lists and blocks (termImage), and its
// per-slot arrays as the bases of its columns. What writes add goes to
// the heap past them.
type collection struct {
	mu sync.RWMutex

	metaUnits uint32 // weight of the metadata field, in units of 1/fieldScale

	// Term ids below img.len() are the image's: their postings and blocks
	// are the image's, and the postings written since go to a second
	// segment on the heap, tailLists, with its own blocks, tailBlocks
	// (segments), until the two are joined there (joined). Terms added
	// since take the next ids: newTerms, newIDs (their ids) and newLists,
	// newBlocks (by id - img.len()).
	img        termImage
	tailLists  map[uint32][]posting
	tailBlocks map[uint32][]block
	joined     map[uint32]struct{}
	newTerms   []string
	newIDs     map[string]uint32
	newLists   [][]posting
	newBlocks  [][]block
	df         termCounts // live documents holding the term

	ids       strColumn
	dead      column[bool]
	length    column[uint32] // terms in the document's text, in units
	created   column[int64]  // unix nanos
	types     column[uint32] // in typeNames
	typeNames []string
	tags      tagColumn
	// docTerms are a document's distinct term ids, kept so a delete can
	// give back its document frequencies. The term frequencies are in the
	// postings; those past a posting's 16 bits are in bigTF (by
	// slotTerm), which is almost always empty.
	docTerms listColumn[uint32]
	bigTF    map[uint64]uint32
	// slotOf maps a live document's id to its slot, for the slots past
	// the image's; idOrder is the image's slots sorted by id (then slot),
	// which slotOfID searches for the others.
	slotOf  map[string]uint32
	idOrder []uint32

	live     int
	nDead    int
	totalLen int64

	// An image being encoded (snapshot.go) reads this collection's arrays
	// without its lock. imaged is set while it does: compaction, which
	// rewrites every array in place, waits until it is done. lent is set
	// with it and cleared by the first write that changes a slot in place
	// (a delete or replace), which copies the slot arrays it changes
	// first (ownSlots). Every other write appends past what the image
	// holds, or changes arrays the image copied.
	imaged, lent atomic.Bool
}

// termImage is the terms of a collection restored from an image, read in
// place: the terms (a table, and their ids in term order for a binary
// search), and by term id the posting lists and blocks, each one array
// cut at offsets.
type termImage struct {
	terms    strTable
	order    []uint32
	postOff  []uint32
	postings []posting
	blockOff []uint32
	blocks   []block
}

func (t *termImage) len() int { return t.terms.len() }

func (t *termImage) list(id uint32) []posting {
	lo, hi := t.postOff[id], t.postOff[id+1]
	return t.postings[lo:hi:hi]
}

func (t *termImage) blockList(id uint32) []block {
	lo, hi := t.blockOff[id], t.blockOff[id+1]
	return t.blocks[lo:hi:hi]
}

// find returns the id of term, by binary search in term order.
func (t *termImage) find(term string) (uint32, bool) {
	i, found := slices.BinarySearchFunc(t.order, term, func(id uint32, term string) int {
		return strings.Compare(t.terms.at(id), term)
	})
	if !found {
		return 0, false
	}
	return t.order[i], true
}

func newCollection(metaUnits uint32) *collection {
	return &collection{metaUnits: metaUnits, bigTF: map[uint64]uint32{}, newIDs: map[string]uint32{}, slotOf: map[string]uint32{}}
}

func (c *collection) termCount() int { return c.img.len() + len(c.newTerms) }

func (c *collection) term(id uint32) string {
	if n := c.img.len(); int(id) >= n {
		return c.newTerms[int(id)-n]
	}
	return c.img.terms.at(id)
}

// segment is a run of a term's postings in slot order, with its blocks
// (one per blockSize postings, counted from the segment's start).
type segment struct {
	postings []posting
	blocks   []block
}

// segments is term id's posting list, in slot order, as two segments:
// the image's list, read in place, then the postings written since, on
// the heap (every one of a term added since, or of a term joined). A
// write appends to the heap's segment and does not copy the image's, so
// the first writes to a term held by every document of an image cost
// their own postings, not the list's; a posting in the heap's segment is
// of a slot past every one in the image's, so each document is in one
// segment at most.
func (c *collection) segments(id uint32) (image, heap segment) {
	if n := c.img.len(); int(id) >= n {
		return segment{}, segment{c.newLists[int(id)-n], c.newBlocks[int(id)-n]}
	}
	if _, ok := c.joined[id]; ok {
		return segment{}, segment{c.tailLists[id], c.tailBlocks[id]}
	}
	return segment{c.img.list(id), c.img.blockList(id)}, segment{c.tailLists[id], c.tailBlocks[id]}
}

// postingCount is the length of term id's posting list.
func (c *collection) postingCount(id uint32) int {
	image, heap := c.segments(id)
	return len(image.postings) + len(heap.postings)
}

// appendPosting adds p to term id's list, in its heap segment, and
// returns that segment's length.
func (c *collection) appendPosting(id uint32, p posting) int {
	if n := c.img.len(); int(id) >= n {
		c.newLists[int(id)-n] = append(c.newLists[int(id)-n], p)
		return len(c.newLists[int(id)-n])
	}
	if len(c.tailLists[id]) >= blockSize {
		c.join(id)
	}
	list := append(c.tailLists[id], p)
	c.tailLists[id] = list
	return len(list)
}

// join makes term id's two segments one list on the heap, once the
// postings written since fill a block: every search walks a second
// segment as one more list, and bounds it apart in a pruned walk, which
// measured about a third slower with a tenth of the documents written
// past the image. So a term copies its image's list once, when it has
// taken a block of writes, and a process that writes little (a local
// search catching up a few captures) copies none.
func (c *collection) join(id uint32) {
	image, heap := c.segments(id)
	if len(image.postings) == 0 {
		return
	}
	list := slices.Concat(image.postings, heap.postings)
	c.tailLists[id], c.tailBlocks[id] = list, c.blocksOf(id, list)
	c.joined[id] = struct{}{}
}

// heapBlocks is the blocks of term id's heap segment, which writes change
// in place.
func (c *collection) heapBlocks(id uint32) []block {
	if n := c.img.len(); int(id) >= n {
		return c.newBlocks[int(id)-n]
	}
	return c.tailBlocks[id]
}

func (c *collection) setBlocks(id uint32, blocks []block) {
	if n := c.img.len(); int(id) >= n {
		c.newBlocks[int(id)-n] = blocks
		return
	}
	c.tailBlocks[id] = blocks
}

// blocksOf computes the blocks of list, term id's postings: what
// extendBlocks records as they are appended. A list joined from two
// segments needs them computed anew (join, an image, a compaction).
func (c *collection) blocksOf(id uint32, list []posting) []block {
	blocks := make([]block, 0, (len(list)+blockSize-1)/blockSize)
	for i, p := range list {
		tf, length := uint32(p.tf), uint32(p.length)
		if p.saturated() {
			tf, length = c.exactCounts(p, id)
		}
		if i%blockSize == 0 {
			blocks = append(blocks, block{last: p.slot, maxTF: tf, minLen: length})
			continue
		}
		bl := &blocks[len(blocks)-1]
		bl.last, bl.maxTF, bl.minLen = p.slot, max(bl.maxTF, tf), min(bl.minLen, length)
	}
	return blocks
}

func (c *collection) add(d Doc) {
	counts := map[string]uint32{}
	var order []string // first-occurrence order keeps term ids deterministic
	var n uint32
	field := func(text string, units uint32, length bool) {
		if units == 0 {
			return
		}
		tokenize(text, func(term string) {
			if counts[term] == 0 {
				order = append(order, term)
			}
			counts[term] += units
			if length {
				n += units
			}
		})
	}
	field(d.Text, fieldScale, true)
	field(d.Meta, c.metaUnits, false)
	slot := uint32(c.ids.len())
	terms := make([]uint32, 0, len(order))
	for _, term := range order {
		id, ok := c.termOf(term)
		if !ok {
			id = uint32(c.termCount())
			c.newIDs[term] = id
			c.newTerms = append(c.newTerms, term)
			c.newLists = append(c.newLists, nil)
			c.newBlocks = append(c.newBlocks, nil)
			c.df.push(0)
		}
		tf := counts[term]
		length := c.appendPosting(id, newPosting(slot, tf, n))
		c.extendBlocks(id, length-1, slot, tf, n)
		if tf >= maxPacked {
			c.bigTF[slotTerm(slot, id)] = tf
		}
		c.df.set(id, c.df.at(id)+1)
		terms = append(terms, id)
	}
	c.ids.tail = append(c.ids.tail, d.ID)
	c.dead.push(false)
	c.length.push(n)
	c.created.push(domain.ClampedUnixNano(d.CreatedAt))
	c.types.push(c.typeIndex(d.Type))
	c.tags.tail = append(c.tags.tail, append([]string(nil), d.Tags...))
	c.docTerms.tail = append(c.docTerms.tail, terms)
	c.slotOf[d.ID] = slot
	c.live++
	c.totalLen += int64(n)
}

// typeIndex is typ's place in typeNames, added if new (a collection holds
// a handful of types).
func (c *collection) typeIndex(typ string) uint32 {
	if i := slices.Index(c.typeNames, typ); i >= 0 {
		return uint32(i)
	}
	c.typeNames = append(c.typeNames, typ)
	return uint32(len(c.typeNames) - 1)
}

func (c *collection) typeOf(slot uint32) string { return c.typeNames[c.types.at(slot)] }

func (c *collection) remove(id string) {
	slot, ok := c.slotOfID(id)
	if !ok {
		return
	}
	delete(c.slotOf, id)
	c.ownSlots()
	for _, term := range c.docTerms.at(slot) {
		c.df.set(term, c.df.at(term)-1)
		if len(c.bigTF) > 0 {
			delete(c.bigTF, slotTerm(slot, term))
		}
	}
	c.totalLen -= int64(c.length.at(slot))
	c.live--
	c.nDead++
	c.dead.set(slot, true)
	c.docTerms.clear(slot)
	c.tags.clear(slot)
}

// slotOfID returns the slot of the live document id. Callers hold c.mu,
// read or write.
func (c *collection) slotOfID(id string) (uint32, bool) {
	if slot, ok := c.slotOf[id]; ok {
		return slot, true
	}
	// An image's document: its slots in id order hold id's dead slots
	// (replaced or deleted) and at most one live one.
	i, _ := slices.BinarySearchFunc(c.idOrder, id, func(slot uint32, id string) int {
		return strings.Compare(c.ids.at(slot), id)
	})
	for ; i < len(c.idOrder) && c.ids.at(c.idOrder[i]) == id; i++ {
		if slot := c.idOrder[i]; !c.dead.at(slot) {
			return slot, true
		}
	}
	return 0, false
}

// termOf returns the id of term. Callers hold c.mu, read or write.
func (c *collection) termOf(term string) (uint32, bool) {
	if id, ok := c.img.find(term); ok {
		return id, true
	}
	id, ok := c.newIDs[term]
	return id, ok
}

// ownSlots copies the slot arrays remove changes in place, when an image
// being encoded shares them (see lent).
func (c *collection) ownSlots() {
	if !c.lent.Load() {
		return
	}
	c.dead.lend()
	c.tags.tail, c.docTerms.tail = slices.Clone(c.tags.tail), slices.Clone(c.docTerms.tail)
	c.lent.Store(false)
}

// onHeap moves every array of the collection to the heap, the image's
// copied (a compaction rewrites them in place): its terms become terms
// added, each with its two segments joined, and its documents the tail's.
func (c *collection) onHeap() {
	if n := c.img.len(); n > 0 {
		terms := make([]string, n, n+len(c.newTerms))
		lists, blocks := make([][]posting, n, n+len(c.newLists)), make([][]block, n, n+len(c.newBlocks))
		for id := range uint32(n) {
			terms[id] = c.img.terms.at(id)
			c.newIDs[terms[id]] = id
			image, heap := c.segments(id)
			lists[id] = slices.Concat(image.postings, heap.postings)
			blocks[id] = c.blocksOf(id, lists[id])
		}
		c.newTerms, c.newLists, c.newBlocks = append(terms, c.newTerms...), append(lists, c.newLists...), append(blocks, c.newBlocks...)
		c.img, c.tailLists, c.tailBlocks, c.joined = termImage{}, nil, nil, nil
		c.df = termCounts{tail: c.df.heap()}
	}
	if len(c.idOrder) > 0 {
		for _, slot := range c.idOrder {
			if !c.dead.at(slot) {
				c.slotOf[c.ids.at(slot)] = slot
			}
		}
		c.idOrder = nil
	}
}

// compactIfSparse rebuilds the slots and postings without dead documents
// once they are a quarter of the slots (and at least a few hundred), and
// no image is being encoded from them (the next delete compacts then).
func (c *collection) compactIfSparse() {
	if c.nDead < 256 || c.nDead*4 < c.ids.len() || c.imaged.Load() {
		return
	}
	c.onHeap()
	ids, length, created := c.ids.heap(), c.length.heap(), c.created.heap()
	types, tags, docTerms := c.types.heap(), c.tags.heap(), c.docTerms.heap()
	wasDead := c.dead.heap()
	remap := make([]uint32, len(ids))
	next := 0
	for slot := range ids {
		if wasDead[slot] {
			continue
		}
		remap[slot] = uint32(next)
		ids[next], length[next], created[next] = ids[slot], length[slot], created[slot]
		types[next], tags[next], docTerms[next] = types[slot], tags[slot], docTerms[slot]
		c.slotOf[ids[next]] = uint32(next)
		next++
	}
	c.ids.tail, c.length.tail, c.created.tail = ids[:next], length[:next], created[:next]
	c.types.tail, c.tags.tail, c.docTerms.tail = types[:next], tags[:next], docTerms[:next]
	c.dead.tail = make([]bool, next)
	if len(c.bigTF) > 0 { // it holds live documents' counts only
		moved := make(map[uint64]uint32, len(c.bigTF))
		for key, tf := range c.bigTF {
			moved[slotTerm(remap[key>>32], uint32(key))] = tf
		}
		c.bigTF = moved
	}
	for id, list := range c.newLists {
		kept := list[:0]
		c.newBlocks[id] = c.newBlocks[id][:0]
		for _, p := range list {
			if !wasDead[p.slot] {
				p.slot = remap[p.slot]
				kept = append(kept, p)
				tf, length := uint32(p.tf), uint32(p.length)
				if p.saturated() {
					tf, length = c.exactCounts(p, uint32(id))
				}
				c.extendBlocks(uint32(id), len(kept)-1, p.slot, tf, length)
			}
		}
		c.newLists[id] = kept
	}
	c.nDead = 0
}

// blockSize is how many consecutive postings of a list share one block: a
// pruned search skips or bounds a block as a whole.
const blockSize = 128

// block summarises blockSize consecutive postings of a list: its last slot
// (to skip past it), and its largest term frequency and smallest document
// length, exact (not the saturating 16-bit counts), which bound the BM25
// weight of every posting in it whatever the collection's statistics are
// at search time. Deletes leave blocks as they are: dead postings only
// make a bound looser.
type block struct {
	last   uint32
	maxTF  uint32
	minLen uint32
}

// extendBlocks accounts for the posting at index i of term's list, just
// appended.
func (c *collection) extendBlocks(term uint32, i int, slot, tf, length uint32) {
	blocks := c.heapBlocks(term)
	if i%blockSize == 0 {
		c.setBlocks(term, append(blocks, block{last: slot, maxTF: tf, minLen: length}))
		return
	}
	bl := &blocks[len(blocks)-1]
	bl.last, bl.maxTF, bl.minLen = slot, max(bl.maxTF, tf), min(bl.minLen, length)
}
