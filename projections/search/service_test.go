package search_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

// filterFixture holds memories that differ in type, tags and time, all
// mentioning "kubernetes" so every mode finds them.
type filterFixture struct {
	s                          *searchtest.Env
	noteA, noteB, belief, goal string
	noteAt, noteBAt, beliefAt  time.Time
}

func newFilterFixture(t *testing.T) filterFixture {
	s := searchtest.New(t, searchtest.Options{})
	f := filterFixture{s: s, noteAt: t0, noteBAt: t0.Add(time.Hour), beliefAt: t0.Add(2 * time.Hour)}
	f.noteA = s.Note(t, "u1", "ops", "the kubernetes cluster was upgraded", []string{"infra", "prod"}, f.noteAt)
	f.noteB = s.Note(t, "u1", "ops", "kubernetes pods restarted after upgrade", []string{"infra"}, f.noteBAt)
	f.belief = s.Create(t, "u1", "ops", memory.Belief, map[string]any{"statement": "kubernetes upgrades need a canary"}, []string{"prod"}, f.beliefAt)
	f.goal = s.Create(t, "u1", "ops", memory.Goal, map[string]any{"title": "migrate kubernetes to the new cluster"}, nil, t0.Add(3*time.Hour))
	s.Note(t, "u1", "ops", "lunch was pasta", nil, t0)
	return f
}

func TestModesFindRelevantMemories(t *testing.T) {
	f := newFilterFixture(t)
	for _, mode := range allModes {
		resp := run(t, f.s, search.Request{UserID: "u1", AgentID: "ops", Query: "kubernetes upgrade", Mode: mode, Explain: true})
		got := ids(resp)
		if len(got) < 3 {
			t.Fatalf("%s: want at least 3 results, got %v", mode, got)
		}
		for _, r := range resp.Results {
			e := r.Explain
			switch mode {
			case search.ModeVector:
				if e.VectorScore == nil || e.KeywordScore != nil || *e.VectorScore != r.Score {
					t.Fatalf("vector mode explain %+v for score %v", e, r.Score)
				}
			case search.ModeKeyword:
				if e.KeywordScore == nil || e.VectorScore != nil || *e.KeywordScore != r.Score {
					t.Fatalf("keyword mode explain %+v for score %v", e, r.Score)
				}
			}
			if e.FusedScore != r.Score {
				t.Fatalf("%s: fused score %v != score %v", mode, e.FusedScore, r.Score)
			}
		}
		if mode == search.ModeKeyword && slices.Contains(got, f.goal) == false {
			t.Fatalf("keyword: the goal mentioning kubernetes is missing from %v", got)
		}
	}
}

func TestFiltersAloneAndCombined(t *testing.T) {
	f := newFilterFixture(t)
	cases := []struct {
		name   string
		filter search.Filter
		want   []string
	}{
		{"types", search.Filter{Types: []memory.Type{memory.Note}}, []string{f.noteA, f.noteB}},
		{"two types", search.Filter{Types: []memory.Type{memory.Belief, memory.Goal}}, []string{f.belief, f.goal}},
		{"one tag", search.Filter{Tags: []string{"prod"}}, []string{f.noteA, f.belief}},
		{"all tags", search.Filter{Tags: []string{"infra", "prod"}}, []string{f.noteA}},
		{"unknown tag", search.Filter{Tags: []string{"nope"}}, nil},
		{"after inclusive", search.Filter{CreatedAfter: f.beliefAt}, []string{f.belief, f.goal}},
		{"before exclusive", search.Filter{CreatedBefore: f.noteBAt}, []string{f.noteA}},
		{"window", search.Filter{CreatedAfter: f.noteBAt, CreatedBefore: f.beliefAt}, []string{f.noteB}},
		{"type and tag", search.Filter{Types: []memory.Type{memory.Note}, Tags: []string{"prod"}}, []string{f.noteA}},
		{"type, tag and time", search.Filter{Types: []memory.Type{memory.Belief, memory.Note}, Tags: []string{"prod"}, CreatedAfter: f.noteBAt}, []string{f.belief}},
	}
	for _, c := range cases {
		for _, mode := range allModes {
			t.Run(c.name+"/"+string(mode), func(t *testing.T) {
				resp := run(t, f.s, search.Request{UserID: "u1", AgentID: "ops", Query: "kubernetes upgrade cluster canary pods", Mode: mode, Filter: c.filter})
				// The vector side may also return weak matches of the
				// filter; every returned memory must pass it and every
				// expected one must be there.
				got := ids(resp)
				for _, id := range c.want {
					if !slices.Contains(got, id) {
						t.Fatalf("want %s among %v", id, got)
					}
				}
				if mode == search.ModeKeyword && !sameSet(got, c.want) {
					t.Fatalf("keyword: got %v, want %v", got, c.want)
				}
				for _, r := range resp.Results {
					if !passes(r.Memory, c.filter) {
						t.Fatalf("%s does not pass the filter", r.Memory.ID)
					}
				}
			})
		}
	}
}

func passes(v memory.Excerpt, f search.Filter) bool {
	if len(f.Types) > 0 && !slices.Contains(f.Types, v.Type) {
		return false
	}
	for _, tag := range f.Tags {
		if !slices.Contains(v.Tags, tag) {
			return false
		}
	}
	if !f.CreatedAfter.IsZero() && v.CreatedAt.Before(f.CreatedAfter) {
		return false
	}
	return f.CreatedBefore.IsZero() || v.CreatedAt.Before(f.CreatedBefore)
}

// A filter that matches one memory among many better candidates must still
// return it: filters run inside each index query, not on a cut top-k.
func TestFilterIsAppliedBeforeTheLimit(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	for i := range 120 {
		s.Note(t, "u1", "a", fmt.Sprintf("release train %d shipped the release on time", i), []string{"bulk"}, t0)
	}
	rare := s.Create(t, "u1", "a", memory.Belief, map[string]any{"statement": "a release is risky"}, []string{"rare"}, t0.Add(-time.Hour))
	for _, mode := range allModes {
		for name, f := range map[string]search.Filter{
			"type":   {Types: []memory.Type{memory.Belief}},
			"tag":    {Tags: []string{"rare"}},
			"before": {CreatedBefore: t0},
		} {
			resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "release", Mode: mode, Limit: 1, Filter: f})
			if got := ids(resp); len(got) != 1 || got[0] != rare {
				t.Fatalf("%s/%s: got %v, want [%s]", mode, name, got, rare)
			}
		}
	}
}

func TestMinScore(t *testing.T) {
	f := newFilterFixture(t)
	for _, mode := range allModes {
		all := run(t, f.s, search.Request{UserID: "u1", AgentID: "ops", Query: "kubernetes upgrade", Mode: mode, Limit: 100})
		if len(all.Results) < 2 {
			t.Fatalf("%s: too few results to test min_score: %d", mode, len(all.Results))
		}
		cut := all.Results[1].Score
		resp := run(t, f.s, search.Request{UserID: "u1", AgentID: "ops", Query: "kubernetes upgrade", Mode: mode, Limit: 100, MinScore: cut})
		for _, r := range resp.Results {
			if r.Score < cut {
				t.Fatalf("%s: score %v below min_score %v", mode, r.Score, cut)
			}
		}
		n := 0
		for _, r := range all.Results {
			if r.Score >= cut {
				n++
			}
		}
		if len(resp.Results) != n {
			t.Fatalf("%s: min_score %v kept %d results, want %d", mode, cut, len(resp.Results), n)
		}
		if resp := run(t, f.s, search.Request{UserID: "u1", AgentID: "ops", Query: "kubernetes upgrade", Mode: mode, MinScore: 1}); len(resp.Results) != 0 && resp.Results[0].Score < 1 {
			t.Fatalf("%s: min_score 1 returned %v", mode, resp.Results[0].Score)
		}
	}
}

func TestLimit(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	for i := range 15 {
		s.Note(t, "u1", "a", fmt.Sprintf("standup notes day %d", i), nil, t0.Add(time.Duration(i)*time.Minute))
	}
	for _, mode := range allModes {
		for _, limit := range []int{1, 5, 10, 15} {
			resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "standup notes", Mode: mode, Limit: limit})
			if len(resp.Results) != limit {
				t.Fatalf("%s limit %d: got %d", mode, limit, len(resp.Results))
			}
		}
		for _, limit := range []int{-1, 0, 101} {
			_, err := s.Search.Search(context.Background(), search.Request{UserID: "u1", AgentID: "a", Query: "standup", Mode: mode, Limit: limit})
			wantKind(t, err, domain.KindInvalid)
		}
	}
}

func TestExactIdentifierRanksFirst(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	s.Note(t, "u1", "a", "deploy-v2.4.8-hotfix rolled out to staging", nil, t0.Add(3*time.Hour))
	s.Note(t, "u1", "a", "the hotfix deploy for v2 failed twice; another hotfix deploy is planned", nil, t0.Add(2*time.Hour))
	s.Note(t, "u1", "a", "deploy v2.4.7 to prod after the hotfix review", nil, t0.Add(time.Hour))
	exact := s.Note(t, "u1", "a", "rolled back deploy-v2.4.7-hotfix because of errors", nil, t0)
	for _, q := range []string{"deploy-v2.4.7-hotfix", "what happened to deploy-v2.4.7-hotfix?", "DEPLOY-V2.4.7-HOTFIX"} {
		for _, mode := range []search.Mode{search.ModeKeyword, search.ModeHybrid} {
			resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: q, Mode: mode})
			if got := ids(resp); len(got) == 0 || got[0] != exact {
				t.Fatalf("%s %q: want %s first, got %v", mode, q, exact, got)
			}
		}
	}
	// Parts of the identifier find it too.
	resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "hotfix", Mode: search.ModeKeyword})
	if !slices.Contains(ids(resp), exact) {
		t.Fatalf("a part of the identifier does not find it: %v", ids(resp))
	}
}

func TestStemmingAndCase(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	id := s.Note(t, "u1", "a", "We DEPLOYED the payments service", nil, t0)
	s.Note(t, "u1", "a", "unrelated lunch plans", nil, t0)
	for _, q := range []string{"deploying", "Deploys", "deployment payments"} {
		resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: q, Mode: search.ModeKeyword})
		if got := ids(resp); len(got) != 1 || got[0] != id {
			t.Fatalf("%q: got %v, want [%s]", q, got, id)
		}
	}
}

// A memory with no vector yet (provider down when written) is still found
// by hybrid search, and wins when only its keywords match.
func TestKeywordOnlyHitWinsInHybrid(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	for i := range 8 {
		s.Note(t, "u1", "a", fmt.Sprintf("incident review %d for the database outage", i), nil, t0)
	}
	s.Provider.SetDown(true)
	pending := s.Note(t, "u1", "a", "the zq-ticket-8841 escalation", nil, t0.Add(-time.Hour))
	s.Provider.SetDown(false)
	if n := s.VectorCount(t, "u1", "a"); n != 8 {
		t.Fatalf("want 8 vectors (one memory pending), have %d", n)
	}
	resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "zq-ticket-8841 incident", Mode: search.ModeHybrid, Explain: true})
	got := ids(resp)
	if len(got) == 0 || got[0] != pending {
		t.Fatalf("want the keyword-only hit %s first, got %v", pending, got)
	}
	if e := resp.Results[0].Explain; e.VectorScore != nil || e.KeywordRank == nil || *e.KeywordRank != 1 {
		t.Fatalf("explain of the keyword-only hit: %+v", e)
	}
}

func TestTimeBounds(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	at := t0.Add(123456789 * time.Nanosecond)
	id := s.Note(t, "u1", "a", "quarterly planning meeting", nil, at)
	for _, mode := range allModes {
		check := func(f search.Filter, want bool) {
			t.Helper()
			resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "quarterly planning", Mode: mode, Filter: f})
			if got := slices.Contains(ids(resp), id); got != want {
				t.Fatalf("%s %+v: found=%v, want %v", mode, f, got, want)
			}
		}
		check(search.Filter{CreatedAfter: at}, true)                           // inclusive
		check(search.Filter{CreatedAfter: at.Add(time.Nanosecond)}, false)     // after it
		check(search.Filter{CreatedBefore: at}, false)                         // exclusive
		check(search.Filter{CreatedBefore: at.Add(time.Nanosecond)}, true)     // just before the bound
		check(search.Filter{CreatedAfter: at, CreatedBefore: at.Add(1)}, true) // a 1 ns window holds it
	}
	_, err := s.Search.Search(context.Background(), search.Request{UserID: "u1", AgentID: "a", Query: "x", Limit: 1,
		Filter: search.Filter{CreatedAfter: at, CreatedBefore: at}})
	wantKind(t, err, domain.KindInvalid)
}

func TestTenantIsolation(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	mine := s.Note(t, "u1", "claire", "the secret launch code is azalea", nil, t0)
	theirs := s.Note(t, "u2", "claire", "the secret launch code is begonia", nil, t0)
	s.Note(t, "u2", "other", "only u2 has this agent", nil, t0)
	for _, mode := range allModes {
		for user, want := range map[string]string{"u1": mine, "u2": theirs} {
			resp := run(t, s, search.Request{UserID: user, AgentID: "claire", Query: "secret launch code azalea begonia", Mode: mode, Limit: 100})
			if got := ids(resp); len(got) != 1 || got[0] != want {
				t.Fatalf("%s %s: got %v, want only [%s]", mode, user, got, want)
			}
		}
		_, err := s.Search.Search(context.Background(), search.Request{UserID: "u1", AgentID: "other", Query: "agent", Mode: mode, Limit: 10})
		wantKind(t, err, domain.KindNotFound)
		_, err = s.Search.Search(context.Background(), search.Request{UserID: "u1", AgentID: "nobody", Query: "agent", Mode: mode, Limit: 10})
		wantKind(t, err, domain.KindNotFound)
	}
}

func TestForgottenPurgedAndUpdated(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	ctx := context.Background()
	keep := s.Note(t, "u1", "a", "garden tomatoes need water", nil, t0)
	forgot := s.Note(t, "u1", "a", "garden tomatoes were eaten by birds", nil, t0)
	purged := s.Note(t, "u1", "a", "garden tomatoes planted in May", nil, t0)
	edited := s.Note(t, "u1", "a", "garden tomatoes were sold", nil, t0)
	if _, err := s.Memories.Forget(ctx, searchtest.Meta("u1"), forgot, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Memories.Purge(ctx, searchtest.Meta("u1"), purged, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Memories.Patch(ctx, searchtest.Meta("u1"), edited, patchContent(`{"content": "the shed roof was repaired"}`)); err != nil {
		t.Fatal(err)
	}
	for _, mode := range allModes {
		got := ids(run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "garden tomatoes", Mode: mode, Limit: 100}))
		if !slices.Contains(got, keep) || slices.Contains(got, forgot) || slices.Contains(got, purged) {
			t.Fatalf("%s: got %v; want %s, not %s (forgotten) or %s (purged)", mode, got, keep, forgot, purged)
		}
		if mode == search.ModeKeyword && slices.Contains(got, edited) {
			t.Fatalf("keyword: the old text of %s still matches", edited)
		}
		got = ids(run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "shed roof repaired", Mode: mode}))
		if len(got) == 0 || got[0] != edited {
			t.Fatalf("%s: the new text of %s does not rank first: %v", mode, edited, got)
		}
	}
	if err := s.Memories.DeleteAgent(ctx, searchtest.Meta("u1"), "a"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Search.Search(ctx, search.Request{UserID: "u1", AgentID: "a", Query: "garden", Limit: 10})
	wantKind(t, err, domain.KindNotFound)
	if n := len(s.Index.Collections("u1/a/")); n != 0 {
		t.Fatalf("deleted agent still has %d vector collections", n)
	}
}

func TestReadYourWrites(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	for i := range 20 {
		text := fmt.Sprintf("observation number %d about wombat%d", i, i)
		id := s.Note(t, "u1", "a", text, nil, time.Time{})
		for _, mode := range allModes {
			got := ids(run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: fmt.Sprintf("wombat%d", i), Mode: mode, Limit: 1}))
			if len(got) != 1 || got[0] != id {
				t.Fatalf("%s: write %d not visible at once: %v", mode, i, got)
			}
		}
	}
}

func TestQuerySyntaxNeverErrors(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	s.Note(t, "u1", "a", `he said "near" the (old) tower: 5* rating - NEAR miss`, nil, t0)
	for _, q := range []string{`"`, `"unbalanced`, `*`, `foo*`, `(`, `)`, `NEAR`, `NEAR(a b, 3)`, `-`, `-tower`, `:`, `body:tower`,
		`AND`, `OR OR`, `NOT tower`, `^tower`, `a + b`, `{body}: x`, `'`, "\x00", `"" "" ""`, `tower"`, `🙂`, `\`} {
		for _, mode := range allModes {
			if _, err := s.Search.Search(context.Background(), search.Request{UserID: "u1", AgentID: "a", Query: q, Mode: mode, Limit: 5}); err != nil {
				t.Fatalf("%s %q: %v", mode, q, err)
			}
		}
	}
	got := ids(run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: `NEAR(tower)`, Mode: search.ModeKeyword}))
	if len(got) != 1 {
		t.Fatalf("a query with FTS5 syntax in it finds nothing: %v", got)
	}
}

func TestProviderDown(t *testing.T) {
	f := newFilterFixture(t)
	f.s.Provider.SetDown(true)
	_, err := f.s.Search.Search(context.Background(), search.Request{UserID: "u1", AgentID: "ops", Query: "kubernetes", Mode: search.ModeVector, Limit: 10})
	wantKind(t, err, domain.KindProviderUnavailable)
	resp := run(t, f.s, search.Request{UserID: "u1", AgentID: "ops", Query: "kubernetes", Mode: search.ModeHybrid})
	if resp.Degraded != search.DegradedVectorUnavailable || len(resp.Results) < 4 {
		t.Fatalf("hybrid with the provider down: degraded %q, %d results", resp.Degraded, len(resp.Results))
	}
	resp = run(t, f.s, search.Request{UserID: "u1", AgentID: "ops", Query: "kubernetes", Mode: search.ModeKeyword})
	if resp.Degraded != "" || len(resp.Results) < 4 {
		t.Fatalf("keyword mode needs no provider: degraded %q, %d results", resp.Degraded, len(resp.Results))
	}
}

func TestValidation(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	s.Note(t, "u1", "a", "x", nil, t0)
	for name, req := range map[string]search.Request{
		"blank query": {Query: "  "},
		"long query":  {Query: string(make([]rune, search.MaxQueryRune+1))},
		"mode":        {Query: "x", Mode: "semantic"},
		"min_score":   {Query: "x", MinScore: 1.5},
		"negative":    {Query: "x", MinScore: -0.1},
		"drives":      {Query: "x", Filter: search.Filter{Types: []memory.Type{memory.Drive}}},
	} {
		req.UserID, req.AgentID, req.Limit = "u1", "a", 10
		_, err := s.Search.Search(context.Background(), req)
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		wantKind(t, err, domain.KindInvalid)
	}
}

// weaken lowers a memory's strength by by through the memory commands.
func weaken(t *testing.T, s *searchtest.Env, userID, id string, by float64) {
	t.Helper()
	if _, err := s.Memories.Weaken(context.Background(), searchtest.Meta(userID), id, commands.StrengthChange{By: &by}, nil); err != nil {
		t.Fatalf("weaken %s: %v", id, err)
	}
}

// Weak and dormant memories are hidden like GET /memories hides them,
// forgotten ones are kept in the indexes, and the two flags let each
// through, in every mode; another user's forgotten memory stays out.
func TestSearchWeakAndForgotten(t *testing.T) {
	s := searchtest.New(t, frozen) // strengths exactly as set, however slow the run
	ctx := context.Background()
	strong := s.Note(t, "u1", "a", "otter pond survey", nil, t0)
	fading := s.Note(t, "u1", "a", "otter pond survey again", nil, t0.Add(time.Minute))
	weak := s.Note(t, "u1", "a", "otter pond survey notes", nil, t0.Add(2*time.Minute))
	dormant := s.Note(t, "u1", "a", "otter pond survey draft", nil, t0.Add(3*time.Minute))
	forgotten := s.Note(t, "u1", "a", "otter pond survey old", nil, t0.Add(4*time.Minute))
	otherUsers := s.Note(t, "u2", "a", "otter pond survey of u2", nil, t0)
	weaken(t, s, "u1", fading, 0.3)  // 0.7: fading, not weak
	weaken(t, s, "u1", weak, 0.6)    // 0.4: weak
	weaken(t, s, "u1", dormant, 0.9) // 0.1: dormant
	for _, f := range []struct{ user, id string }{{"u1", forgotten}, {"u2", otherUsers}} {
		if _, err := s.Memories.Forget(ctx, searchtest.Meta(f.user), f.id, nil); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name                          string
		includeWeak, includeForgotten bool
		want                          []string
	}{
		{"default: strong and fading only", false, false, []string{strong, fading}},
		{"include_weak", true, false, []string{strong, fading, weak, dormant}},
		{"include_forgotten", false, true, []string{strong, fading, forgotten}},
		{"both", true, true, []string{strong, fading, weak, dormant, forgotten}},
	}
	for _, c := range cases {
		for _, mode := range allModes {
			resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "otter pond survey", Mode: mode, Limit: 20,
				IncludeWeak: c.includeWeak, IncludeForgotten: c.includeForgotten})
			if got := ids(resp); !sameSet(got, c.want) {
				t.Errorf("%s, %s: got %v, want %v", c.name, mode, got, c.want)
			}
			for _, r := range resp.Results {
				wantStrength := map[string]float64{strong: 1, fading: 0.7, weak: 0.4, dormant: 0.1, forgotten: 0}[r.Memory.ID]
				if math.Abs(r.Strength-wantStrength) > 1e-6 || r.Memory.Vitality.Forgotten != (r.Memory.ID == forgotten) {
					t.Errorf("%s, %s: %s has strength %v forgotten %v, want %v %v", c.name, mode, r.Memory.ID, r.Strength,
						r.Memory.Vitality.Forgotten, wantStrength, r.Memory.ID == forgotten)
				}
			}
		}
	}
	// Recovering brings the memory back weak (memory.RecoveredStrength):
	// found with include_weak, not forgotten any more; verifying it makes
	// it strong enough for default searches again.
	if _, err := s.Memories.Recover(ctx, searchtest.Meta("u1"), forgotten, nil); err != nil {
		t.Fatal(err)
	}
	for _, mode := range allModes {
		if got := ids(run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "otter pond survey", Mode: mode, Limit: 20})); !sameSet(got, []string{strong, fading}) {
			t.Errorf("after recover, %s: got %v", mode, got)
		}
		resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "otter pond survey", Mode: mode, Limit: 20, IncludeWeak: true})
		i := slices.Index(ids(resp), forgotten)
		if i < 0 || resp.Results[i].Memory.Vitality.Forgotten || math.Abs(resp.Results[i].Strength-memory.RecoveredStrength) > 1e-6 {
			t.Errorf("after recover, %s with include_weak: %v", mode, resp.Results)
		}
	}
	for range 3 {
		if _, err := s.Memories.Verify(ctx, searchtest.Meta("u1"), forgotten, commands.StrengthChange{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range allModes {
		if got := ids(run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "otter pond survey", Mode: mode, Limit: 20})); !sameSet(got, []string{strong, fading, forgotten}) {
			t.Errorf("after recover and verify, %s: got %v", mode, got)
		}
	}
}

// Hiding weak memories never shortens a page that the agent's other
// memories can fill: here the 40 best matches (the newest, at equal
// scores) are weak, so the first index query returns only weak ones and
// the search must ask again, deeper.
func TestSearchHidingWeakKeepsPageFull(t *testing.T) {
	s := searchtest.New(t, frozen)
	var visible []string
	for i := range 50 {
		id := s.Note(t, "u1", "a", "heron nest", nil, t0.Add(time.Duration(i)*time.Minute))
		if i < 10 {
			visible = append(visible, id)
		} else {
			weaken(t, s, "u1", id, 0.6)
		}
	}
	for _, mode := range allModes {
		for _, limit := range []int{1, 5, 10} {
			got := ids(run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "heron nest", Mode: mode, Limit: limit}))
			if len(got) != limit {
				t.Fatalf("%s limit %d: %d results %v, want a full page", mode, limit, len(got), got)
			}
			for _, id := range got {
				if !slices.Contains(visible, id) {
					t.Fatalf("%s limit %d: weak memory %s returned", mode, limit, id)
				}
			}
		}
		if got := ids(run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "heron nest", Mode: mode, Limit: 100})); !sameSet(got, visible) {
			t.Fatalf("%s limit 100: got %d results, want the %d visible ones", mode, len(got), len(visible))
		}
	}
}
