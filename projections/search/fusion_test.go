package search

import (
	"math"
	"testing"
	"time"
)

var fusionT0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func hits(scores ...any) []Hit {
	var out []Hit
	for i := 0; i+1 < len(scores); i += 2 {
		out = append(out, Hit{ID: scores[i].(string), Score: scores[i+1].(float64), CreatedAt: fusionT0})
	}
	return out
}

func mustOptions(t *testing.T, o Options) Options {
	t.Helper()
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func fused(t *testing.T, o Options, vec, kw []Hit) map[string]candidate {
	t.Helper()
	cands := o.fuse(ModeHybrid, 50, vec, kw)
	rank(cands)
	out := map[string]candidate{}
	for i, c := range cands {
		if c.score < 0 || c.score > 1 || math.IsNaN(c.score) {
			t.Fatalf("%s: score %v outside [0, 1]", c.hit.ID, c.score)
		}
		if i > 0 && cands[i-1].score < c.score {
			t.Fatalf("not sorted at %d", i)
		}
		out[c.hit.ID] = c
	}
	return out
}

func TestDefaultFusion(t *testing.T) {
	o := mustOptions(t, Options{})
	if o.Fusion != FusionConvex || o.VectorWeight != DefaultVectorWeight || o.KeywordWeight != DefaultKeywordWeight ||
		o.MinCandidates != DefaultMinCandidates || o.CandidateFactor != DefaultCandidateFactor {
		t.Fatalf("defaults: %+v", o)
	}
	if o.VectorWeight <= 0 {
		t.Fatal("the vector side must take part in hybrid by default")
	}
}

// Each agent's hybrid search fuses with its model's tuned fusion: the
// semantic glove-sif-100 by min-max with more vector weight, other models
// by the defaults; Options.Models replaces the table.
func TestFusionPerModel(t *testing.T) {
	o := mustOptions(t, Options{})
	glove := o.forModel(GloVeSIFModel)
	if glove.Fusion != FusionMinMax || glove.VectorWeight != 0.15 || glove.KeywordWeight != 0.85 {
		t.Fatalf("glove-sif-100 fusion %+v", glove)
	}
	if hash := o.forModel("engram-hash-384"); hash.Fusion != FusionConvex || hash.VectorWeight != DefaultVectorWeight {
		t.Fatalf("engram-hash-384 fusion %+v", hash)
	}
	// The same candidates rank differently: min-max lifts the vector-only
	// hit above the weak keyword-only one.
	vec, kw := hits("v", 0.9, "k", 0.3), hits("k", 2.0, "w", 1.0)
	top := func(o Options) string {
		c := o.fuse(ModeHybrid, 50, vec, kw)
		rank(c)
		return c[1].hit.ID
	}
	if got := top(glove); got != "v" {
		t.Errorf("glove-sif-100: second is %s, want v", got)
	}
	if got := top(o.forModel("engram-hash-384")); got != "w" {
		t.Errorf("engram-hash-384: second is %s, want w", got)
	}
	custom := mustOptions(t, Options{Models: map[string]ModelFusion{"m": {Fusion: FusionRRF}}})
	if m := custom.forModel("m"); m.Fusion != FusionRRF || m.VectorWeight != DefaultVectorWeight {
		t.Errorf("custom model fusion %+v (weights must default)", m)
	}
	if g := custom.forModel(GloVeSIFModel); g.Fusion != FusionConvex {
		t.Errorf("Options.Models must replace the default table, got %+v", g)
	}
}

// With relative keyword scores (Meilisearch), an absolute convex fusion is
// applied as min-max with the same weights, for the defaults and for a
// model's own entry; the scale-free fusions stay.
func TestFusionWithRelativeKeywordScores(t *testing.T) {
	o := mustOptions(t, Options{RelativeKeywordScores: true, Models: map[string]ModelFusion{
		"convex-model": {Fusion: FusionConvex, VectorWeight: 0.3, KeywordWeight: 0.7},
		"rrf-model":    {Fusion: FusionRRF},
	}})
	for model, want := range map[string]ModelFusion{
		"engram-hash-384": {Fusion: FusionMinMax, VectorWeight: DefaultVectorWeight, KeywordWeight: DefaultKeywordWeight},
		"convex-model":    {Fusion: FusionMinMax, VectorWeight: 0.3, KeywordWeight: 0.7},
		"rrf-model":       {Fusion: FusionRRF, VectorWeight: DefaultVectorWeight, KeywordWeight: DefaultKeywordWeight},
	} {
		if got := o.FusionFor(model); got != want {
			t.Errorf("%s: fusion %+v, want %+v", model, got, want)
		}
	}
	// A keyword score near 1 for every match (as rankingScore gives) no
	// longer drowns the vector side: the fused order follows min-max.
	vec, kw := hits("v", 0.9, "k", 0.3), hits("k", 0.99, "w", 0.97)
	c := o.forModel("convex-model").fuse(ModeHybrid, 50, vec, kw)
	rank(c)
	if c[0].hit.ID != "k" || c[1].hit.ID != "v" {
		t.Errorf("order %s, %s; want k then v", c[0].hit.ID, c[1].hit.ID)
	}
}

func TestFusionOptionErrors(t *testing.T) {
	for name, o := range map[string]Options{
		"unknown fusion":    {Fusion: "max"},
		"negative weight":   {VectorWeight: -0.1, KeywordWeight: 1},
		"NaN weight":        {VectorWeight: math.NaN(), KeywordWeight: 1},
		"bad model fusion":  {Models: map[string]ModelFusion{"m": {Fusion: "max"}}},
		"bad model weights": {Models: map[string]ModelFusion{"m": {VectorWeight: -1}}},
	} {
		if _, err := o.withDefaults(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The convex hybrid score is the documented weighted mean of absolute
// scores, so it can be checked by hand. Keyword hits come scored in [0, 1]
// by the index (the embedded one maps BM25 x to x/(x+8): 8 → 0.5, 24 →
// 0.75).
func TestConvexScoresAreAbsolute(t *testing.T) {
	o := mustOptions(t, Options{})
	got := fused(t, o, hits("both", 0.6, "vonly", 0.9, "neg", -0.4), hits("both", 0.5, "konly", 0.75))
	want := map[string]float64{
		"both":  0.05*0.6 + 0.95*0.5,
		"konly": 0.95 * 0.75,
		"vonly": 0.05 * 0.9,
		"neg":   0,
	}
	for id, w := range want {
		if c, ok := got[id]; !ok || math.Abs(c.score-w) > 1e-12 {
			t.Errorf("%s: score %v, want %v", id, c.score, w)
		}
	}
	// The same memory with the same side scores gets the same hybrid score
	// whatever else the query found: min_score is absolute.
	again := fused(t, o, hits("both", 0.6, "x", 0.99), hits("both", 0.5, "y", 0.98))
	if again["both"].score != got["both"].score {
		t.Errorf("score depends on the other candidates: %v vs %v", again["both"].score, got["both"].score)
	}
}

// A strong keyword-only hit beats a memory both sides found weakly, and a
// vector-only hit is still in the union. (Not under RRF, which sees only
// ranks: there a memory both sides return near the top beats one that a
// single side ranks first.)
func TestEitherSideCanContribute(t *testing.T) {
	for _, f := range []Fusion{FusionConvex, FusionMinMax, FusionRRF} {
		o := mustOptions(t, Options{Fusion: f})
		vec := hits("both", 0.3, "vonly", 0.8)
		kw := hits("konly", 0.79, "both", 0.2, "weak", 0.11)
		cands := o.fuse(ModeHybrid, 50, vec, kw)
		rank(cands)
		if f != FusionRRF && cands[0].hit.ID != "konly" {
			t.Errorf("%s: want the keyword-only hit first, got %+v", f, cands)
		}
		found := false
		for _, c := range cands {
			if c.hit.ID == "vonly" {
				found = c.score > 0 && c.kRank == 0 && c.vRank == 2
			}
		}
		if !found {
			t.Errorf("%s: the vector-only hit is missing or scored 0: %+v", f, cands)
		}
	}
	// With more vector weight a vector-only hit can win too.
	o := mustOptions(t, Options{VectorWeight: 0.7, KeywordWeight: 0.3})
	cands := o.fuse(ModeHybrid, 50, hits("vonly", 0.9), hits("konly", 0.33))
	rank(cands)
	if cands[0].hit.ID != "vonly" {
		t.Errorf("vector weight 0.7: want the vector-only hit first, got %+v", cands)
	}
}

func TestMinMaxAndRRFScale(t *testing.T) {
	o := mustOptions(t, Options{Fusion: FusionMinMax, VectorWeight: 0.5, KeywordWeight: 0.5})
	got := fused(t, o, hits("a", 0.7, "b", 0.3, "c", 0.5), hits("a", 0.6, "b", 0.33))
	if got["a"].score != 1 || got["b"].score != 0 || math.Abs(got["c"].score-0.25) > 1e-12 {
		t.Errorf("minmax: a %v b %v c %v", got["a"].score, got["b"].score, got["c"].score)
	}
	// A side with a single candidate (or all equal) scores it 1.
	got = fused(t, o, hits("a", 0.2), hits("a", 0.27, "b", 0.27))
	if got["a"].score != 1 || got["b"].score != 0.5 {
		t.Errorf("minmax single: a %v b %v", got["a"].score, got["b"].score)
	}
	o = mustOptions(t, Options{Fusion: FusionRRF})
	got = fused(t, o, hits("a", 0.1, "b", 0.05), hits("a", 0.11))
	if math.Abs(got["a"].score-1) > 1e-12 || got["b"].score >= got["a"].score {
		t.Errorf("rrf: a %v b %v", got["a"].score, got["b"].score)
	}
}

func TestSingleModeScores(t *testing.T) {
	o := mustOptions(t, Options{})
	// The keyword index scores in [0, 1]; keyword mode passes it on.
	for _, c := range o.fuse(ModeKeyword, 10, nil, hits("a", 0.5, "b", 1.0)) {
		want := map[string]float64{"a": 0.5, "b": 1}[c.hit.ID]
		if c.score != want {
			t.Errorf("keyword %s: %v, want %v", c.hit.ID, c.score, want)
		}
	}
	for _, c := range o.fuse(ModeVector, 10, hits("a", 1.2, "b", math.NaN(), "c", 0.25), nil) {
		want := map[string]float64{"a": 1, "b": 0, "c": 0.25}[c.hit.ID]
		if c.score != want {
			t.Errorf("vector %s: %v, want %v", c.hit.ID, c.score, want)
		}
	}
}
