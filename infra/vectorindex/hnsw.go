package vectorindex

import (
	"math"
	"math/rand/v2"
)

// graph is a hierarchical navigable small world graph (Malkov & Yashunin)
// over a stable collection's slots: node i is slot i. Adjacency lives in flat
// arrays instead of per-node slices so that the graph costs ~100 bytes a node (M = 16)
// and gives the garbage collector nothing to scan.
//
// Concurrency: a graph is either private to the collection's indexer, which
// mutates it, or published in collection.graph, after which nobody mutates
// it (see indexer.go).
type graph struct {
	m, m0     int // max neighbours on upper layers / on layer 0
	efC       int
	levelMult float64
	// pcg is rng's state. Each copy of a graph owns its own, so a
	// published graph keeps the state that continues it exactly (a
	// snapshot stores it).
	pcg *rand.PCG
	rng *rand.Rand

	n        int    // nodes inserted; they are slots [0, n)
	entry    uint32 // entry point, a node on the top layer
	maxLevel int    // -1 while the graph has no entry point

	links0   []uint32 // per node m0 words: neighbours, then noLink if fewer
	levels   []uint8
	upperOff []uint32 // nodes with levels>0: offset into upper
	upper    []uint32 // per level 1..L of a node: m words, like links0
}

type graphParams struct {
	m, efC int
	seed   uint64
}

// layer0Degree is the maximum degree on layer 0 for degree m upper. The
// paper and hnswlib use 2m; with the pruning heuristic nodes average ~21 of
// 32 links at m = 16 on clustered data, and capping them at 1.5m cuts the
// graph's largest array by a quarter (32 bytes a node, 8% of a 100-d
// vector) at unchanged recall (see TestHNSWRecall and BenchmarkSearch).
func layer0Degree(m int) int { return m + m/2 }

func newGraph(p graphParams, capNodes int) *graph {
	m0 := layer0Degree(p.m)
	pcg := rand.NewPCG(p.seed, 0x9e3779b97f4a7c15)
	return &graph{
		m:         p.m,
		m0:        m0,
		efC:       p.efC,
		levelMult: 1 / math.Log(float64(p.m)),
		pcg:       pcg,
		rng:       rand.New(pcg),
		maxLevel:  -1,
		links0:    make([]uint32, 0, capNodes*m0),
		levels:    make([]uint8, 0, capNodes),
		upperOff:  make([]uint32, 0, capNodes),
	}
}

// clone copies g, keeping spare capacity so that a copy under construction
// does not reallocate its arrays on every insert.
func (g *graph) clone() *graph {
	c := *g
	pcg := *g.pcg
	c.pcg, c.rng = &pcg, rand.New(&pcg)
	c.links0 = cloneCap(g.links0)
	c.levels = cloneCap(g.levels)
	c.upperOff = cloneCap(g.upperOff)
	c.upper = cloneCap(g.upper)
	return &c
}

func cloneCap[T any](s []T) []T {
	c := make([]T, len(s), cap(s))
	copy(c, s)
	return c
}

func (g *graph) mmax(level int) int {
	if level == 0 {
		return g.m0
	}
	return g.m
}

// noLink ends a neighbour list shorter than its block. Blocks carry no
// count word: 4 bytes a node saved on every layer, for a scan of at most
// mmax words that costs far less than one similarity computation.
const noLink = math.MaxUint32

// block is id's fixed-size neighbour block on level.
func (g *graph) block(id uint32, level int) []uint32 {
	if level == 0 {
		b := int(id) * g.m0
		return g.links0[b : b+g.m0 : b+g.m0]
	}
	b := int(g.upperOff[id]) + (level-1)*g.m
	return g.upper[b : b+g.m : b+g.m]
}

func (g *graph) neighbours(id uint32, level int) []uint32 {
	b := g.block(id, level)
	for i, nb := range b {
		if nb == noLink {
			return b[:i]
		}
	}
	return b
}

func (g *graph) setNeighbours(id uint32, level int, ns []uint32) {
	b := g.block(id, level)
	copy(b, ns)
	if len(ns) < len(b) {
		b[len(ns)] = noLink
	}
}

// acceptor decides which nodes may enter the result set. The walk itself
// goes through every node, so a filter never disconnects the graph.
type acceptor struct {
	c   *collection
	m   *matcher
	all bool
}

func (a acceptor) ok(id uint32) bool { return a.all || a.c.match(a.m, id) }

// search returns up to ef accepted nodes near q (in no particular order).
// ok is false when the walk needed more than maxDots similarity computations,
// which happens when few nodes are accepted; the caller then scans exactly.
func (g *graph) search(s *scratch, vv *vectorView, q []float32, ef int, acc acceptor, maxDots int) (res []scored, ok bool) {
	if g.maxLevel < 0 {
		return nil, true
	}
	ep := scored{vv.sim(q, g.entry), g.entry}
	for l := g.maxLevel; l > 0; l-- {
		ep = g.greedy(vv, q, ep, l)
	}
	_, ok = g.searchLayer(s, vv, q, ep, ef, 0, acc, maxDots)
	return s.res, ok
}

// greedy moves from ep to the most similar node on one layer (ef = 1).
func (g *graph) greedy(vv *vectorView, q []float32, ep scored, level int) scored {
	for moved := true; moved; {
		moved = false
		for _, nb := range g.neighbours(ep.id, level) {
			if sim := vv.sim(q, nb); sim > ep.sim {
				ep, moved = scored{sim, nb}, true
			}
		}
	}
	return ep
}

// searchLayer is the beam search of one layer: it expands the best
// unexpanded candidate until no candidate can improve the ef best accepted
// nodes, which it leaves in s.res. It reports the similarity computations it
// made, and false if it stopped early because they exceeded maxDots.
func (g *graph) searchLayer(s *scratch, vv *vectorView, q []float32, ep scored, ef, level int, acc acceptor, maxDots int) (dots int, ok bool) {
	s.begin(g.n)
	s.visit(ep.id)
	s.cand.push(ep)
	if acc.ok(ep.id) {
		s.res.push(ep)
	}
	for len(s.cand) > 0 {
		c := s.cand.pop()
		if len(s.res) >= ef && c.sim < s.res[0].sim {
			break
		}
		for _, nb := range g.neighbours(c.id, level) {
			if !s.visit(nb) {
				continue
			}
			sim := vv.sim(q, nb)
			dots++
			if len(s.res) < ef || sim > s.res[0].sim {
				s.cand.push(scored{sim, nb})
				if acc.ok(nb) {
					s.res.push(scored{sim, nb})
					if len(s.res) > ef {
						s.res.pop()
					}
				}
			}
		}
		if dots > maxDots {
			return dots, false
		}
	}
	return dots, true
}

func (g *graph) heldBytes() int64 {
	return int64(cap(g.links0))*4 + int64(cap(g.levels)) + int64(cap(g.upperOff))*4 + int64(cap(g.upper))*4
}
