package textindex

import "slices"

// pruneSlack is the relative margin by which a bound must fall short of
// the heap's worst score before a document is skipped: bounds are sums in another
// order than a score's and a block's bound is computed from other counts
// than its postings', and the margin covers their rounding, so pruning
// never skips a document that would enter the top k.
const pruneSlack = 1e-9

// cursor is one query term's place in its postings during a pruned walk.
type cursor struct {
	list   *termList
	blocks []block
	qi     int     // the term's place in the query: scores add weights in this order
	bound  float64 // no document's weight for the term exceeds it
	pos    int
	// boundOf is the block whose bound blockBound holds (-1: none yet).
	boundOf    int
	blockBound float64
}

// pruned scores like MaxScore (Turtle and Flood, 1995), document at a
// time, with block bounds (Ding and Suel, 2011) on the lookups; it serves
// unfiltered searches (see sparseMax). The terms are ordered by their
// largest weight in any document; once the heap is full, the lightest
// terms whose bounds add up to less than its worst score cannot lift a
// document into it on their own, so only the postings of the other
// ("essential") terms yield candidates, and a candidate looks the light
// terms up (skipping whole blocks, and stopping at a block whose bound
// cannot help) only while its bound can still reach the heap. Every
// document that could enter the top k is scored in full, its weights
// added in query term order like the other paths, so the result is
// theirs exactly; the rest are skipped, most postings of a common word
// among them. Skipping the essential terms' blocks whole when all the
// terms' block bounds add up short (block-max WAND's move) measured
// slower here: a block's bound, its largest count over its shortest
// document, is loose when lengths are mixed, so it rarely skipped, and
// its checks cost more than they saved (docs/design.md#keyword-index-at-scale).
func (sc *scorer) pruned(s *scratch, top *topK) {
	curs := s.cursors[:0]
	for qi := range s.lists {
		l := &s.lists[qi]
		cur := cursor{list: l, blocks: l.blocks, qi: qi, boundOf: -1}
		for _, bl := range cur.blocks {
			cur.bound = max(cur.bound, sc.bm25(l.idf, bl.maxTF, bl.minLen))
		}
		if qi > 0 && curs[qi-1].list.term == l.term {
			// The term's second segment (see Search): both take the
			// term's bound, so they stay side by side once sorted.
			cur.bound = max(cur.bound, curs[qi-1].bound)
			curs[qi-1].bound = cur.bound
		}
		curs = append(curs, cur)
	}
	s.cursors = curs
	slices.SortStableFunc(curs, func(a, b cursor) int {
		switch {
		case a.bound < b.bound:
			return -1
		case a.bound > b.bound:
			return 1
		}
		return 0
	})
	// lighter[j] bounds the summed weights of the terms curs[:j]. A term
	// in two segments counts its bound once: a document is in one of them
	// at most.
	lighter := append(s.bounds[:0], 0)
	for j, cur := range curs {
		bound := cur.bound
		if j > 0 && curs[j-1].list.term == cur.list.term {
			bound = 0
		}
		lighter = append(lighter, lighter[len(lighter)-1]+bound)
	}
	s.bounds = lighter
	if cap(s.weights) < len(curs) {
		s.weights = make([]float64, len(curs))
	}
	weights := s.weights[:len(curs)]
	clear(weights)

	// A document whose bound is below cut cannot reach the heap's worst
	// score (0 until the heap is full), with the margin of pruneSlack.
	cut := 0.0
	light := 0 // curs[:light] are the terms that cannot lift a document alone
	for {
		essential := curs[light:]
		slot, ok := nextCandidate(essential)
		if !ok {
			return
		}
		if sc.anyDead && sc.c.dead.at(slot) {
			for i := range essential {
				essential[i].skip(slot)
			}
			continue
		}
		partial := 0.0
		for i := range essential {
			cur := &essential[i]
			if cur.pos < len(cur.list.postings) && cur.list.postings[cur.pos].slot == slot {
				w := sc.weight(cur.list, cur.list.postings[cur.pos])
				weights[cur.qi], partial = w, partial+w
				cur.pos++
			}
		}
		reach := partial+lighter[light] >= cut
		for j := light - 1; j >= 0 && reach; j-- {
			cur := &curs[j]
			bi, ok := cur.seekBlock(slot)
			if !ok {
				continue
			}
			if partial+sc.blockBound(cur, bi)+lighter[j] < cut {
				reach = false
				break
			}
			if cur.seek(slot) {
				w := sc.weight(cur.list, cur.list.postings[cur.pos])
				weights[cur.qi], partial = w, partial+w
			}
			reach = partial+lighter[j] >= cut
		}
		if reach {
			score := 0.0
			for _, w := range weights {
				score += w
			}
			top.offer(slot, score)
			if len(top.slots) == top.k && top.score[0]/(1+pruneSlack) > cut {
				cut = top.score[0] / (1 + pruneSlack)
				for light < len(curs) && lighter[light+1] < cut {
					light++
				}
			}
		}
		clear(weights)
	}
}

// nextCandidate is the smallest slot at the cursors.
func nextCandidate(curs []cursor) (uint32, bool) {
	var next uint32
	found := false
	for i := range curs {
		cur := &curs[i]
		if cur.pos < len(cur.list.postings) {
			if slot := cur.list.postings[cur.pos].slot; !found || slot < next {
				next, found = slot, true
			}
		}
	}
	return next, found
}

// blockBound is the largest weight of the cursor's term in block bi.
func (sc *scorer) blockBound(cur *cursor, bi int) float64 {
	if cur.boundOf != bi {
		bl := cur.blocks[bi]
		cur.boundOf, cur.blockBound = bi, sc.bm25(cur.list.idf, bl.maxTF, bl.minLen)
	}
	return cur.blockBound
}

// skip moves past slot if the cursor is on it.
func (cur *cursor) skip(slot uint32) {
	if cur.pos < len(cur.list.postings) && cur.list.postings[cur.pos].slot == slot {
		cur.pos++
	}
}

// seekBlock moves the cursor to the start of the block holding its first
// posting at or past slot, unless it is in that block already, and returns
// the block's index; false when the list has no such posting.
func (cur *cursor) seekBlock(slot uint32) (int, bool) {
	bi := cur.pos / blockSize
	if bi >= len(cur.blocks) {
		return 0, false
	}
	if cur.blocks[bi].last < slot {
		lo, hi := bi+1, len(cur.blocks) // the block is in [lo, hi]
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if cur.blocks[mid].last < slot {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo == len(cur.blocks) {
			cur.pos = len(cur.list.postings)
			return 0, false
		}
		bi, cur.pos = lo, lo*blockSize
	}
	return bi, true
}

// seek moves the cursor, inside its block (see seekBlock), to its first
// posting at or past slot, and reports whether that posting is slot's.
func (cur *cursor) seek(slot uint32) bool {
	list := cur.list.postings
	lo, hi := cur.pos, min((cur.pos/blockSize+1)*blockSize, len(list))
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if list[mid].slot < slot {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	cur.pos = lo
	return lo < len(list) && list[lo].slot == slot
}
