package textindex

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/engram-memory/engram/domain"
)

// maxQueryTerms bounds the terms of one query: a 32,000-character query
// must not walk thousands of posting lists.
const maxQueryTerms = 64

// Filter restricts a search. The zero Filter matches everything.
type Filter struct {
	Types []string // the type must be one of these (empty: any)
	Tags  []string // the document must carry all of these
	// CreatedAfter is inclusive, CreatedBefore exclusive; zero: open.
	CreatedAfter, CreatedBefore time.Time
}

// Hit is one result: Score is the BM25 relevance (> 0).
type Hit struct {
	ID        string
	Score     float64
	CreatedAt time.Time
}

// scratch is a search's working memory, pooled: a search costs time in
// the postings it walks, not allocations in the collection size.
type scratch struct {
	lists []termList
	// Sparse path: the touched documents and their scores, in slot order
	// (two of each, merged back and forth).
	slots  [2][]uint32
	merged [2][]float64
	// Dense path: a score per slot, and the slots touched.
	scores  []float64
	touched []uint32
	// Pruned path: the terms' cursors, the sums of the lightest terms'
	// bounds, and a candidate's weight per query term.
	cursors []cursor
	bounds  []float64
	weights []float64
}

// termList is one query term's postings and IDF: a segment of its
// posting list. A term has two when postings were written past an
// image's list, one after the other in the lists; a document is in one of
// them at most, so its weights still add up in query term order.
type termList struct {
	term uint32
	idf  float64
	segment
}

// A query whose terms have at most sparseMax postings in all is scored by
// merging its posting lists (each in slot order) into a list of touched
// documents: the walk then reads memory in order, and is cheaper than the
// other paths' bookkeeping while the lists are short. Longer ones are
// walked with pruning (pruned), which skips most postings of common words;
// with a filter, into a score per slot (dense) instead: the heap of the
// best k then fills only with documents that pass, slowly under a
// selective filter, so pruning cuts little while checking the filter per
// candidate reads each one's records (at 1M documents and a tag on 1% of
// them the pruned walk measured 2-4x slower; docs/design.md#keyword-index-at-scale). The
// dense walk checks the filter only for documents that would enter the
// heap. All paths add a document's term weights in query term order, so
// scores are the same to the bit.
var sparseMax = 1 << 13 // a variable so tests can force either path

// Search returns the k documents of collection with the highest BM25 score
// for query that pass f, best first; ties go to the newer document, then
// the smaller id. Any text is a valid query. IDF is Lucene's
// ln(1 + (N - df + 0.5)/(df + 0.5)) over the collection alone, so one
// agent's memories never influence another's ranking.
func (ix *Index) Search(ctx context.Context, collection, query string, k int, f Filter) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := ix.lookup(collection)
	if c == nil || k <= 0 {
		return nil, nil
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	s := ix.scratch.Get().(*scratch)
	defer ix.scratch.Put(s)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.live == 0 {
		return nil, nil
	}
	n := float64(c.live)
	avgdl := float64(c.totalLen) / n
	if avgdl == 0 {
		avgdl = 1
	}
	s.lists = s.lists[:0]
	total := 0
	for _, term := range terms {
		id, ok := c.termOf(term)
		if !ok || c.df.at(id) == 0 {
			continue
		}
		df := float64(c.df.at(id))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		image, heap := c.segments(id)
		for _, seg := range [2]segment{image, heap} {
			if len(seg.postings) > 0 {
				s.lists = append(s.lists, termList{term: id, idf: idf, segment: seg})
				total += len(seg.postings)
			}
		}
	}
	sc := scorer{c: c, avgdl: avgdl, anyDead: c.nDead > 0}
	top := topK{k: k, c: c}
	m := c.compile(f)
	if total > sparseMax && m.any {
		sc.pruned(s, &top)
		return top.hits(), nil
	}
	offer := func(slot uint32, score float64) {
		// Once the heap is full, a document scoring below its worst can
		// never enter (offer would say so after the filter).
		if len(top.slots) == k && score < top.score[0] {
			return
		}
		if m.match(c, slot) {
			top.offer(slot, score)
		}
	}
	if total > sparseMax {
		sc.dense(s, offer)
		return top.hits(), nil
	}
	slots, scores := sc.merge(s)
	for i, slot := range slots {
		offer(slot, scores[i])
	}
	return top.hits(), nil
}

// scorer computes BM25 term weights in one collection.
type scorer struct {
	c       *collection
	avgdl   float64
	anyDead bool
}

// weight is the BM25 weight of the term of list l in the document of p;
// every path scores with it, so scores do not depend on the path.
func (sc *scorer) weight(l *termList, p posting) float64 {
	tfCount, length := uint32(p.tf), uint32(p.length)
	if p.saturated() {
		tfCount, length = sc.c.exactCounts(p, l.term)
	}
	return sc.bm25(l.idf, tfCount, length)
}

// bm25 is the weight of a term of idf counted tfCount units in a document
// of length units. It grows with tfCount and falls with length, so the
// largest count and the shortest length of a block bound its postings'.
func (sc *scorer) bm25(idf float64, tfCount, length uint32) float64 {
	tf := float64(tfCount) / fieldScale
	norm := k1 * (1 - b + b*float64(length)/sc.avgdl)
	return idf * tf * (k1 + 1) / (tf + norm)
}

func (sc *scorer) dead(p posting) bool { return sc.anyDead && sc.c.dead.at(p.slot) }

// merge scores the sparse way: the term lists merged one after the other
// into the slot-ordered list of touched documents with their scores.
func (sc *scorer) merge(s *scratch) ([]uint32, []float64) {
	cur := 0
	slots, scores := s.slots[cur][:0], s.merged[cur][:0]
	for li := range s.lists {
		l := &s.lists[li]
		next := 1 - cur
		outSlots, outScores := s.slots[next][:0], s.merged[next][:0]
		i := 0
		for _, p := range l.postings {
			if sc.dead(p) {
				continue
			}
			for i < len(slots) && slots[i] < p.slot {
				outSlots, outScores = append(outSlots, slots[i]), append(outScores, scores[i])
				i++
			}
			w := sc.weight(l, p)
			if i < len(slots) && slots[i] == p.slot {
				outSlots, outScores = append(outSlots, p.slot), append(outScores, scores[i]+w)
				i++
			} else {
				outSlots, outScores = append(outSlots, p.slot), append(outScores, w)
			}
		}
		outSlots, outScores = append(outSlots, slots[i:]...), append(outScores, scores[i:]...)
		s.slots[cur], s.merged[cur] = slots, scores // keep the grown buffers
		cur, slots, scores = next, outSlots, outScores
	}
	s.slots[cur], s.merged[cur] = slots, scores
	return slots, scores
}

// dense scores the dense way, into a score per slot, and offers every
// touched document.
func (sc *scorer) dense(s *scratch, offer func(uint32, float64)) {
	c := sc.c
	if cap(s.scores) < c.ids.len() {
		s.scores = make([]float64, c.ids.len())
	}
	scores := s.scores[:c.ids.len()]
	s.touched = s.touched[:0]
	for li := range s.lists {
		l := &s.lists[li]
		for _, p := range l.postings {
			if sc.dead(p) {
				continue
			}
			if scores[p.slot] == 0 {
				s.touched = append(s.touched, p.slot)
			}
			scores[p.slot] += sc.weight(l, p)
		}
	}
	for _, slot := range s.touched {
		offer(slot, scores[slot])
		scores[slot] = 0
	}
}

// queryTerms tokenizes a query into distinct terms, first occurrence first.
func queryTerms(query string) []string {
	var out []string
	tokenize(query, func(term string) {
		if len(out) < maxQueryTerms && !slices.Contains(out, term) {
			out = append(out, term)
		}
	})
	return out
}

// matcher is a Filter prepared for one search.
type matcher struct {
	f      Filter
	lo, hi int64
	any    bool
}

func (c *collection) compile(f Filter) matcher {
	m := matcher{f: f, lo: math.MinInt64, hi: math.MaxInt64}
	if !f.CreatedAfter.IsZero() {
		m.lo = domain.ClampedUnixNano(f.CreatedAfter)
	}
	if !f.CreatedBefore.IsZero() {
		m.hi = domain.ClampedUnixNano(f.CreatedBefore) - 1
	}
	m.any = len(f.Types) == 0 && len(f.Tags) == 0 && f.CreatedAfter.IsZero() && f.CreatedBefore.IsZero()
	return m
}

func (m *matcher) match(c *collection, slot uint32) bool {
	if m.any {
		return true
	}
	if t := c.created.at(slot); t < m.lo || t > m.hi {
		return false
	}
	if len(m.f.Types) > 0 && !slices.Contains(m.f.Types, c.typeOf(slot)) {
		return false
	}
	for _, tag := range m.f.Tags {
		if !c.tags.has(slot, tag) {
			return false
		}
	}
	return true
}

// topK keeps the k best (slot, score) pairs in a min-heap ordered worst
// first.
type topK struct {
	k     int
	c     *collection
	slots []uint32
	score []float64
}

// better orders by score, then newer, then smaller id.
func (t *topK) better(sa float64, a uint32, sb float64, b uint32) bool {
	if sa != sb {
		return sa > sb
	}
	if ca, cb := t.c.created.at(a), t.c.created.at(b); ca != cb {
		return ca > cb
	}
	return t.c.ids.at(a) < t.c.ids.at(b)
}

func (t *topK) offer(slot uint32, score float64) {
	if len(t.slots) < t.k {
		t.slots, t.score = append(t.slots, slot), append(t.score, score)
		t.up(len(t.slots) - 1)
		return
	}
	if !t.better(score, slot, t.score[0], t.slots[0]) {
		return
	}
	t.slots[0], t.score[0] = slot, score
	t.down(0)
}

// worse(i, j): i should sit above j in the worst-first heap.
func (t *topK) worse(i, j int) bool { return t.better(t.score[j], t.slots[j], t.score[i], t.slots[i]) }

func (t *topK) swap(i, j int) {
	t.slots[i], t.slots[j] = t.slots[j], t.slots[i]
	t.score[i], t.score[j] = t.score[j], t.score[i]
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.worse(i, p) {
			return
		}
		t.swap(i, p)
		i = p
	}
}

func (t *topK) down(i int) {
	for {
		l, r, w := 2*i+1, 2*i+2, i
		if l < len(t.slots) && t.worse(l, w) {
			w = l
		}
		if r < len(t.slots) && t.worse(r, w) {
			w = r
		}
		if w == i {
			return
		}
		t.swap(i, w)
		i = w
	}
}

// hits empties the heap best first.
func (t *topK) hits() []Hit {
	out := make([]Hit, len(t.slots))
	for i := len(t.slots) - 1; i >= 0; i-- {
		slot, score := t.slots[0], t.score[0]
		// The id is cloned: an image's points into the image's bytes,
		// which outlive no caller.
		out[i] = Hit{ID: strings.Clone(t.c.ids.at(slot)), Score: score, CreatedAt: time.Unix(0, t.c.created.at(slot)).UTC()}
		last := len(t.slots) - 1
		t.swap(0, last)
		t.slots, t.score = t.slots[:last], t.score[:last]
		t.down(0)
	}
	return out
}
