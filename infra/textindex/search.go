package textindex

import (
	"context"
	"math"
	"slices"
	"time"
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

// scratch is a search's per-document accumulator, pooled: a search costs
// time in the postings it walks, not allocations in the collection size.
type scratch struct {
	scores  []float64
	touched []uint32
}

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
	if cap(s.scores) < len(c.ids) {
		s.scores = make([]float64, len(c.ids))
	}
	scores := s.scores[:len(c.ids)]
	s.touched = s.touched[:0]
	defer func() {
		for _, slot := range s.touched {
			scores[slot] = 0
		}
	}()
	n := float64(c.live)
	avgdl := float64(c.totalLen) / n
	if avgdl == 0 {
		avgdl = 1
	}
	for _, term := range terms {
		id, ok := c.termID[term]
		if !ok || c.df[id] == 0 {
			continue
		}
		df := float64(c.df[id])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range c.postings[id] {
			if c.dead[p.slot] {
				continue
			}
			tf := float64(p.tf)
			norm := k1 * (1 - b + b*float64(c.length[p.slot])/avgdl)
			if scores[p.slot] == 0 {
				s.touched = append(s.touched, p.slot)
			}
			scores[p.slot] += idf * tf * (k1 + 1) / (tf + norm)
		}
	}
	m := c.compile(f)
	top := topK{k: k, c: c}
	for _, slot := range s.touched {
		if m.match(c, slot) {
			top.offer(slot, scores[slot])
		}
	}
	return top.hits(), nil
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
		m.lo = unixNanos(f.CreatedAfter)
	}
	if !f.CreatedBefore.IsZero() {
		m.hi = unixNanos(f.CreatedBefore) - 1
	}
	m.any = len(f.Types) == 0 && len(f.Tags) == 0 && f.CreatedAfter.IsZero() && f.CreatedBefore.IsZero()
	return m
}

func (m *matcher) match(c *collection, slot uint32) bool {
	if m.any {
		return true
	}
	if t := c.created[slot]; t < m.lo || t > m.hi {
		return false
	}
	if len(m.f.Types) > 0 && !slices.Contains(m.f.Types, c.types[slot]) {
		return false
	}
	for _, tag := range m.f.Tags {
		if !slices.Contains(c.tags[slot], tag) {
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
	if ca, cb := t.c.created[a], t.c.created[b]; ca != cb {
		return ca > cb
	}
	return t.c.ids[a] < t.c.ids[b]
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
		out[i] = Hit{ID: t.c.ids[slot], Score: score, CreatedAt: time.Unix(0, t.c.created[slot]).UTC()}
		last := len(t.slots) - 1
		t.swap(0, last)
		t.slots, t.score = t.slots[:last], t.score[:last]
		t.down(0)
	}
	return out
}
