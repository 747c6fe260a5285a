package anxiety_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/anxiety"
)

func TestLevelBandEdges(t *testing.T) {
	cases := []struct {
		score int
		want  string
	}{
		{0, "Calm"}, {30, "Calm"}, {31, "Aware"}, {50, "Aware"}, {51, "Elevated"}, {70, "Elevated"},
		{71, "High"}, {85, "High"}, {86, "Critical"}, {100, "Critical"},
	}
	for _, c := range cases {
		if got := anxiety.Level(c.score); got != c.want {
			t.Errorf("Level(%d) = %q, want %q", c.score, got, c.want)
		}
	}
}

func TestConfidenceTiers(t *testing.T) {
	cases := map[int]float64{0: 0, 1: 0.5, 2: 0.5, 3: 0.7, 5: 0.7, 6: 0.9, 100: 0.9}
	for n, want := range cases {
		if got := anxiety.Confidence(n); got != want {
			t.Errorf("Confidence(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestPiecewiseScoresAtEdges(t *testing.T) {
	cases := []struct {
		name string
		f    func(int) int
		in   int
		want int
	}{
		{"consolidation 0", anxiety.ConsolidationScore, 0, 0},
		{"consolidation 3", anxiety.ConsolidationScore, 3, 21},
		{"consolidation 4", anxiety.ConsolidationScore, 4, 31},
		{"consolidation 7", anxiety.ConsolidationScore, 7, 61},
		{"consolidation 8", anxiety.ConsolidationScore, 8, 65},
		{"consolidation 15", anxiety.ConsolidationScore, 15, 93},
		{"consolidation 16 truncates 93.5", anxiety.ConsolidationScore, 16, 93},
		{"consolidation 29", anxiety.ConsolidationScore, 29, 100},
		{"consolidation 200 caps", anxiety.ConsolidationScore, 200, 100},
		{"uncertainty 2", anxiety.UncertaintyScore, 2, 30},
		{"uncertainty 3", anxiety.UncertaintyScore, 3, 45},
		{"uncertainty 5", anxiety.UncertaintyScore, 5, 75},
		{"uncertainty 6", anxiety.UncertaintyScore, 6, 80},
		{"uncertainty 10", anxiety.UncertaintyScore, 10, 100},
		{"suggestions 3", anxiety.SuggestionBacklogScore, 3, 15},
		{"suggestions 4", anxiety.SuggestionBacklogScore, 4, 20},
		{"suggestions 10", anxiety.SuggestionBacklogScore, 10, 50},
		{"suggestions 30", anxiety.SuggestionBacklogScore, 30, 90},
		{"suggestions 31 truncates 90.5", anxiety.SuggestionBacklogScore, 31, 90},
		{"suggestions 50", anxiety.SuggestionBacklogScore, 50, 100},
	}
	for _, c := range cases {
		if got := c.f(c.in); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}

func TestRawAgingScore(t *testing.T) {
	cases := []struct{ total, aging, want int }{
		{0, 0, 0}, {1, 0, 3}, {10, 0, 30}, {50, 0, 30},
		{5, 1, 45}, {5, 3, 75}, {5, 4, 68}, {9, 7, 92}, {9, 8, 93}, {30, 20, 100},
	}
	for _, c := range cases {
		if got := anxiety.RawAgingScore(c.total, c.aging); got != c.want {
			t.Errorf("RawAgingScore(%d, %d) = %d, want %d", c.total, c.aging, got, c.want)
		}
	}
}

func TestRawWeightBoundaries(t *testing.T) {
	cases := map[int]float64{0: 0.3, 19: 0.3, 20: 0.7, 200: 0.7, 201: 1.0}
	for n, want := range cases {
		if got := anxiety.RawWeight(n); got != want {
			t.Errorf("RawWeight(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestEmbeddingBacklogScore(t *testing.T) {
	cases := []struct{ searchable, pending, want int }{{0, 0, 0}, {10, 0, 0}, {3, 1, 33}, {3, 2, 66}, {4, 4, 100}}
	for _, c := range cases {
		if got := anxiety.EmbeddingBacklogScore(c.searchable, c.pending); got != c.want {
			t.Errorf("EmbeddingBacklogScore(%d, %d) = %d, want %d", c.searchable, c.pending, got, c.want)
		}
	}
}

func TestWeightsRenormaliseToOne(t *testing.T) {
	want := map[string]float64{
		anxiety.ConsolidationDebt: 0.25, anxiety.RawAging: 1.0 / 6, anxiety.IdentityCoherence: 1.0 / 6,
		anxiety.MemoryUncertainty: 1.0 / 6, anxiety.SuggestionBacklog: 1.0 / 6, anxiety.EmbeddingBacklog: 1.0 / 12,
	}
	sum := 0.0
	for name, w := range want {
		if got := anxiety.Weight(name); got != w {
			t.Errorf("Weight(%s) = %v, want %v", name, got, w)
		}
		sum += anxiety.Weight(name)
	}
	if sum < 0.999999 || sum > 1.000001 {
		t.Errorf("weights sum to %v", sum)
	}
}

// fullIdentity is a stack whose identity confidence is 1.0 (score 0).
func fullIdentity() anxiety.Inputs {
	in := anxiety.Inputs{ActiveGoals: 5, Drives: 3, Relationships: 5}
	for range 5 {
		in.ValuePriorities = append(in.ValuePriorities, 100)
	}
	for range 10 {
		in.BeliefConfs = append(in.BeliefConfs, 1.0)
	}
	for range 20 {
		in.Episodes = append(in.Episodes, anxiety.Episode{HasLessons: true})
	}
	return in
}

// Each dimension, alone at 100, moves the overall score by exactly its
// weight (truncated): the weights are what the report applies.
func TestEachWeightMovesOverallByItsShare(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	base := fullIdentity()
	base.Now = now
	if r := anxiety.Compute(base); r.OverallScore != 0 {
		t.Fatalf("baseline overall = %d, dims %+v", r.OverallScore, r.Dimensions)
	}
	cases := []struct {
		dim    string
		change func(*anxiety.Inputs)
		want   int
	}{
		{anxiety.ConsolidationDebt, func(in *anxiety.Inputs) {
			for range 30 {
				in.Episodes = append([]anxiety.Episode{{}}, in.Episodes...)
			}
		}, 25},
		{anxiety.MemoryUncertainty, func(in *anxiety.Inputs) {
			// 10 beliefs of confidence 0.1 drop identity too; compensate by
			// asserting on the uncertainty dimension's own share below.
			in.BeliefConfs = append(in.BeliefConfs, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1)
		}, 16},
		{anxiety.SuggestionBacklog, func(in *anxiety.Inputs) { in.PendingSuggestions = 100 }, 16},
		{anxiety.EmbeddingBacklog, func(in *anxiety.Inputs) { in.Searchable, in.EmbedPending = 10, 10 }, 8},
		{anxiety.RawAging, func(in *anxiety.Inputs) {
			for range 20 {
				in.UnprocessedRaw = append(in.UnprocessedRaw, anxiety.Raw{Length: 500, CapturedAt: now.Add(-48 * time.Hour)})
			}
		}, 16},
	}
	for _, c := range cases {
		t.Run(c.dim, func(t *testing.T) {
			in := fullIdentity()
			in.Now = now
			c.change(&in)
			r := anxiety.Compute(in)
			if r.Dimensions[c.dim].Score != 100 {
				t.Fatalf("%s score = %d, want 100", c.dim, r.Dimensions[c.dim].Score)
			}
			identity := r.Dimensions[anxiety.IdentityCoherence].Score
			wantOverall := (100*int(anxiety.Weight(c.dim)*anxiety.WeightTotal+0.5) + identity*10) / anxiety.WeightTotal
			if r.OverallScore != wantOverall {
				t.Errorf("overall = %d, want %d (identity %d)", r.OverallScore, wantOverall, identity)
			}
			if identity == 0 && r.OverallScore != c.want {
				t.Errorf("overall = %d, want %d", r.OverallScore, c.want)
			}
		})
	}
}

func TestOverallTruncatesAndBands(t *testing.T) {
	// An empty stack: identity 100 (confidence 0) is the only score,
	// 100×10/60 = 16.67 truncates to 16.
	r := anxiety.Compute(anxiety.Inputs{Now: time.Unix(0, 0)})
	if r.OverallScore != 16 || r.OverallLevel != "Calm" {
		t.Errorf("empty stack: %d %s", r.OverallScore, r.OverallLevel)
	}
	if r.OverallConfidence != 0 {
		t.Errorf("empty stack confidence = %v", r.OverallConfidence)
	}
	if len(r.Dimensions) != 6 {
		t.Errorf("dimensions = %d", len(r.Dimensions))
	}
}

func TestRawAgingUsesInjectedClock(t *testing.T) {
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	raw := []anxiety.Raw{{Length: 500, CapturedAt: now.Add(-24 * time.Hour)}}
	r := anxiety.Compute(anxiety.Inputs{Now: now, UnprocessedRaw: raw})
	if got := r.Dimensions[anxiety.RawAging].Score; got != 3 {
		t.Errorf("exactly 24h old is not aging yet: score %d, want 3", got)
	}
	r = anxiety.Compute(anxiety.Inputs{Now: now.Add(time.Second), UnprocessedRaw: raw})
	if got := r.Dimensions[anxiety.RawAging].Score; got != 45 {
		t.Errorf("24h+1s old is aging: score %d, want 45", got)
	}
}

func TestIdentityConfidenceComponents(t *testing.T) {
	cases := []struct {
		name string
		in   anxiety.Inputs
		want float64
	}{
		{"empty", anxiety.Inputs{}, 0},
		{"full", fullIdentity(), 1},
		{"goals only", anxiety.Inputs{ActiveGoals: 10}, 0.15},
		{"drives 1 of 3", anxiety.Inputs{Drives: 1}, 0.05},
		{"one reflected episode", anxiety.Inputs{Episodes: []anxiety.Episode{{HasLessons: true}}}, 0.105},
	}
	for _, c := range cases {
		if got := anxiety.IdentityConfidence(c.in); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRecommendationsFollowDimensions(t *testing.T) {
	r := anxiety.Compute(anxiety.Inputs{Now: time.Unix(0, 0), PendingSuggestions: 40})
	got := fmt.Sprint(r.Recommendations)
	if len(r.Recommendations) != 2 || r.Recommendations[0].Dimension != anxiety.IdentityCoherence || r.Recommendations[1].Dimension != anxiety.SuggestionBacklog {
		t.Errorf("recommendations = %s", got)
	}
}
