package vectorindex

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"
)

// clustered returns n points of dim dimensions around `centroids` random unit
// centroids: unit(centroid + Gaussian noise of norm ≈ noise). i.i.d. uniform
// vectors have no neighbourhood structure and make every ANN index look
// broken, so ANN tests and benchmarks use this instead.
type clustered struct {
	dim   int
	noise float64
	cents [][]float32
	rng   *rand.Rand
}

func newClustered(dim, centroids int, noise float64, seed uint64) *clustered {
	g := &clustered{dim: dim, noise: noise, rng: rand.New(rand.NewPCG(seed, 7))}
	for range centroids {
		c := make([]float32, dim)
		for i := range c {
			c[i] = float32(g.rng.NormFloat64())
		}
		c, _ = normalized(c)
		g.cents = append(g.cents, c)
	}
	return g
}

func (g *clustered) next() []float32 {
	c := g.cents[g.rng.IntN(len(g.cents))]
	v := make([]float32, g.dim)
	sd := g.noise / math.Sqrt(float64(g.dim))
	for i := range v {
		v[i] = c[i] + float32(g.rng.NormFloat64()*sd)
	}
	v, _ = normalized(v)
	return v
}

var (
	testTypes = []string{"episode", "belief", "value", "goal", "note", "drive", "relationship", "raw", "playbook", "summary"}
	baseTime  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// makeItem gives item i metadata with known selectivities: type i%10 (10%
// each), tag "m<i%100>" (1% each), tag "odd" on odd i (50%), and one minute
// per i of creation time.
func makeItem(i int, v []float32) Item {
	tags := []string{fmt.Sprintf("m%d", i%100)}
	if i%2 == 1 {
		tags = append(tags, "odd")
	}
	return Item{
		ID:        fmt.Sprintf("mem-%06d", i),
		Vector:    v,
		Type:      testTypes[i%len(testTypes)],
		Tags:      tags,
		CreatedAt: baseTime.Add(time.Duration(i) * time.Minute),
	}
}

// bruteForce is the oracle: it filters and ranks items independently of the
// index (same normalisation and dot kernel, so scores agree bit for bit).
func bruteForce(items []Item, query []float32, k int, f Filter) []Hit {
	return newOracle(items).search(query, k, f)
}

// oracle caches the items' normalised vectors for repeated brute-force
// searches over big fixtures.
type oracle struct {
	items []Item
	vecs  [][]float32
}

func newOracle(items []Item) *oracle {
	o := &oracle{items: items, vecs: make([][]float32, len(items))}
	for i, it := range items {
		o.vecs[i] = it.Vector
		if inv, _ := inverseNorm(it.Vector); math.Abs(inv-1) >= 1e-6 { // else the index stores it bit for bit
			o.vecs[i], _ = normalized(it.Vector)
		}
	}
	return o
}

func (o *oracle) search(query []float32, k int, f Filter) []Hit {
	q, _ := normalized(query)
	var hits []Hit
	for i, it := range o.items {
		if !oracleMatch(it, f) {
			continue
		}
		hits = append(hits, Hit{ID: it.ID, Score: clampScore(dot(q, o.vecs[i])), CreatedAt: it.CreatedAt})
	}
	if len(hits) > 4*k { // keep the sort small: only hits scoring at least the k-th best
		var floor minHeap
		for i, h := range hits {
			if len(floor) < k {
				floor.push(scored{h.Score, uint32(i)})
			} else if h.Score > floor[0].sim {
				floor.pop()
				floor.push(scored{h.Score, uint32(i)})
			}
		}
		hits = slices.DeleteFunc(hits, func(h Hit) bool { return h.Score < floor[0].sim })
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return slices.Clone(hits[:min(k, len(hits))]) // do not pin every scored item
}

func oracleMatch(it Item, f Filter) bool {
	if len(f.Types) > 0 && !slices.Contains(f.Types, it.Type) {
		return false
	}
	for _, t := range f.Tags {
		if !slices.Contains(it.Tags, t) {
			return false
		}
	}
	if !f.CreatedAfter.IsZero() && it.CreatedAt.Before(f.CreatedAfter) {
		return false
	}
	if !f.CreatedBefore.IsZero() && !it.CreatedAt.Before(f.CreatedBefore) {
		return false
	}
	return true
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// recall is |got ∩ want| / |want|.
func recall(got, want []Hit) float64 {
	if len(want) == 0 {
		return 1
	}
	in := make(map[string]bool, len(want))
	for _, h := range want {
		in[h.ID] = true
	}
	n := 0
	for _, h := range got {
		if in[h.ID] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
