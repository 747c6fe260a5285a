package search_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

var allModes = []search.Mode{search.ModeHybrid, search.ModeVector, search.ModeKeyword}

// t0 is a fixed base time so created_at bounds are exact.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func run(t *testing.T, s *searchtest.Env, req search.Request) search.Response {
	t.Helper()
	if req.Limit == 0 {
		req.Limit = 10
	}
	resp, err := s.Search.Search(context.Background(), req)
	if err != nil {
		t.Fatalf("search %+v: %v", req, err)
	}
	for i, r := range resp.Results {
		if r.Score < 0 || r.Score > 1 {
			t.Fatalf("score %v of %s outside [0, 1]", r.Score, r.Memory.ID)
		}
		if i > 0 {
			prev := resp.Results[i-1]
			if prev.Score < r.Score || (prev.Score == r.Score && prev.Memory.CreatedAt.Before(r.Memory.CreatedAt)) {
				t.Fatalf("results out of order at %d: %v@%v before %v@%v", i, prev.Score, prev.Memory.CreatedAt, r.Score, r.Memory.CreatedAt)
			}
		}
	}
	return resp
}

func ids(resp search.Response) []string {
	out := make([]string, len(resp.Results))
	for i, r := range resp.Results {
		out[i] = r.Memory.ID
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func wantKind(t *testing.T, err error, kind domain.Kind) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %s error, got none", kind)
	}
	if got := domain.ErrorKind(err); got != kind {
		t.Fatalf("want a %s error, got %s (%v)", kind, got, err)
	}
}
