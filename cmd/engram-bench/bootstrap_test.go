package main

import (
	"math"
	"strings"
	"testing"
)

// Per-query scores follow score.py: notes expand in place to their source
// turns, repeated ids count once, a query without a results line scores 0,
// a query without gold ids is skipped.
func TestScorePerQueryFollowsScorePy(t *testing.T) {
	queries := []queryRecord{
		{ID: "q1", GoldIDs: []string{"t1", "t2"}, Category: "single-hop"},
		{ID: "q2", GoldIDs: []string{"t3"}, Category: "adversarial"},
		{ID: "q3", GoldIDs: nil, Category: "single-hop"},
		{ID: "q4", GoldIDs: []string{"t4"}, Category: "multi-hop"},
	}
	results := []resultLine{
		{QueryID: "q1", RankedIDs: []string{"x", "n1", "t1", "t2"}},
		{QueryID: "q2", RankedIDs: []string{"t3"}},
		{QueryID: "q2", RankedIDs: []string{"x"}}, // a second line is ignored
	}
	sources := map[string][]string{"n1": {"t2", "y"}}
	pq := scorePerQuery(queries, results, sources)
	if len(pq.category) != 3 {
		t.Fatalf("scored %d queries, want 3 (q3 has no gold)", len(pq.category))
	}
	// q1 ranks x, t2, y, t1 (n1 expanded, the later t2 dropped).
	dcg := 1/math.Log2(3) + 1/math.Log2(5)
	idcg := 1 + 1/math.Log2(3)
	want := map[string][]float64{
		"R@1":     {0, 1, 0},
		"R@5":     {1, 1, 0},
		"R@10":    {1, 1, 0},
		"MRR@10":  {0.5, 1, 0},
		"nDCG@10": {dcg / idcg, 1, 0},
	}
	for m, w := range want {
		for i := range w {
			if math.Abs(pq.values[m][i]-w[i]) > 1e-12 {
				t.Errorf("%s = %v, want %v", m, pq.values[m], w)
				break
			}
		}
	}
	if got := pq.subset("R@1", "adversarial"); len(got) != 2 || got[0] != 0 || got[1] != 0 {
		t.Errorf("subset without adversarial %v", got)
	}
	// Without sources the note is just a miss.
	if got := scorePerQuery(queries, results, nil).values["R@5"][0]; got != 1 {
		t.Errorf("R@5 without sources %v", got)
	}
}

func TestPairedBootstrap(t *testing.T) {
	// A constant difference has a zero-width interval at that difference.
	a, b := []float64{0.5, 0.7, 0.9, 0.1}, []float64{0.4, 0.6, 0.8, 0.0}
	if iv := pairedBootstrap(a, b, 1000, 1); math.Abs(iv.Mean-0.1) > 1e-12 || math.Abs(iv.Lo-0.1) > 1e-12 || math.Abs(iv.Hi-0.1) > 1e-12 {
		t.Errorf("constant difference: %+v", iv)
	}
	// 1000 queries, the first 100 improved by 1: mean 0.1, and the
	// interval is that of a proportion, 0.1 ± 1.96·sqrt(0.1·0.9/1000).
	a, b = make([]float64, 1000), make([]float64, 1000)
	for i := range 100 {
		a[i] = 1
	}
	iv := pairedBootstrap(a, b, 10_000, 7)
	half := 1.96 * math.Sqrt(0.1*0.9/1000)
	if iv.Mean != 0.1 || math.Abs(iv.Lo-(0.1-half)) > 0.004 || math.Abs(iv.Hi-(0.1+half)) > 0.004 {
		t.Errorf("proportion: %+v, want about [%.4f, %.4f]", iv, 0.1-half, 0.1+half)
	}
	if iv := pairedBootstrap(a, b[:10], 100, 1); iv != (interval{}) {
		t.Errorf("unpaired lengths: %+v", iv)
	}
}

// The comparison refuses to report when its per-query scores do not
// average to score.py's table, and renders a table otherwise.
func TestCompareModesChecksScorePy(t *testing.T) {
	queries := []queryRecord{{ID: "q1", GoldIDs: []string{"t1"}}, {ID: "q2", GoldIDs: []string{"t2"}}}
	hybrid := scorePerQuery(queries, []resultLine{{QueryID: "q1", RankedIDs: []string{"t1"}}, {QueryID: "q2", RankedIDs: []string{"t2"}}}, nil)
	keyword := scorePerQuery(queries, []resultLine{{QueryID: "q1", RankedIDs: []string{"t1"}}}, nil)
	score := func(v float64) scoreFile {
		return scoreFile{Groups: map[string]groupScore{subsetExclAdv: {N: 2, R5: v, R10: v, MRR10: v, NDCG10: v}}}
	}
	d, err := compareModes("hybrid", "keyword", hybrid, keyword, map[string]scoreFile{"hybrid": score(1), "keyword": score(0.5)})
	if err != nil {
		t.Fatal(err)
	}
	if iv := d.byMetric["nDCG@10"]; iv.Mean != 0.5 || iv.Lo != 0 || iv.Hi != 1 || d.n != 2 {
		t.Errorf("nDCG@10 difference %+v (n %d)", iv, d.n)
	}
	if md := d.markdown(); !strings.Contains(md, "| nDCG@10 | +0.5000 | [+0.0000, +1.0000] |") {
		t.Errorf("markdown:\n%s", md)
	}
	if _, err := compareModes("hybrid", "keyword", hybrid, keyword, map[string]scoreFile{"hybrid": score(1), "keyword": score(0.4)}); err == nil ||
		!strings.Contains(err.Error(), "score.py says") {
		t.Errorf("mismatch with score.py accepted: %v", err)
	}
}
