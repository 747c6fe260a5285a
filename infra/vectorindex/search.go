package vectorindex

import (
	"context"
	"fmt"
	"math"
)

// selectivitySamples is how many rows are tested to estimate a filter's
// share of a graph collection (~1-3 µs).
const selectivitySamples = 512

// Search returns the k items of collection most similar to query that match
// f, best first; ties go to the newer item. A missing collection yields no
// hits. Whenever at least k items match, k hits are returned.
func (ix *Index) Search(ctx context.Context, collection string, query []float32, k int, f Filter) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	q, ok := normalized(query)
	if !ok {
		return nil, fmt.Errorf("%w: query is zero or not finite", ErrInvalidVector)
	}
	c := ix.lookup(collection)
	if c == nil {
		return nil, nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.live() == 0 {
		return nil, nil
	}
	if len(q) != c.dim {
		return nil, fmt.Errorf("%w: collection %q holds %d-dimensional vectors, query has %d", ErrDimensionMismatch, collection, c.dim, len(q))
	}
	m := c.compile(f)
	if m.none {
		return nil, nil
	}
	top, err := ix.searchLocked(ctx, c, q, k, &m)
	if err == nil && c.quantized() {
		top, err = c.rescore(q, k, top)
	}
	if err != nil {
		return nil, err
	}
	return top.hits(), nil
}

// rescore ranks a quantised search's candidates by their full-precision
// vectors and keeps the k best, with exact scores.
func (c *collection) rescore(q []float32, k int, cands *topK) (*topK, error) {
	top := newTopK(k, c)
	v := make([]float32, c.dim)
	var buf []byte
	for _, x := range cands.h {
		var err error
		if buf, err = c.floats.read(int(x.id), v, buf); err != nil {
			return nil, err
		}
		top.offer(scored{dot(q, v), x.id})
	}
	return top, nil
}

// Strategy cost model, in units of one similarity computation during a
// graph walk (a random access: ~175 ns at 384 dims and 100k nodes). Measured
// on clustered data with M=16: an unfiltered walk makes ~10-14×ef of them at
// 10k-100k nodes, and a filter that accepts a share s of the nodes
// multiplies that by about 1/s, because the walk must see ef/s nodes to
// collect ef matches. An exact scan pays ~55 ns per matching row (streamed
// reads, bandwidth-bound) and a little per row tested: ~1 ns in the inlined
// type/time loop, ~5 ns for a posting-list entry. At 100k×384 the two meet
// near s = 16%.
const (
	walkDotsPerEf = 14
	scanMatchCost = 0.3
	scanRowCost   = 0.005
	listRowCost   = 0.03
)

// searchLocked picks the strategy. Every path evaluates the filter per item
// while searching, so a selective filter never leaves the result short. A
// quantised collection ranks by its codes and returns rescoreFactor×k
// candidates for rescoring.
func (ix *Index) searchLocked(ctx context.Context, c *collection, q []float32, k int, m *matcher) (*topK, error) {
	n, keep := c.ids.len(), k
	if c.quantized() {
		keep = rescoreFactor * k
	}
	if g := c.graph; g != nil && g.maxLevel >= 0 {
		ef := max(keep, ix.opts.EfSearch)
		share, scan := 1-float64(c.nDead)/float64(n), float64(n)*scanRowCost
		if m.active {
			share, scan = c.estimate(m)
		}
		scan += share * float64(n) * scanMatchCost
		walk := walkDotsPerEf * float64(ef) / max(share, 1e-9)
		if walk < scan || ix.opts.forceWalk {
			// Give up on a walk that costs far more than predicted (the
			// matches lie away from the query) and scan instead.
			budget := int(min(3*walk, float64(n)))
			top, ok, err := ix.searchGraph(ctx, c, g, q, k, keep, m, budget)
			if err != nil || ok {
				return top, err
			}
		}
	}
	top := newTopK(keep, c)
	return top, ix.scan(ctx, c, q, 0, n, m, top)
}

// searchGraph walks the graph over slots [0, g.n) and scans the slots the
// indexer has not reached yet, keeping the keep best. ok is false when the
// walk exceeded maxDots or found fewer than k hits (a graph can strand a few
// nodes); the caller then scans everything, which makes "k hits whenever k
// match" hold.
func (ix *Index) searchGraph(ctx context.Context, c *collection, g *graph, q []float32, k, keep int, m *matcher, maxDots int) (*topK, bool, error) {
	s := ix.scratch.Get().(*scratch)
	defer ix.scratch.Put(s)
	ef := max(keep, ix.opts.EfSearch)
	acc := acceptor{c: c, m: m, all: !m.active && c.nDead == 0}
	vv := c.view()
	res, ok := g.search(s, &vv, q, ef, acc, maxDots)
	if !ok {
		return nil, false, nil
	}
	top := newTopK(keep, c)
	for _, r := range res {
		top.offer(r)
	}
	if err := ix.scan(ctx, c, q, g.n, c.ids.len(), m, top); err != nil {
		return nil, false, err
	}
	return top, len(top.h) >= k, nil
}

// estimate returns the share of slots expected to match m and the cost of
// testing the rows a scan would test (see the cost model above). With a
// posting list only its entries are sampled and tested.
func (c *collection) estimate(m *matcher) (share, rowCost float64) {
	n := float64(c.ids.len())
	if list, ok := c.postingFor(m); ok {
		return sampleShare(len(list), func(i int) bool { return c.match(m, list[i]) }) * float64(len(list)) / n,
			float64(len(list)) * listRowCost
	}
	return sampleShare(c.ids.len(), func(i int) bool { return c.match(m, uint32(i)) }), n * scanRowCost
}

// sampleShare estimates the share of positions [0, n) for which ok holds,
// testing one jittered position per equal stratum. Strata keep time-window
// filters honest (slots are in insertion order, which correlates with
// created_at); the jitter keeps periodic patterns in the data (types
// assigned round-robin, say) from aliasing with the sampling step.
func sampleShare(n int, ok func(int) bool) float64 {
	if n == 0 {
		return 0
	}
	const golden = 0.6180339887498949
	samples := min(n, selectivitySamples)
	step := float64(n) / float64(samples)
	hit := 0
	for i := range samples {
		_, jitter := math.Modf(float64(i+1) * golden)
		if ok(min(n-1, int((float64(i)+jitter)*step))) {
			hit++
		}
	}
	return float64(hit) / float64(samples)
}
