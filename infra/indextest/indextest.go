// Package indextest holds what the conformance suites of the two search
// index ports (infra/keywordindextest, infra/vectorindextest) share: the
// scopes they write to, the comparison of hits, and the filter cases,
// which every index of either kind answers alike.
package indextest

import (
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Target describes the adapter under test, whose port is I.
type Target[I any] struct {
	// Open returns a fresh, empty index for each subtest.
	Open func(t *testing.T) I
	// Unreachable, if set, returns an index whose backend is down; every
	// operation must then fail with domain.ErrIndexUnavailable. Embedded
	// indexes cannot be down and leave it nil.
	Unreachable func(t *testing.T) I
}

// Case is one subtest of a suite, run on a fresh index.
type Case[I any] struct {
	Name string
	Run  func(*testing.T, I)
}

// Suite is a conformance suite of port I: its cases, how it checks the
// filter cases (Filters), and what it asks of an unreachable backend.
type Suite[I any] struct {
	Cases        []Case[I]
	CheckFilters func(*testing.T, I, []FilterCase)
	Unreachable  func(*testing.T, I)
}

// Run runs the suite against target, each subtest on a fresh index.
func (s Suite[I]) Run(t *testing.T, target Target[I]) {
	for _, c := range s.Cases {
		t.Run(c.Name, func(t *testing.T) { c.Run(t, target.Open(t)) })
	}
	for _, f := range Filters {
		t.Run(f.Name, func(t *testing.T) { s.CheckFilters(t, target.Open(t), f.Cases) })
	}
	if target.Unreachable != nil {
		t.Run("UnreachableBackend", func(t *testing.T) { s.Unreachable(t, target.Unreachable(t)) })
	}
}

// The scopes the suites write to: two agents of one user, and the first
// agent's name under another user.
var (
	Alice  = domain.IndexScope{UserID: "u-alice", AgentID: "claire"}
	Alice2 = domain.IndexScope{UserID: "u-alice", AgentID: "bob"}
	Bruno  = domain.IndexScope{UserID: "u-bruno", AgentID: "claire"}
	// T0 is the suites' clock.
	T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// IDs are the memory ids of hits, in order.
func IDs(hits []domain.IndexHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.MemoryID
	}
	return out
}

// SameSet compares hit ids ignoring order.
func SameSet(t *testing.T, what string, hits []domain.IndexHit, want ...string) {
	t.Helper()
	got := IDs(hits)
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// FilterMemory is one memory of the filter fixture.
type FilterMemory struct {
	ID        string
	Type      string
	CreatedAt time.Time
	Tags      []string
}

// FilterFixture is four memories of Alice's on one topic that differ in
// type, tags and creation time; each suite stores them as its index holds
// memories (a text, a vector) such that one query finds all four.
var FilterFixture = []FilterMemory{
	{"f1", "note", T0, []string{"work", "urgent"}},
	{"f2", "episode", T0.Add(time.Hour), []string{"work"}},
	{"f3", "belief", T0.Add(2 * time.Hour), []string{"urgent"}},
	{"f4", "note", T0.Add(3 * time.Hour), nil},
}

// FilterCase is a filter and the fixture memories it keeps.
type FilterCase struct {
	What   string
	Filter domain.IndexFilter
	Want   []string
}

// Filters are the filter cases of both suites, by subtest: every filter
// alone and combined.
var Filters = []struct {
	Name  string
	Cases []FilterCase
}{
	{"FilterTypes", []FilterCase{
		{"types note", domain.IndexFilter{Types: []string{"note"}}, []string{"f1", "f4"}},
		{"types episode+belief", domain.IndexFilter{Types: []string{"episode", "belief"}}, []string{"f2", "f3"}},
		{"unknown type", domain.IndexFilter{Types: []string{"goal"}}, nil},
	}},
	{"FilterTagsAllOf", []FilterCase{
		{"tag work", domain.IndexFilter{Tags: []string{"work"}}, []string{"f1", "f2"}},
		{"tags work+urgent (all of)", domain.IndexFilter{Tags: []string{"work", "urgent"}}, []string{"f1"}},
		{"unknown tag", domain.IndexFilter{Tags: []string{"work", "never"}}, nil},
	}},
	{"FilterCreatedAfterInclusive", []FilterCase{
		{"created_after = f2's time", domain.IndexFilter{CreatedAfter: T0.Add(time.Hour)}, []string{"f2", "f3", "f4"}},
		{"created_after past the last", domain.IndexFilter{CreatedAfter: T0.Add(4 * time.Hour)}, nil},
	}},
	{"FilterCreatedBeforeExclusive", []FilterCase{
		{"created_before = f3's time", domain.IndexFilter{CreatedBefore: T0.Add(2 * time.Hour)}, []string{"f1", "f2"}},
		{"created_before = the first", domain.IndexFilter{CreatedBefore: T0}, nil},
	}},
	{"FiltersCombined", []FilterCase{
		{"note + urgent", domain.IndexFilter{Types: []string{"note"}, Tags: []string{"urgent"}}, []string{"f1"}},
		{"window [t0+1h, t0+3h) + urgent", domain.IndexFilter{
			Tags: []string{"urgent"}, CreatedAfter: T0.Add(time.Hour), CreatedBefore: T0.Add(3 * time.Hour),
		}, []string{"f3"}},
		{"everything at once", domain.IndexFilter{
			Types: []string{"note", "episode"}, Tags: []string{"work"}, CreatedAfter: T0, CreatedBefore: T0.Add(time.Hour),
		}, []string{"f1"}},
	}},
}

// CheckFilters runs cases against search, which answers the fixture's
// query under a filter.
func CheckFilters(t *testing.T, cases []FilterCase, search func(domain.IndexFilter) []domain.IndexHit) {
	t.Helper()
	for _, c := range cases {
		SameSet(t, c.What, search(c.Filter), c.Want...)
	}
}
