package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseScoreFile(t *testing.T) {
	data, err := os.ReadFile("testdata/score-sample.json") // real score.py --json output
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseScoreFile(data)
	if err != nil {
		t.Fatal(err)
	}
	want := groupScore{N: 4, R1: 0.5, R5: 0.875, R10: 0.875, MRR10: 0.75, NDCG10: 0.7544456402014998}
	if got := s.Groups[subsetExclAdv]; got != want {
		t.Fatalf("%s = %+v, want %+v", subsetExclAdv, got, want)
	}
	if got := s.categories(); !reflect.DeepEqual(got, []string{"adversarial", "multi-hop", "single-hop"}) {
		t.Fatalf("categories %v", got)
	}

	for name, bad := range map[string]string{
		"not json":   "queries: 5 scored",
		"no ALL":     `{"groups": {"cat:x": {"n": 1}}}`,
		"wrong type": `{"groups": {"ALL": {"n": "five"}}}`,
	} {
		if _, err := parseScoreFile([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestGroupScoreMetric(t *testing.T) {
	g := groupScore{R1: 1, R5: 5, R10: 10, MRR10: 11, NDCG10: 12}
	for _, tc := range []struct {
		name string
		want float64
		ok   bool
	}{{"R@1", 1, true}, {"R@5", 5, true}, {"R@10", 10, true}, {"MRR@10", 11, true}, {"nDCG@10", 12, true}, {"P@10", 0, false}} {
		if got, ok := g.metric(tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("metric(%q) = %v, %v", tc.name, got, ok)
		}
	}
}

func TestFormatTable(t *testing.T) {
	rows := []tableRow{
		{"bm25", groupScore{N: 760, R5: 0.483, R10: 0.558, MRR10: 0.389, NDCG10: 0.417}},
		{"hybrid", groupScore{N: 760, R5: 0.6, R10: 0.7001, MRR10: 0.5, NDCG10: 0.55}},
	}
	text := formatTable(rows, false)
	wantText := "" +
		"mode      n    R@5   R@10  MRR@10  nDCG@10\n" +
		"bm25    760  0.483  0.558   0.389    0.417\n" +
		"hybrid  760  0.600  0.700   0.500    0.550\n"
	if text != wantText {
		t.Fatalf("text table:\n%s\nwant:\n%s", text, wantText)
	}
	md := formatTable(rows, true)
	wantMD := "" +
		"| mode | n | R@5 | R@10 | MRR@10 | nDCG@10 |\n" +
		"|---|---:|---:|---:|---:|---:|\n" +
		"| bm25 | 760 | 0.483 | 0.558 | 0.389 | 0.417 |\n" +
		"| hybrid | 760 | 0.600 | 0.700 | 0.500 | 0.550 |\n"
	if md != wantMD {
		t.Fatalf("markdown table:\n%s\nwant:\n%s", md, wantMD)
	}
}

func TestSubsetRowsKeepsOrderAndSkipsMissing(t *testing.T) {
	scores := map[string]scoreFile{
		"bm25":    {Groups: map[string]groupScore{subsetAll: {N: 1}}},
		"keyword": {Groups: map[string]groupScore{subsetAll: {N: 2}}},
	}
	rows := subsetRows([]string{"bm25", "hybrid", "keyword"}, scores, subsetAll)
	if len(rows) != 2 || rows[0].Name != "bm25" || rows[1].Name != "keyword" || rows[1].Score.N != 2 {
		t.Fatalf("rows %+v", rows)
	}
}

func TestTargets(t *testing.T) {
	g := func(r10, mrr float64) groupScore { return groupScore{R10: r10, MRR10: mrr} }
	spec := targetSpec{metrics: []string{"R@10", "MRR@10"}}
	tests := []struct {
		name  string
		spec  targetSpec
		rows  []tableRow
		wants []string // substrings of the misses, in order
	}{
		{
			name: "all met",
			spec: spec,
			rows: []tableRow{{"bm25", g(.5, .4)}, {"keyword", g(.5, .41)}, {"vector", g(.6, .3)}, {"hybrid", g(.6, .42)}},
		},
		{
			name:  "hybrid must beat keyword, not tie it",
			spec:  spec,
			rows:  []tableRow{{"keyword", g(.5, .41)}, {"hybrid", g(.51, .41)}},
			wants: []string{"hybrid MRR@10 0.4100 is not above keyword 0.4100"},
		},
		{
			name:  "keyword below baseline",
			spec:  spec,
			rows:  []tableRow{{"bm25", g(.5, .4)}, {"keyword", g(.49, .4)}},
			wants: []string{"keyword R@10 0.4900 < bm25 0.5000"},
		},
		{
			name:  "hybrid below the better side, per metric",
			spec:  spec,
			rows:  []tableRow{{"bm25", g(.5, .4)}, {"keyword", g(.55, .45)}, {"vector", g(.6, .3)}, {"hybrid", g(.58, .44)}},
			wants: []string{"hybrid R@10 0.5800 < vector 0.6000", "hybrid MRR@10 0.4400 < keyword 0.4500"},
		},
		{
			name: "tolerance",
			spec: targetSpec{metrics: []string{"R@10"}, tolerance: 0.02},
			rows: []tableRow{{"vector", g(.6, 0)}, {"hybrid", g(.59, 0)}},
		},
		{
			name: "rules without both systems are skipped",
			spec: spec,
			rows: []tableRow{{"bm25", g(.9, .9)}, {"hybrid", g(.1, .1)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			misses, err := tc.spec.check(tc.rows)
			if err != nil {
				t.Fatal(err)
			}
			if len(misses) != len(tc.wants) {
				t.Fatalf("misses %q, want %q", misses, tc.wants)
			}
			for i, w := range tc.wants {
				if !strings.Contains(misses[i], w) {
					t.Errorf("miss %d = %q, want %q", i, misses[i], w)
				}
			}
		})
	}
	if _, err := (targetSpec{metrics: []string{"P@3"}}).check([]tableRow{{"bm25", g(0, 0)}, {"keyword", g(0, 0)}}); err == nil {
		t.Fatal("unknown metric accepted")
	}
	err := &targetsFailedError{failures: []string{"a", "b"}}
	if got := err.Error(); got != "quality targets missed:\n  a\n  b" {
		t.Fatalf("error text %q", got)
	}
}
