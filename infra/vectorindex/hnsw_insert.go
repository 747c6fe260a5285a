package vectorindex

import (
	"math"
	"slices"
)

// Insertion happens in two steps: plan (beam searches, neighbour selection,
// pruning of the neighbours' lists) only reads the graph; apply copies the
// planned lists in. The indexer runs both on its private copy of the graph
// (see indexer.go).

// insert adds node (which must be g.n); dead nodes are added without links.
func (g *graph) insert(p *planner, vv *vectorView, node uint32, dead bool) {
	g.plan(p, vv, node, dead)
	g.apply(p)
}

// planner holds one planned insertion and the indexer's reusable buffers.
type planner struct {
	s        scratch
	node     uint32
	level    int
	isolated bool       // tombstoned before it was indexed: add without links
	links    [][]uint32 // per level 0..level: the new node's neighbours
	upd      []linkUpdate
	buf      []uint32 // backing store of the updated lists
	cands    []scored
	sel      []scored // the new node's chosen neighbours on the current level
	prune    []scored // a full neighbour list plus the new node, to prune
	kept     []scored // what pruning kept
	dead     []bool   // tombstone flags of the indexer's current batch
	// Decoded vectors of a quantised collection: the node being inserted,
	// a neighbour whose list is pruned, a candidate being selected.
	query, base, other []float32
}

// decodeBuffers sizes the buffers vectorView.load decodes into.
func (p *planner) decodeBuffers(dim int) {
	if len(p.query) < dim {
		p.query, p.base, p.other = make([]float32, dim), make([]float32, dim), make([]float32, dim)
	}
}

// linkUpdate replaces node's list on level by buf[off:off+n].
type linkUpdate struct {
	node   uint32
	level  int
	off, n int
}

const maxLevel = 16

func (g *graph) randomLevel() int {
	l := int(-math.Log(1-g.rng.Float64()) * g.levelMult)
	return min(l, maxLevel)
}

// plan prepares the insertion of node (which must be g.n).
func (g *graph) plan(p *planner, vv *vectorView, node uint32, dead bool) {
	p.node, p.isolated, p.upd, p.buf = node, dead, p.upd[:0], p.buf[:0]
	for i := range p.links {
		p.links[i] = p.links[i][:0]
	}
	if dead {
		p.level = 0
		return
	}
	// Levels are drawn only for live nodes, so the graph's shape depends
	// on the live data alone.
	p.level = g.randomLevel()
	for len(p.links) <= p.level {
		p.links = append(p.links, make([]uint32, 0, g.m))
	}
	if g.maxLevel < 0 {
		return
	}
	p.decodeBuffers(vv.dim)
	q := vv.load(p.query, node)
	self := vv.sim(q, node)
	ep := scored{vv.sim(q, g.entry), g.entry}
	for l := g.maxLevel; l > p.level; l-- {
		ep = g.greedy(vv, q, ep, l)
	}
	all := acceptor{all: true}
	for l := min(p.level, g.maxLevel); l >= 0; l-- {
		g.searchLayer(&p.s, vv, q, ep, g.efC, l, all, math.MaxInt)
		p.cands = append(p.cands[:0], p.s.res...)
		sortDesc(p.cands)
		ep = p.cands[0]
		p.sel = g.selectNeighbours(vv, p.other, p.cands, g.m, self, p.sel[:0])
		for _, e := range p.sel {
			p.links[l] = append(p.links[l], e.id)
			g.planBackLink(p, vv, e, l)
		}
	}
}

// planBackLink plans e's list on level with the new node added, pruned by
// the same heuristic when it would exceed the layer's maximum degree.
func (g *graph) planBackLink(p *planner, vv *vectorView, e scored, level int) {
	cur := g.neighbours(e.id, level)
	off := len(p.buf)
	if len(cur) < g.mmax(level) {
		p.buf = append(p.buf, cur...)
		p.buf = append(p.buf, p.node)
	} else {
		ve := vv.load(p.base, e.id)
		p.prune = append(p.prune[:0], scored{e.sim, p.node}) // similarity is symmetric
		for _, x := range cur {
			p.prune = append(p.prune, scored{vv.sim(ve, x), x})
		}
		sortDesc(p.prune)
		p.kept = g.selectNeighbours(vv, p.other, p.prune, g.mmax(level), vv.sim(ve, e.id), p.kept[:0])
		for _, k := range p.kept {
			p.buf = append(p.buf, k.id)
		}
	}
	p.upd = append(p.upd, linkUpdate{node: e.id, level: level, off: off, n: len(p.buf) - off})
}

// selectNeighbours is the paper's heuristic (algorithm 4): walking the
// candidates from the most similar, keep one only if it is more similar to
// the base than to every neighbour already kept. This spreads links across
// directions, which is what keeps clustered data navigable. buf receives
// decoded candidates.
//
// self is the base's similarity to itself: a candidate as similar as that
// is a copy of the base (agents store the same text again and again). The
// heuristic cannot prune copies (each is exactly as similar to the others
// as to the base), so a group of more than m copies would fill its
// members' lists with one another and close into a clique that traps any
// search entering it; at most m/4 of a list's links go to copies.
func (g *graph) selectNeighbours(vv *vectorView, buf []float32, cands []scored, m int, self float32, out []scored) []scored {
	copies, maxCopies := 0, max(1, m/4)
	for _, c := range cands {
		if len(out) >= m {
			break
		}
		isCopy := c.sim >= self
		if isCopy && copies == maxCopies {
			continue
		}
		vc := vv.load(buf, c.id)
		good := true
		for _, r := range out {
			if vv.sim(vc, r.id) > c.sim {
				good = false
				break
			}
		}
		if good {
			out = append(out, c)
			if isCopy {
				copies++
			}
		}
	}
	return out
}

// apply commits the planned insertion.
func (g *graph) apply(p *planner) {
	id := p.node
	g.links0 = grow(g.links0, g.m0)
	g.links0 = g.links0[:len(g.links0)+g.m0]
	g.links0[len(g.links0)-g.m0] = noLink
	g.levels = append(g.levels, uint8(p.level))
	g.upperOff = append(g.upperOff, uint32(len(g.upper)))
	if p.level > 0 {
		words := p.level * g.m
		g.upper = grow(g.upper, words)
		g.upper = g.upper[:len(g.upper)+words]
		for b := len(g.upper) - words; b < len(g.upper); b += g.m {
			g.upper[b] = noLink
		}
	}
	g.n++
	if p.isolated {
		return
	}
	for l := 0; l <= p.level; l++ {
		g.setNeighbours(id, l, p.links[l])
	}
	for _, u := range p.upd {
		g.setNeighbours(u.node, u.level, p.buf[u.off:u.off+u.n])
	}
	if g.maxLevel < 0 || p.level > g.maxLevel {
		g.entry, g.maxLevel = id, p.level
	}
}

func sortDesc(s []scored) {
	slices.SortFunc(s, func(a, b scored) int {
		switch {
		case a.sim > b.sim:
			return -1
		case a.sim < b.sim:
			return 1
		}
		return 0
	})
}
