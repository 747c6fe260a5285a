package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/stack"
)

// TestMemoriesReadModelWeakFilter checks the listing's weak filter and the
// stats' weak count against the strength computed at read time, at the
// exact instant decay crosses 0.5, for lazy decay on and off.
func TestMemoriesReadModelWeakFilter(t *testing.T) {
	l := newMemLog(t)
	ctx := context.Background()
	l.append(memAlice, memAgentCreated(memAlice, "m1", 4), memNoteCreated(memAlice, "n1", "a note", memT0))
	v, ok := l.view(memAlice, "n1")
	if !ok {
		t.Fatal("note missing")
	}
	weakAt := memory.WeakAt(v.Vitality)
	if weakAt.IsZero() || !weakAt.After(v.Vitality.Since) {
		t.Fatalf("weak at %v for %+v", weakAt, v.Vitality)
	}
	for _, tc := range []struct {
		name     string
		now      time.Time
		decay    bool
		tier     memory.Tier
		listed   bool
		weakStat int
	}{
		{"a day before", weakAt.Add(-24 * time.Hour), true, memory.TierFading, true, 0},
		{"at the edge: still 0.5", weakAt, true, memory.TierFading, true, 0},
		{"a second after", weakAt.Add(time.Second), true, memory.TierWeak, false, 1},
		{"lazy decay off", weakAt.Add(1000 * 24 * time.Hour), false, memory.TierStrong, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.decay {
				l.append(memAlice, stack.SettingsChanged{AgentRef: memAlice, Settings: func() stack.Settings {
					s := stack.Defaults()
					s.LazyDecay = false
					return s
				}(), Changed: []string{"lazy_decay"}, ChangedAt: memT0})
			}
			v, _ := l.view(memAlice, "n1")
			v.ApplyStrength(tc.now)
			if v.Tier != tc.tier {
				t.Fatalf("tier %s (strength %v), want %s", v.Tier, v.Strength, tc.tier)
			}
			page, err := l.rm.ListMemories(ctx, memory.ListQuery{UserID: memAlice.UserID, AgentID: memAlice.AgentID, Now: tc.now})
			if err != nil {
				t.Fatal(err)
			}
			if listed := len(page.Memories) == 1; listed != tc.listed {
				t.Fatalf("listed without include_weak: %v, want %v", listed, tc.listed)
			}
			page, err = l.rm.ListMemories(ctx, memory.ListQuery{UserID: memAlice.UserID, AgentID: memAlice.AgentID, Now: tc.now, IncludeWeak: true})
			if err != nil || len(page.Memories) != 1 {
				t.Fatalf("include_weak lists %d, %v", len(page.Memories), err)
			}
			st, found, err := l.rm.AgentStats(ctx, memAlice.UserID, memAlice.AgentID, tc.now)
			if err != nil || !found || st.Weak != tc.weakStat {
				t.Fatalf("stats weak = %d (found %v, %v), want %d", st.Weak, found, err, tc.weakStat)
			}
		})
	}
	if _, found, err := l.rm.AgentStats(ctx, memBob.UserID, memAlice.AgentID, memT0); found || err != nil {
		t.Fatalf("another user's agent: found %v, %v", found, err)
	}
}
