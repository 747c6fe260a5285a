package search_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

var errBackendDown = fmt.Errorf("test outage: %w", domain.ErrIndexUnavailable)

// downKeyword and downVectors are the stack's real indexes with queries
// that fail as a remote index's do while it is down.
type downKeyword struct{ domain.KeywordIndex }

func (downKeyword) SearchKeyword(context.Context, domain.KeywordQuery) ([]domain.IndexHit, error) {
	return nil, errBackendDown
}

type downVectors struct{ domain.VectorIndex }

func (downVectors) SearchVectors(context.Context, domain.VectorQuery) ([]domain.IndexHit, error) {
	return nil, errBackendDown
}

// An index that is down fails the modes that need it with 503 and a code
// naming it; hybrid answers from the other side and says which is
// missing; with both down hybrid fails too.
func TestSearchWithAnIndexDown(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	note := s.Note(t, "u1", "a", "the harbour crane broke down on Tuesday", nil, t0)
	keyword, vectors := s.KeywordIndex, s.VectorIndex
	cases := []struct {
		name            string
		keywordDown     bool
		vectorsDown     bool
		mode            search.Mode
		wantCode        string // "" for success
		wantDegraded    string
		wantNoteInFound bool
	}{
		{"keyword down, keyword mode", true, false, search.ModeKeyword, "keyword_index_unavailable", "", false},
		{"keyword down, vector mode", true, false, search.ModeVector, "", "", true},
		{"keyword down, hybrid", true, false, search.ModeHybrid, "", search.DegradedKeywordUnavailable, true},
		{"vectors down, vector mode", false, true, search.ModeVector, "vector_index_unavailable", "", false},
		{"vectors down, keyword mode", false, true, search.ModeKeyword, "", "", true},
		{"vectors down, hybrid", false, true, search.ModeHybrid, "", search.DegradedVectorUnavailable, true},
		{"both down, hybrid", true, true, search.ModeHybrid, "keyword_index_unavailable", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var kw domain.KeywordIndex = keyword
			var vi domain.VectorIndex = vectors
			if c.keywordDown {
				kw = downKeyword{keyword}
			}
			if c.vectorsDown {
				vi = downVectors{vectors}
			}
			svc, err := search.New(kw, vi, s.Vectors, search.ProviderEmbedder{Provider: s.Provider}, s.ReadModel, nil, search.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, answered := searchCrane(t, svc, c.mode, c.wantCode, c.wantDegraded)
			if answered && c.wantNoteInFound && (len(got) == 0 || got[0] != note) {
				t.Errorf("results %v, want %s first", got, note)
			}
		})
	}
}

// An index being rebuilt live (Options.Rebuilding) is treated as down, and
// the answer says it is being rebuilt: its own mode fails with
// <side>_index_rebuilding, hybrid answers from the other side with
// Degraded <side>_rebuilding, and with both rebuilding hybrid fails too.
func TestSearchWhileAnIndexIsRebuilt(t *testing.T) {
	s := searchtest.New(t, searchtest.Options{})
	note := s.Note(t, "u1", "a", "the harbour crane broke down on Tuesday", nil, t0)
	cases := []struct {
		name         string
		rebuilding   []string
		mode         search.Mode
		wantCode     string // "" for success
		wantDegraded string
	}{
		{"keyword rebuilt, keyword mode", []string{search.SideKeyword}, search.ModeKeyword, "keyword_index_rebuilding", ""},
		{"keyword rebuilt, vector mode", []string{search.SideKeyword}, search.ModeVector, "", ""},
		{"keyword rebuilt, hybrid", []string{search.SideKeyword}, search.ModeHybrid, "", search.DegradedKeywordRebuilding},
		{"vectors rebuilt, vector mode", []string{search.SideVector}, search.ModeVector, "vector_index_rebuilding", ""},
		{"vectors rebuilt, keyword mode", []string{search.SideVector}, search.ModeKeyword, "", ""},
		{"vectors rebuilt, hybrid", []string{search.SideVector}, search.ModeHybrid, "", search.DegradedVectorRebuilding},
		{"both rebuilt, hybrid", []string{search.SideKeyword, search.SideVector}, search.ModeHybrid, "keyword_index_rebuilding", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rebuilding := func(side string) bool { return slices.Contains(c.rebuilding, side) }
			svc, err := search.New(s.KeywordIndex, s.VectorIndex, s.Vectors, search.ProviderEmbedder{Provider: s.Provider}, s.ReadModel, nil, search.Options{Rebuilding: rebuilding})
			if err != nil {
				t.Fatal(err)
			}
			got, answered := searchCrane(t, svc, c.mode, c.wantCode, c.wantDegraded)
			if answered && (len(got) == 0 || got[0] != note) {
				t.Errorf("results %v, want %s first", got, note)
			}
		})
	}
}

// searchCrane runs the outage tests' search in mode and checks how it
// ends: with the KindIndexUnavailable error wantCode names, or ("" for
// wantCode) answered, degraded as wantDegraded. answered says whether
// there are results, found their ids.
func searchCrane(t *testing.T, svc *search.Service, mode search.Mode, wantCode, wantDegraded string) (found []string, answered bool) {
	t.Helper()
	resp, err := svc.Search(context.Background(), search.Request{UserID: "u1", AgentID: "a", Query: "harbour crane", Mode: mode, Limit: 10})
	if wantCode != "" {
		de, ok := domain.AsError(err)
		if !ok || de.Kind != domain.KindIndexUnavailable || de.PublicCode() != wantCode || !errors.Is(err, domain.ErrIndexUnavailable) {
			t.Fatalf("err = %v, want %s (KindIndexUnavailable)", err, wantCode)
		}
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	if resp.Degraded != wantDegraded {
		t.Errorf("degraded = %q, want %q", resp.Degraded, wantDegraded)
	}
	return ids(resp), true
}
