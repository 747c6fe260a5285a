package textindex

import (
	"math"
	"slices"
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
	return tf, c.length[p.slot]
}

// slotTerm keys bigTF.
func slotTerm(slot, term uint32) uint64 { return uint64(slot)<<32 | uint64(term) }

// collection is one agent's index. Documents live in slots; a delete or a
// replace marks the slot dead (postings keep pointing at it and are
// skipped) and compaction reclaims dead slots once they are a quarter of
// the total. Statistics (live count, total length, document frequencies)
// always count live documents only, so scores do not depend on history.
type collection struct {
	mu sync.RWMutex

	metaUnits uint32 // weight of the metadata field, in units of 1/fieldScale

	termID   lazyIndex   // term → term id
	terms    []string    // by term id: termID's inverse, append-only
	postings [][]posting // by term id, in slot order
	blocks   [][]block   // by term id: one per blockSize postings
	df       []int32     // live documents holding the term

	ids     []string
	dead    []bool
	length  []uint32 // terms in the document's text, in units
	created []int64  // unix nanos
	types   []string
	tags    [][]string
	// docTerms are a document's distinct term ids, kept so a delete can
	// give back its document frequencies. The term frequencies are in the
	// postings; those past a posting's 16 bits are in bigTF (by
	// slotTerm), which is almost always empty.
	docTerms [][]uint32
	bigTF    map[uint64]uint32
	// slotOf maps a live document's id to its slot.
	slotOf lazyIndex

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

func newCollection(metaUnits uint32) *collection {
	c := &collection{metaUnits: metaUnits, bigTF: map[uint64]uint32{}}
	c.termID.start(map[string]uint32{})
	c.slotOf.start(map[string]uint32{})
	return c
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
	slot := uint32(len(c.ids))
	terms := make([]uint32, 0, len(order))
	for _, term := range order {
		id, ok := c.termOf(term)
		if !ok {
			id = uint32(len(c.postings))
			c.termID.add(term, id)
			c.terms = append(c.terms, term)
			c.postings = append(c.postings, nil)
			c.blocks = append(c.blocks, nil)
			c.df = append(c.df, 0)
		}
		tf := counts[term]
		c.postings[id] = append(c.postings[id], newPosting(slot, tf, n))
		c.extendBlocks(id, len(c.postings[id])-1, slot, tf, n)
		if tf >= maxPacked {
			c.bigTF[slotTerm(slot, id)] = tf
		}
		c.df[id]++
		terms = append(terms, id)
	}
	c.ids = append(c.ids, d.ID)
	c.dead = append(c.dead, false)
	c.length = append(c.length, n)
	c.created = append(c.created, domain.ClampedUnixNano(d.CreatedAt))
	c.types = append(c.types, d.Type)
	c.tags = append(c.tags, append([]string(nil), d.Tags...))
	c.docTerms = append(c.docTerms, terms)
	c.slotOf.add(d.ID, slot)
	c.live++
	c.totalLen += int64(n)
}

func (c *collection) remove(id string) {
	slot, ok := c.slotOfID(id)
	if !ok {
		return
	}
	c.slotOf.remove(id)
	c.ownSlots()
	for _, term := range c.docTerms[slot] {
		c.df[term]--
		if len(c.bigTF) > 0 {
			delete(c.bigTF, slotTerm(slot, term))
		}
	}
	c.totalLen -= int64(c.length[slot])
	c.live--
	c.nDead++
	c.dead[slot] = true
	c.docTerms[slot], c.tags[slot] = nil, nil
}

// slotOfID returns the slot of the live document id. Callers hold c.mu,
// read or write.
func (c *collection) slotOfID(id string) (uint32, bool) {
	return c.slotOf.lookup(id, func() (uint32, bool) {
		for slot := len(c.ids) - 1; slot >= 0; slot-- {
			if c.ids[slot] == id && !c.dead[slot] {
				return uint32(slot), true
			}
		}
		return 0, false
	}, func() map[string]uint32 {
		m := make(map[string]uint32, c.live)
		for slot, id := range c.ids {
			if !c.dead[slot] {
				m[id] = uint32(slot)
			}
		}
		return m
	})
}

// termOf returns the id of term. Callers hold c.mu, read or write.
func (c *collection) termOf(term string) (uint32, bool) {
	return c.termID.lookup(term, func() (uint32, bool) {
		for id, t := range c.terms {
			if t == term {
				return uint32(id), true
			}
		}
		return 0, false
	}, func() map[string]uint32 {
		m := make(map[string]uint32, len(c.terms))
		for id, t := range c.terms {
			m[t] = uint32(id)
		}
		return m
	})
}

// ownSlots copies the slot arrays remove changes in place, when an image
// being encoded shares them (see lent).
func (c *collection) ownSlots() {
	if !c.lent.Load() {
		return
	}
	c.dead, c.tags, c.docTerms = slices.Clone(c.dead), slices.Clone(c.tags), slices.Clone(c.docTerms)
	c.lent.Store(false)
}

// compactIfSparse rebuilds the slots and postings without dead documents
// once they are a quarter of the slots (and at least a few hundred), and
// no image is being encoded from them (the next delete compacts then).
func (c *collection) compactIfSparse() {
	if c.nDead < 256 || c.nDead*4 < len(c.ids) || c.imaged.Load() {
		return
	}
	wasDead := c.dead
	remap := make([]uint32, len(c.ids))
	next := 0
	for slot := range c.ids {
		if wasDead[slot] {
			continue
		}
		remap[slot] = uint32(next)
		c.ids[next], c.length[next], c.created[next] = c.ids[slot], c.length[slot], c.created[slot]
		c.types[next], c.tags[next], c.docTerms[next] = c.types[slot], c.tags[slot], c.docTerms[slot]
		c.slotOf.add(c.ids[next], uint32(next))
		next++
	}
	c.ids, c.length, c.created = c.ids[:next], c.length[:next], c.created[:next]
	c.types, c.tags, c.docTerms = c.types[:next], c.tags[:next], c.docTerms[:next]
	c.dead = make([]bool, next)
	if len(c.bigTF) > 0 { // it holds live documents' counts only
		moved := make(map[uint64]uint32, len(c.bigTF))
		for key, tf := range c.bigTF {
			moved[slotTerm(remap[key>>32], uint32(key))] = tf
		}
		c.bigTF = moved
	}
	for id, list := range c.postings {
		kept := list[:0]
		c.blocks[id] = c.blocks[id][:0]
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
		c.postings[id] = kept
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
	blocks := c.blocks[term]
	if i%blockSize == 0 {
		c.blocks[term] = append(blocks, block{last: slot, maxTF: tf, minLen: length})
		return
	}
	bl := &blocks[len(blocks)-1]
	bl.last, bl.maxTF, bl.minLen = slot, max(bl.maxTF, tf), min(bl.minLen, length)
}
