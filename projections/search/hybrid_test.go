package search_test

import (
	"math"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

// A memory that only the vector side finds (here a misspelling that only
// the model's character n-grams match) still appears in hybrid results,
// after the keyword matches.
func TestVectorOnlyHitAppearsInHybrid(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	typo := s.Note(t, "u1", "a", "I joined a photography workshop downtown", nil, t0)
	kw := s.Note(t, "u1", "a", "the photografy club meets on Mondays", nil, t0.Add(time.Hour))
	s.Note(t, "u1", "a", "lunch was pasta with friends", nil, t0)
	if got := ids(run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "photografy", Mode: search.ModeKeyword})); len(got) != 1 || got[0] != kw {
		t.Fatalf("keyword: want only %s, got %v", kw, got)
	}
	resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "photografy", Mode: search.ModeHybrid, Explain: true})
	got := ids(resp)
	if len(got) < 2 || got[0] != kw || got[1] != typo {
		t.Fatalf("hybrid: want [%s %s ...], got %v", kw, typo, got)
	}
	if e := resp.Results[1].Explain; e.KeywordScore != nil || e.VectorScore == nil || *e.VectorScore <= 0 {
		t.Fatalf("explain of the vector-only hit: %+v", e)
	}
}

// Hybrid search fuses with the fusion of the agent's model: an agent of
// glove-sif-100 gets min-max fusion, so the memory best on both sides
// scores exactly 1; an agent of engram-hash-384 gets the absolute convex
// combination of the defaults.
func TestHybridFusesWithTheAgentsModel(t *testing.T) {
	for _, tc := range []struct {
		model string
		fused func(v, k float64) float64
	}{
		{"glove-sif-100", func(v, k float64) float64 { return 1 }},
		{"engram-hash-384", func(v, k float64) float64 {
			return search.DefaultVectorWeight*v + search.DefaultKeywordWeight*k
		}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			s := searchtest.New(t, searchtest.Options{Model: tc.model})
			dog := s.Note(t, "u1", "a", "my dog is sick", nil, t0)
			s.Note(t, "u1", "a", "the puppy was ill", nil, t0)
			s.Note(t, "u1", "a", "quarterly tax report", nil, t0)
			resp := run(t, s, search.Request{UserID: "u1", AgentID: "a", Query: "dog", Mode: search.ModeHybrid, Explain: true})
			if len(resp.Results) == 0 || resp.Results[0].Memory.ID != dog {
				t.Fatalf("hybrid: %v, want %s first", ids(resp), dog)
			}
			e := resp.Results[0].Explain
			if e.VectorScore == nil || e.KeywordScore == nil {
				t.Fatalf("explain %+v: both sides must have found it", e)
			}
			if want := tc.fused(*e.VectorScore, *e.KeywordScore); math.Abs(e.FusedScore-want) > 1e-9 {
				t.Fatalf("fused score %v, want %v (explain %+v)", e.FusedScore, want, e)
			}
		})
	}
}
