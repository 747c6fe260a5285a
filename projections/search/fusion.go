package search

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Fusion is how hybrid mode combines the two candidate lists.
type Fusion string

const (
	// FusionConvex: fused = (wv·v + wk·k) / (wv + wk), with v and k the
	// vector and keyword scores on the [0, 1] scale and a side that did not
	// return the memory contributing 0. Strong evidence from one side can
	// win on its own (a keyword-only hit with k near 1 beats a weak vector
	// match), and the fused score keeps an absolute meaning for min_score.
	FusionConvex Fusion = "convex"
	// FusionRRF: reciprocal rank fusion, Σ w/(R + rank), divided by its
	// maximum (first on both sides) so it lies in [0, 1]. Scale-free, but
	// the fused score says only how high a memory ranked.
	FusionRRF Fusion = "rrf"
)

// Options tune the service; zero fields take the defaults shown. The
// fusion parameters are the knobs the quality harness tunes.
type Options struct {
	Fusion Fusion // default FusionConvex
	// VectorWeight and KeywordWeight weight the two sides (defaults 0.1
	// and 0.9, tuned on the LoCoMo dev split with the built-in
	// engram-hash-384 model, whose vectors add little to BM25 there; a
	// stronger model deserves more vector weight). Either may be 0 but not
	// both.
	VectorWeight, KeywordWeight float64
	// KeywordSaturation is K in keyword score = x/(x+K), x the BM25
	// relevance (default 8: a rare word matched once scores about 0.5).
	KeywordSaturation float64
	// RRFK is R in FusionRRF (default 60).
	RRFK float64
	// Hybrid asks each index for max(MinCandidates, CandidateFactor·limit)
	// candidates (defaults 50 and 5).
	MinCandidates, CandidateFactor int
	// ImputeMissing: in FusionConvex, a memory missing from a side's full
	// candidate list counts with that list's last score instead of 0.
	ImputeMissing bool
}

func (o Options) withDefaults() (Options, error) {
	if o.Fusion == "" {
		o.Fusion = FusionConvex
	}
	if o.Fusion != FusionConvex && o.Fusion != FusionRRF {
		return o, fmt.Errorf("search: unknown fusion %q", o.Fusion)
	}
	if o.VectorWeight == 0 && o.KeywordWeight == 0 {
		o.VectorWeight, o.KeywordWeight = 0.1, 0.9
	}
	if o.VectorWeight < 0 || o.KeywordWeight < 0 {
		return o, fmt.Errorf("search: fusion weights must not be negative")
	}
	if o.KeywordSaturation <= 0 {
		o.KeywordSaturation = 8
	}
	if o.RRFK <= 0 {
		o.RRFK = 60
	}
	if o.MinCandidates <= 0 {
		o.MinCandidates = 50
	}
	if o.CandidateFactor <= 0 {
		o.CandidateFactor = 5
	}
	return o, nil
}

// vectorScore maps a cosine similarity to [0, 1]: unrelated or opposed
// texts score 0, identical ones 1.
func vectorScore(cos float64) float64 { return min(1, max(0, cos)) }

// keywordScore maps BM25 relevance to [0, 1) monotonically.
func (o Options) keywordScore(bm25 float64) float64 {
	if bm25 <= 0 || math.IsNaN(bm25) {
		return 0
	}
	return bm25 / (bm25 + o.KeywordSaturation)
}

// candidate is one memory from either side.
type candidate struct {
	hit          Hit
	vec, kw      float64 // [0, 1] scores; valid when the rank is > 0
	vRank, kRank int     // 1-based; 0: not returned by that side
	score        float64
}

// fuse unions the sides' hits and scores every candidate for mode. k is
// how many candidates each side was asked for: a side that returned k
// hits may have left a memory out whose own score is at most its last
// one, so with Options.ImputeMissing that is what the memory counts with
// on that side; a side that returned fewer left out only memories it does
// not match at all, which count 0.
func (o Options) fuse(mode Mode, k int, vecHits, kwHits []Hit) []candidate {
	out := make([]candidate, 0, len(vecHits)+len(kwHits))
	pos := make(map[string]int, len(vecHits)+len(kwHits))
	for i, h := range vecHits {
		pos[h.ID] = len(out)
		out = append(out, candidate{hit: h, vec: vectorScore(h.Score), vRank: i + 1})
	}
	for i, h := range kwHits {
		j, ok := pos[h.ID]
		if !ok {
			j = len(out)
			pos[h.ID] = j
			out = append(out, candidate{hit: h})
		}
		out[j].kw, out[j].kRank = o.keywordScore(h.Score), i+1
	}
	var vMiss, kMiss float64
	if o.ImputeMissing && k > 0 && len(vecHits) >= k {
		vMiss = vectorScore(vecHits[len(vecHits)-1].Score)
	}
	if o.ImputeMissing && k > 0 && len(kwHits) >= k {
		kMiss = o.keywordScore(kwHits[len(kwHits)-1].Score)
	}
	for i := range out {
		c := &out[i]
		if c.vRank == 0 {
			c.vec = vMiss
		}
		if c.kRank == 0 {
			c.kw = kMiss
		}
		c.score = o.fusedScore(mode, c)
	}
	return out
}

func (o Options) fusedScore(mode Mode, c *candidate) float64 {
	switch mode {
	case ModeVector:
		return c.vec
	case ModeKeyword:
		return c.kw
	}
	wv, wk := o.VectorWeight, o.KeywordWeight
	if o.Fusion == FusionRRF {
		var s float64
		if c.vRank > 0 {
			s += wv / (o.RRFK + float64(c.vRank))
		}
		if c.kRank > 0 {
			s += wk / (o.RRFK + float64(c.kRank))
		}
		return min(1, s/((wv+wk)/(o.RRFK+1)))
	}
	return (wv*c.vec + wk*c.kw) / (wv + wk)
}

// rank orders candidates by score, then newer first, then by id.
func rank(cands []candidate) {
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := b.hit.CreatedAt.Compare(a.hit.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.hit.ID, b.hit.ID)
	})
}
