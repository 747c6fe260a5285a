package anxiety_test

import (
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/anxiety"
)

// TestHysteresisBoundaries walks every threshold of digest §2.3 from every
// previous level: enter Aware ≥35 / leave <25, Elevated ≥55 / <45, High
// ≥75 / <65, Critical ≥90 / <80, one level per step.
func TestHysteresisBoundaries(t *testing.T) {
	cases := []struct {
		previous string
		score    int
		want     string
	}{
		// No previous level: the bands apply.
		{"", 30, "Calm"}, {"", 31, "Aware"}, {"", 51, "Elevated"}, {"", 71, "High"}, {"", 86, "Critical"},
		{"Bogus", 60, "Elevated"},
		// Calm: enters Aware at 35, not at 34 even though 31-34 is Aware's band.
		{"Calm", 0, "Calm"}, {"Calm", 34, "Calm"}, {"Calm", 35, "Aware"},
		// One level at a time: a jump to 100 from Calm reaches Aware only.
		{"Calm", 100, "Aware"},
		// Aware: leaves below 25, enters Elevated at 55.
		{"Aware", 25, "Aware"}, {"Aware", 24, "Calm"}, {"Aware", 0, "Calm"},
		{"Aware", 54, "Aware"}, {"Aware", 55, "Elevated"}, {"Aware", 100, "Elevated"},
		// Elevated: leaves below 45, enters High at 75.
		{"Elevated", 45, "Elevated"}, {"Elevated", 44, "Aware"}, {"Elevated", 0, "Aware"},
		{"Elevated", 74, "Elevated"}, {"Elevated", 75, "High"}, {"Elevated", 100, "High"},
		// High: leaves below 65, enters Critical at 90.
		{"High", 65, "High"}, {"High", 64, "Elevated"}, {"High", 0, "Elevated"},
		{"High", 89, "High"}, {"High", 90, "Critical"},
		// Critical: leaves below 80, has nothing above.
		{"Critical", 80, "Critical"}, {"Critical", 79, "High"}, {"Critical", 0, "High"}, {"Critical", 100, "Critical"},
	}
	for _, c := range cases {
		if got := anxiety.HysteresisLevel(c.previous, c.score); got != c.want {
			t.Errorf("HysteresisLevel(%q, %d) = %q, want %q", c.previous, c.score, got, c.want)
		}
	}
}

// TestReportCarriesPreviousAndHysteresisLevel: overall_level stays the
// band of the score (compatible with reports before hysteresis), while
// hysteresis_level follows the recorded previous level.
func TestReportCarriesPreviousAndHysteresisLevel(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// 16: the score of an empty stack (identity coherence alone).
	fresh := anxiety.Compute(anxiety.Inputs{Now: now})
	if fresh.PreviousLevel != nil || fresh.HysteresisLevel != fresh.OverallLevel || fresh.OverallLevel != "Calm" {
		t.Fatalf("no previous level: previous %v, hysteresis %q, band %q", fresh.PreviousLevel, fresh.HysteresisLevel, fresh.OverallLevel)
	}
	prev := &anxiety.Observation{Level: "Elevated", At: now.Add(-time.Hour)}
	r := anxiety.Compute(anxiety.Inputs{Now: now, Previous: prev})
	if r.OverallLevel != "Calm" || r.HysteresisLevel != "Aware" || r.PreviousLevel != prev {
		t.Fatalf("from Elevated at %d: band %q, hysteresis %q, previous %v", r.OverallScore, r.OverallLevel, r.HysteresisLevel, r.PreviousLevel)
	}
}
