package search_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/search"
)

// history writes a varied log: several users and agents, updates, forgets,
// purges, a deleted agent, and memories left pending by a provider outage.
func history(t *testing.T, s *searchtest.Env) {
	ctx := context.Background()
	topics := []string{"kubernetes upgrade", "garden tomatoes", "deploy-v2.4.7-hotfix", "quarterly planning", "database outage"}
	var made []string
	for i := range 60 {
		user := []string{"u1", "u2"}[i%2]
		typ := []memory.Type{memory.Note, memory.Belief, memory.Episode}[i%3]
		var content any
		text := fmt.Sprintf("%s item %d", topics[i%len(topics)], i)
		switch typ {
		case memory.Note:
			content = map[string]any{"content": text}
		case memory.Belief:
			content = map[string]any{"statement": text}
		case memory.Episode:
			content = map[string]any{"objective": text, "outcome": "done", "lessons": []string{"check " + topics[(i+1)%len(topics)]}}
		}
		if i == 30 {
			s.Provider.SetDown(true)
		}
		if i == 36 {
			s.Provider.SetDown(false)
		}
		id := s.Create(t, user, "shared", typ, content, []string{fmt.Sprintf("t%d", i%4)}, t0.Add(time.Duration(i%7)*time.Hour))
		if user == "u1" {
			made = append(made, id)
		}
	}
	s.Note(t, "u1", "gone", "kubernetes upgrade in a deleted agent", nil, t0)
	m := searchtest.Meta("u1")
	if _, err := s.Memories.Forget(ctx, m, made[1], nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Memories.Purge(ctx, m, made[2], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Memories.Patch(ctx, m, made[3], patchContent(`{"content": "garden tomatoes replaced the kubernetes item"}`)); err != nil {
		t.Fatal(err)
	}
	tags := []string{"t9"}
	if _, err := s.Memories.Patch(ctx, m, made[4], commandsPatchTags(tags)); err != nil {
		t.Fatal(err)
	}
	by := 0.6
	if _, err := s.Memories.Weaken(ctx, m, made[5], commands.StrengthChange{By: &by}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Memories.Forget(ctx, m, made[7], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Memories.Recover(ctx, m, made[7], nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Memories.DeleteAgent(ctx, m, "gone"); err != nil {
		t.Fatal(err)
	}
}

// frozen computes strengths at t0, before any memory's strength was set,
// so that two snapshots taken moments apart see no decay between them.
var frozen = searchtest.Options{Search: search.Options{Now: func() time.Time { return t0 }}}

var probes = []search.Request{
	{UserID: "u1", AgentID: "shared", Query: "kubernetes upgrade"},
	{UserID: "u2", AgentID: "shared", Query: "garden tomatoes", Limit: 100},
	{UserID: "u1", AgentID: "shared", Query: "deploy-v2.4.7-hotfix", Filter: search.Filter{Types: []memory.Type{memory.Note, memory.Episode}}},
	{UserID: "u1", AgentID: "shared", Query: "planning outage", Filter: search.Filter{Tags: []string{"t1"}, CreatedAfter: t0.Add(time.Hour)}},
	{UserID: "u1", AgentID: "shared", Query: "item", Limit: 100, Filter: search.Filter{Tags: []string{"t9"}}},
	{UserID: "u1", AgentID: "shared", Query: "item", Limit: 100, IncludeWeak: true},
	{UserID: "u1", AgentID: "shared", Query: "item", Limit: 100, IncludeForgotten: true},
	{UserID: "u1", AgentID: "shared", Query: "item", Limit: 100, IncludeWeak: true, IncludeForgotten: true},
}

// snapshot runs every probe in every mode with explain on.
func snapshot(t *testing.T, s *searchtest.Env) []search.Response {
	var out []search.Response
	for _, p := range probes {
		for _, mode := range allModes {
			p.Mode, p.Explain = mode, true
			out = append(out, run(t, s, p))
		}
	}
	return out
}

func TestRebuildGivesIdenticalResults(t *testing.T) {
	s := searchtest.New(t, frozen)
	history(t, s)
	before := snapshot(t, s)
	if n := len(before[0].Results); n < 5 {
		t.Fatalf("probe finds too little to compare: %d", n)
	}
	s.StopEngine()
	calls := s.Provider.Calls()
	if err := s.Engine.Rebuild(context.Background(), projections.KeywordProjectionName, projections.VectorsProjectionName); err != nil {
		t.Fatal(err)
	}
	// Vectors come from the MemoryEmbedded events: replay embeds nothing.
	if got := s.Provider.Calls() - calls; got != 0 {
		t.Fatalf("rebuild called the embedding provider %d times", got)
	}
	after := snapshot(t, s)
	if !reflect.DeepEqual(before, after) {
		for i := range before {
			if !reflect.DeepEqual(before[i], after[i]) {
				t.Fatalf("probe %d differs after rebuild:\nbefore %v\nafter  %v", i, ids(before[i]), ids(after[i]))
			}
		}
	}
}

// A restart loads both indexes from the store (searchtest.Open loads them
// before the engine runs): no provider call, and the same results.
func TestVectorIndexLoadsFromStoreAtStart(t *testing.T) {
	s := searchtest.New(t, frozen)
	history(t, s)
	before := snapshot(t, s)
	s.Close()

	start := time.Now()
	s2, err := searchtest.Open(context.Background(), s.DataDir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	t.Logf("reopened and loaded %d vectors in %v", s2.Index.Stats().Vectors, time.Since(start))
	if calls := s2.Provider.Calls(); calls != 0 {
		t.Fatalf("loading the vector index called the embedder %d times", calls)
	}
	if n := s2.VectorCount(t, "u1", "shared"); n == 0 {
		t.Fatal("no vectors after the restart")
	}
	after := snapshot(t, s2)
	for i := range before {
		if !reflect.DeepEqual(before[i], after[i]) {
			for j := range before[i].Results {
				b, a := before[i].Results[j], after[i].Results[j]
				if !reflect.DeepEqual(b, a) {
					t.Logf("result %d: before %s %v %+v %+v\nafter %s %v %+v %+v", j, b.Memory.ID, b.Score, *b.Explain, b.Memory, a.Memory.ID, a.Score, *a.Explain, a.Memory)
					break
				}
			}
			t.Fatalf("probe %d differs after a restart:\nbefore %v\nafter  %v", i, ids(before[i]), ids(after[i]))
		}
	}
	// Only the probes' queries were embedded (vector and hybrid modes).
	if calls, want := s2.Provider.Calls(), int64(2*len(probes)); calls != want {
		t.Fatalf("provider calls after the probes: %d, want %d", calls, want)
	}
}
