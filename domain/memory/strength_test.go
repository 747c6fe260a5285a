package memory_test

import (
	"math"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/memory"
)

func TestTierBandEdges(t *testing.T) {
	for _, tc := range []struct {
		strength float64
		want     memory.Tier
	}{
		{1, memory.TierStrong},
		{0.8, memory.TierStrong},
		{0.7999, memory.TierFading},
		{0.5, memory.TierFading},
		{0.4999, memory.TierWeak},
		{0.2, memory.TierWeak},
		{0.1999, memory.TierDormant},
		{0.0001, memory.TierDormant},
		{0, memory.TierForgotten},
	} {
		if got := memory.TierOf(tc.strength); got != tc.want {
			t.Errorf("TierOf(%v) = %s, want %s", tc.strength, got, tc.want)
		}
	}
}

func TestStrengthDecay(t *testing.T) {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	note := memory.Vitality{Type: memory.Note, Base: 1, Since: since}
	// 1 % per 30 days: 0.8 is reached after 20 half-lives = 600 days.
	for _, tc := range []struct {
		name  string
		v     memory.Vitality
		after time.Duration
		decay bool
		want  float64
		tier  memory.Tier
	}{
		{"fresh", note, 0, true, 1, memory.TierStrong},
		{"one half-life", note, 30 * day, true, 0.99, memory.TierStrong},
		{"exactly at the strong edge", note, 600 * day, true, 0.8, memory.TierStrong},
		{"just past the strong edge", note, 600*day + 3*time.Hour, true, 0.79995833, memory.TierFading},
		{"fading", note, 630 * day, true, 0.79, memory.TierFading},
		{"exactly at the fading edge", note, 1500 * day, true, 0.5, memory.TierFading},
		{"weak", note, 1530 * day, true, 0.49, memory.TierWeak},
		{"exactly at the weak edge", note, 2400 * day, true, 0.2, memory.TierWeak},
		{"dormant", note, 2430 * day, true, 0.19, memory.TierDormant},
		{"decay floors above forgotten", note, 100000 * day, true, memory.MinDecayedStrength, memory.TierDormant},
		{"lazy decay off", note, 2430 * day, false, 1, memory.TierStrong},
		{"protected never decays", memory.Vitality{Type: memory.Note, Base: 1, Since: since, Protected: true}, 2430 * day, true, 1, memory.TierStrong},
		{"forgotten is 0", memory.Vitality{Type: memory.Note, Base: 1, Since: since, Forgotten: true}, 0, true, 0, memory.TierForgotten},
		{"aspiration goals fade 6x slower", memory.Vitality{Type: memory.Goal, GoalType: "aspiration", Base: 1, Since: since}, 180 * day, true, 0.99, memory.TierStrong},
		{"commitment goals", memory.Vitality{Type: memory.Goal, GoalType: "commitment", Base: 1, Since: since}, 365 * day, true, 0.99, memory.TierStrong},
		{"raw entries never decay", memory.Vitality{Type: memory.RawEntry, Base: 1, Since: since}, 2430 * day, true, 1, memory.TierStrong},
		{"recovered starts weak", memory.Vitality{Type: memory.Note, Base: memory.RecoveredStrength, Since: since}, 0, true, 0.25, memory.TierWeak},
		{"recovered stays weak for 150 days", memory.Vitality{Type: memory.Note, Base: memory.RecoveredStrength, Since: since}, 150*day - time.Hour, true, 0.200013889, memory.TierWeak},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := memory.Strength(since.Add(tc.after), tc.v, tc.decay)
			if math.Abs(got-tc.want) > 1e-8 {
				t.Fatalf("strength = %v, want %v", got, tc.want)
			}
			if tier := memory.TierOf(got); tier != tc.tier {
				t.Fatalf("tier = %s, want %s", tier, tc.tier)
			}
		})
	}
}

func TestWeakAtMatchesStrength(t *testing.T) {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := memory.Vitality{Type: memory.Episode, Base: 0.9, Since: since}
	at := memory.WeakAt(v)
	if s := memory.Strength(at.Add(-time.Minute), v, true); memory.TierOf(s) == memory.TierWeak {
		t.Fatalf("a minute before WeakAt the memory is already weak (%v)", s)
	}
	if s := memory.Strength(at.Add(time.Hour), v, true); memory.TierOf(s) != memory.TierWeak {
		t.Fatalf("an hour after WeakAt the memory is %s (%v), want weak", memory.TierOf(s), s)
	}
	if got := memory.WeakAt(memory.Vitality{Type: memory.Value, Base: 0.3, Since: since, Protected: true}); !got.Equal(since) {
		t.Fatalf("a protected memory at 0.3 is weak (protection stops decay, not weakness), WeakAt = %v", got)
	}
	if !memory.WeakAt(memory.Vitality{Type: memory.Value, Base: 1, Since: since, Protected: true}).IsZero() {
		t.Fatal("a protected memory must never become weak")
	}
	if got := memory.WeakAt(memory.Vitality{Type: memory.Note, Base: 0.2, Since: since}); !got.Equal(since) {
		t.Fatalf("a memory below 0.5 is weak from Since, got %v", got)
	}
}

func TestWeakenAndVerify(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"weaken", memory.Weakened(0.8, 0.3), 0.5},
		{"weaken floors at the minimum", memory.Weakened(0.2, 0.5), memory.MinDecayedStrength},
		{"verify", memory.Verified(0.5), 0.6},
		{"verify caps at 1", memory.Verified(0.95), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestInitialVitality(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		typ       memory.Type
		content   string
		base      float64
		protected bool
		goalType  string
	}{
		{memory.Note, `{"content":"x"}`, 1, false, ""},
		{memory.Value, `{"name":"n","statement":"s"}`, 1, true, ""},
		{memory.Drive, `{"drive_type":"growth"}`, 1, true, ""},
		{memory.Note, `{"content":"x","strength":0.4,"is_protected":true}`, 0.4, true, ""},
		{memory.Value, `{"name":"n","statement":"s","is_protected":false}`, 1, false, ""},
		{memory.Note, `{"content":"x","strength":0}`, memory.MinDecayedStrength, false, ""},
		{memory.Goal, `{"title":"t","goal_type":"commitment"}`, 1, false, "commitment"},
	} {
		v := memory.InitialVitality(tc.typ, []byte(tc.content), at)
		if v.Base != tc.base || v.Protected != tc.protected || v.GoalType != tc.goalType || !v.Since.Equal(at) || v.Type != tc.typ {
			t.Errorf("%s %s: %+v", tc.typ, tc.content, v)
		}
	}
}
