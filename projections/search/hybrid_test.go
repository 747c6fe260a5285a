package search_test

import (
	"testing"
	"time"

	"github.com/engram-memory/engram/projections/search"
	"github.com/engram-memory/engram/projections/search/searchtest"
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
