package search

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Fusion is how hybrid mode combines the vector and keyword candidates.
//
// # Hybrid scores
//
// A hybrid search asks each index for its best n = max(MinCandidates,
// CandidateFactor·limit) candidates (default max(50, 5·limit)), with the
// request's filters applied inside each index, takes the union, and scores
// every memory in it with a convex combination of two absolute scores
// (FusionConvex, the default):
//
//	hybrid = (wv·v + wk·k) / (wv + wk)          default wv = 0.05, wk = 0.95
//	v      = max(0, cosine(query, memory))      vector score, in [0, 1]
//	k      = x / (x + K)                        keyword score, in [0, 1)
//
// x ≥ 0 is the memory's BM25 relevance to the query among its agent's
// memories, and K = 8, so that one rare word matched once scores about 0.5.
// A side that did not return the memory among its n candidates adds 0.
// Neither side is rescaled per query, so a hybrid score means the same
// thing from query to query and min_score is an absolute threshold: a
// memory passes when wv·v + wk·k ≥ min_score·(wv + wk).
//
// With the defaults, the hybrid score is the keyword score moved by at most
// 0.05 by the vector side. Vector similarity re-orders memories whose
// keyword evidence is close and breaks ties. A memory only the keyword
// index found can still rank first (it scores 0.95·k). A memory only the
// vector index found scores at most 0.05·v, so it comes after the keyword
// matches and fills the page when there are fewer of them than the limit.
// Equal scores are ordered by creation time (newer first), then by id.
//
// These defaults serve agents of engram-hash-384 and of any model without
// its own entry in Options.Models. The vector weight is small because
// engram-hash-384 is lexical (hashed words, bigrams and character n-grams,
// with no corpus statistics): it mostly repeats what BM25 already knows,
// but without BM25's inverse document frequency. On the LoCoMo dev split
// ("turns", excluding adversarial), wv = 0.05 ties keyword-only search; a
// larger vector weight lowers R@5, and per-query min-max normalisation
// (FusionMinMax) and reciprocal rank fusion (FusionRRF) did no better.
//
// Agents of the semantic built-in glove-sif-100 get their own fusion
// (DefaultModelFusion): per-query min-max normalisation with wv = 0.15,
// which beat the best absolute weight (wv = 0.05) on the same split; so
// for them min_score is relative to the query's candidates (FusionMinMax).
//
// # Per backend pair
//
// The weights above were tuned on the embedded indexes' scores. Qdrant
// returns the same cosine similarity as the embedded vector index (mapped
// to [0, 1] the same way), so a Qdrant vector side keeps every fusion as
// tuned. Meilisearch's rankingScore is also in [0, 1] but means something
// else (how well a document fits its ranking rules: matched words, typos,
// proximity, attribute, exactness), not BM25 saturated at K = 8, so an
// absolute combination with weights tuned on BM25 would mix two unrelated
// scales. With Meilisearch as the keyword index (RelativeKeywordScores),
// FusionConvex therefore becomes FusionMinMax with the same weights: each
// side is normalised over the query's candidates first, which keeps the
// tuned balance between the sides whatever either scale is (FusionMinMax
// and FusionRRF are scale-free already and stay). min_score is then
// relative to the query's candidates, as for glove-sif-100. These choices
// are untuned: tuning them needs real Meilisearch and Qdrant servers
// (their test servers in this repository mimic the protocols, not the
// relevance), which these machines cannot run.
type Fusion string

const (
	// FusionConvex (the default) is the absolute convex combination above.
	FusionConvex Fusion = "convex"
	// FusionMinMax is the convex combination of per-query min-max
	// normalised scores: each side's scores are mapped linearly so that its
	// best candidate scores 1 and its worst 0 (a single candidate, or all
	// equal, score 1). Insensitive to how a model's cosines are spread,
	// but a hybrid score then only says how a memory compares with this
	// query's other candidates, so min_score is relative too.
	FusionMinMax Fusion = "minmax"
	// FusionRRF: reciprocal rank fusion, Σ w/(R + rank), divided by its
	// maximum (first on both sides) so it lies in [0, 1]. Scale-free, but
	// the fused score says only how high a memory ranked, and a memory that
	// both sides return near the top beats one that only a single side ranks
	// first, however strong its evidence there.
	FusionRRF Fusion = "rrf"
)

// Default fusion parameters (see the hybrid score above).
const (
	DefaultVectorWeight    = 0.05
	DefaultKeywordWeight   = 0.95
	DefaultRRFK            = 60
	DefaultMinCandidates   = 50
	DefaultCandidateFactor = 5
)

// Options tune the service; zero fields take the defaults. The fusion
// parameters are the knobs the quality harness tunes.
type Options struct {
	Fusion Fusion // default FusionConvex
	// VectorWeight and KeywordWeight weight the two sides (defaults
	// DefaultVectorWeight and DefaultKeywordWeight, tuned on the LoCoMo dev
	// split with the built-in engram-hash-384 model; a semantic model
	// deserves more vector weight, see Models). Either may be 0 but not
	// both; both 0 means the defaults.
	VectorWeight, KeywordWeight float64
	// RRFK is R in FusionRRF (default 60).
	RRFK float64
	// Hybrid asks each index for max(MinCandidates, CandidateFactor·limit)
	// candidates (defaults 50 and 5).
	MinCandidates, CandidateFactor int
	// ImputeMissing: in FusionConvex, a memory missing from a side's full
	// candidate list counts with that list's last score instead of 0.
	ImputeMissing bool
	// Models overrides the fusion and weights for the agents bound to an
	// embedding model (by model name): a semantic model earns more vector
	// weight than a lexical one. Nil takes DefaultModelFusion(); models
	// not listed use Fusion, VectorWeight and KeywordWeight.
	Models map[string]ModelFusion
	// RelativeKeywordScores: the keyword index's scores are not the
	// embedded BM25's absolute scale (Meilisearch's rankingScore), so
	// FusionConvex is applied as FusionMinMax (see "Per backend pair").
	RelativeKeywordScores bool
	// Now is the clock strengths are computed at, to leave weak memories
	// out (default time.Now).
	Now func() time.Time
	// Rebuilding reports whether a side's index (SideKeyword, SideVector)
	// is being rebuilt live: it holds only part of the memories until the
	// rebuild ends, so a search treats it as down rather than answer from
	// it. Nil: never.
	Rebuilding func(side string) bool
}

// ModelFusion is the fusion tuned for one embedding model.
type ModelFusion struct {
	Fusion                      Fusion
	VectorWeight, KeywordWeight float64
}

// GloVeSIFModel names the built-in GloVe SIF model (infra/embed/local),
// whose fusion is tuned here.
const GloVeSIFModel = "glove-sif-100"

// DefaultModelFusion is the fusion tuned on the LoCoMo dev split per
// built-in model whose best differs from the defaults: for glove-sif-100,
// per-query min-max fusion with vector weight 0.15. Measured excluding
// adversarial questions, as nDCG@10 (MRR@10) for "turns" and "turns+notes":
// keyword alone 0.485 (0.466) and 0.557 (0.546); min-max wv 0.15 0.498
// (0.478) and 0.565 (0.550); wv 0.2 0.500 (0.482) but 0.560 (0.545),
// below keyword's MRR; the best absolute weight (convex, wv 0.05) 0.495
// (0.472) and 0.567 (0.553). wv 0.15 is the one above keyword on every
// metric under both protocols.
func DefaultModelFusion() map[string]ModelFusion {
	return map[string]ModelFusion{
		GloVeSIFModel: {Fusion: FusionMinMax, VectorWeight: 0.15, KeywordWeight: 0.85},
	}
}

// FusionFor is the fusion hybrid searches of an agent bound to model use:
// the model's entry in Models, else Fusion and the weights, made
// scale-free when the keyword scores are relative.
func (o Options) FusionFor(model string) ModelFusion {
	f, ok := o.Models[model]
	if !ok {
		f = ModelFusion{Fusion: o.Fusion, VectorWeight: o.VectorWeight, KeywordWeight: o.KeywordWeight}
	}
	if o.RelativeKeywordScores && f.Fusion == FusionConvex {
		f.Fusion = FusionMinMax
	}
	return f
}

// forModel is o with the fusion and weights FusionFor(model) gives.
func (o Options) forModel(model string) Options {
	f := o.FusionFor(model)
	o.Fusion, o.VectorWeight, o.KeywordWeight = f.Fusion, f.VectorWeight, f.KeywordWeight
	return o
}

func (o Options) withDefaults() (Options, error) {
	if err := o.fusionDefaults(); err != nil {
		return o, err
	}
	if o.Models == nil {
		o.Models = DefaultModelFusion()
	}
	models := make(map[string]ModelFusion, len(o.Models))
	for name, m := range o.Models {
		mo := Options{Fusion: m.Fusion, VectorWeight: m.VectorWeight, KeywordWeight: m.KeywordWeight}
		if err := mo.fusionDefaults(); err != nil {
			return o, fmt.Errorf("%w (model %s)", err, name)
		}
		models[name] = ModelFusion{Fusion: mo.Fusion, VectorWeight: mo.VectorWeight, KeywordWeight: mo.KeywordWeight}
	}
	o.Models = models
	if o.RRFK <= 0 {
		o.RRFK = DefaultRRFK
	}
	if o.MinCandidates <= 0 {
		o.MinCandidates = DefaultMinCandidates
	}
	if o.CandidateFactor <= 0 {
		o.CandidateFactor = DefaultCandidateFactor
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// fusionDefaults checks and fills Fusion and the weights.
func (o *Options) fusionDefaults() error {
	if o.Fusion == "" {
		o.Fusion = FusionConvex
	}
	switch o.Fusion {
	case FusionConvex, FusionMinMax, FusionRRF:
	default:
		return fmt.Errorf("search: unknown fusion %q", o.Fusion)
	}
	if o.VectorWeight < 0 || o.KeywordWeight < 0 || math.IsNaN(o.VectorWeight) || math.IsNaN(o.KeywordWeight) {
		return fmt.Errorf("search: fusion weights must not be negative")
	}
	if o.VectorWeight == 0 && o.KeywordWeight == 0 {
		o.VectorWeight, o.KeywordWeight = DefaultVectorWeight, DefaultKeywordWeight
	}
	return nil
}

// vectorScore maps a cosine similarity to [0, 1]: unrelated or opposed
// texts score 0, identical ones 1.
func vectorScore(cos float64) float64 {
	if math.IsNaN(cos) {
		return 0
	}
	return min(1, max(0, cos))
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
		out[j].kw, out[j].kRank = h.Score, i+1
	}
	var vMiss, kMiss float64
	if o.ImputeMissing && o.Fusion == FusionConvex && k > 0 && len(vecHits) >= k {
		vMiss = vectorScore(vecHits[len(vecHits)-1].Score)
	}
	if o.ImputeMissing && o.Fusion == FusionConvex && k > 0 && len(kwHits) >= k {
		kMiss = kwHits[len(kwHits)-1].Score
	}
	var vr, kr scoreRange
	if mode == ModeHybrid && o.Fusion == FusionMinMax {
		vr, kr = rangeOf(out, true), rangeOf(out, false)
	}
	for i := range out {
		c := &out[i]
		if c.vRank == 0 {
			c.vec = vMiss
		}
		if c.kRank == 0 {
			c.kw = kMiss
		}
		c.score = o.fusedScore(mode, c, vr, kr)
	}
	return out
}

// scoreRange is the lowest and highest score one side gave its candidates.
type scoreRange struct{ lo, hi float64 }

func rangeOf(cands []candidate, vector bool) scoreRange {
	r := scoreRange{lo: math.Inf(1), hi: math.Inf(-1)}
	for i := range cands {
		s, rank := cands[i].kw, cands[i].kRank
		if vector {
			s, rank = cands[i].vec, cands[i].vRank
		}
		if rank > 0 {
			r.lo, r.hi = min(r.lo, s), max(r.hi, s)
		}
	}
	return r
}

// scale maps s linearly from the range to [0, 1]; a range of one value
// maps it to 1.
func (r scoreRange) scale(s float64) float64 {
	if r.hi <= r.lo {
		return 1
	}
	return min(1, max(0, (s-r.lo)/(r.hi-r.lo)))
}

func (o Options) fusedScore(mode Mode, c *candidate, vr, kr scoreRange) float64 {
	switch mode {
	case ModeVector:
		return c.vec
	case ModeKeyword:
		return c.kw
	}
	wv, wk := o.VectorWeight, o.KeywordWeight
	switch o.Fusion {
	case FusionRRF:
		var s float64
		if c.vRank > 0 {
			s += wv / (o.RRFK + float64(c.vRank))
		}
		if c.kRank > 0 {
			s += wk / (o.RRFK + float64(c.kRank))
		}
		return min(1, s/((wv+wk)/(o.RRFK+1)))
	case FusionMinMax:
		var v, k float64
		if c.vRank > 0 {
			v = vr.scale(c.vec)
		}
		if c.kRank > 0 {
			k = kr.scale(c.kw)
		}
		return (wv*v + wk*k) / (wv + wk)
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
