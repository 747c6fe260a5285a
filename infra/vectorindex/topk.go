package vectorindex

import (
	"bytes"
	"slices"
)

// scored is a slot with its similarity to the query.
type scored struct {
	sim float32
	id  uint32
}

// topK keeps the k best slots seen so far in a min-heap whose root is the
// worst kept one, so a scan rejects most slots with a single comparison.
// Ranking: higher score, then newer created_at, then smaller ID (so results
// are deterministic even for duplicate vectors).
type topK struct {
	k int
	c *collection
	h []scored
}

func newTopK(k int, c *collection) *topK {
	return &topK{k: k, c: c, h: make([]scored, 0, min(k, 1024))}
}

func (t *topK) full() bool { return len(t.h) >= t.k }

// floor is the score a candidate must reach to be considered at all.
func (t *topK) floor() float32 {
	if !t.full() {
		return -2 // below any cosine
	}
	return t.h[0].sim
}

// below reports whether a ranks below b.
func (t *topK) below(a, b scored) bool {
	if a.sim != b.sim {
		return a.sim < b.sim
	}
	ca, cb := t.c.created[a.id], t.c.created[b.id]
	if ca != cb {
		return ca < cb
	}
	return bytes.Compare(t.c.ids.at(a.id), t.c.ids.at(b.id)) > 0
}

func (t *topK) offer(x scored) {
	if !t.full() {
		t.h = append(t.h, x)
		t.up(len(t.h) - 1)
		return
	}
	if !t.below(t.h[0], x) {
		return
	}
	t.h[0] = x
	t.down(0)
}

func (t *topK) merge(o *topK) {
	for _, x := range o.h {
		t.offer(x)
	}
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.below(t.h[i], t.h[p]) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

func (t *topK) down(i int) {
	n := len(t.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && t.below(t.h[r], t.h[l]) {
			m = r
		}
		if !t.below(t.h[m], t.h[i]) {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// hits returns the kept slots best first.
func (t *topK) hits() []Hit {
	slices.SortFunc(t.h, func(a, b scored) int {
		switch {
		case t.below(b, a):
			return -1
		case t.below(a, b):
			return 1
		}
		return 0
	})
	out := make([]Hit, len(t.h))
	for i, x := range t.h {
		out[i] = Hit{ID: string(t.c.ids.at(x.id)), Score: clampScore(x.sim), CreatedAt: fromNanos(t.c.created[x.id])}
	}
	return out
}
