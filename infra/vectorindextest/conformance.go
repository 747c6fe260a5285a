// Package vectorindextest is the conformance suite every
// domain.VectorIndex adapter (embedded, Qdrant) must pass: scoping to one
// user's agent, every filter alone and combined, forget/purge/agent
// deletion, spaces and the model switch, cosine scores mapped to [0, 1]
// with best-first ordering, idempotent redelivery, rejected points,
// read-your-writes and surfaced errors.
package vectorindextest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Target describes the adapter under test.
type Target struct {
	// Open returns a fresh, empty index for each subtest.
	Open func(t *testing.T) domain.VectorIndex
	// Unreachable, if set, returns an index whose backend is down; every
	// operation must then fail with domain.ErrIndexUnavailable. Embedded
	// indexes cannot be down and leave it nil.
	Unreachable func(t *testing.T) domain.VectorIndex
}

// Run runs the suite.
func Run(t *testing.T, target Target) {
	cases := []struct {
		name string
		run  func(*testing.T, domain.VectorIndex)
	}{
		{"ReadYourWrites", readYourWrites},
		{"IsolationBetweenUsersAndAgents", isolation},
		{"FilterTypes", filterTypes},
		{"FilterTagsAllOf", filterTags},
		{"FilterCreatedAfterInclusive", filterCreatedAfter},
		{"FilterCreatedBeforeExclusive", filterCreatedBefore},
		{"FiltersCombined", filtersCombined},
		{"FilterNeverShortensThePage", filterNeverShortens},
		{"ForgetAndUnforget", forgetAndUnforget},
		{"UpsertForgottenPoint", upsertForgotten},
		{"IncludeForgotten", includeForgotten},
		{"DeleteMemoryInEverySpace", deleteMemory},
		{"DeleteAgent", deleteAgent},
		{"ModelSwitch", modelSwitch},
		{"DropAll", dropAll},
		{"ScoresAndOrdering", scoresAndOrdering},
		{"EqualScoresNewerFirst", equalScoresNewerFirst},
		{"MinScoreAndLimit", minScoreAndLimit},
		{"ReplaceChangesVectorAndTags", replaceChanges},
		{"IdempotentRedelivery", idempotentRedelivery},
		{"RejectedPointsLeaveTheOthers", rejectedPoints},
		{"QueryOfWrongSizeFails", queryOfWrongSize},
		{"CanceledContextFails", canceledContextFails},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, target.Open(t)) })
	}
	if target.Unreachable != nil {
		t.Run("UnreachableBackend", func(t *testing.T) { unreachable(t, target.Unreachable(t)) })
	}
}

var (
	alice  = domain.IndexScope{UserID: "u-alice", AgentID: "claire"}
	alice2 = domain.IndexScope{UserID: "u-alice", AgentID: "bob"}
	bruno  = domain.IndexScope{UserID: "u-bruno", AgentID: "claire"}
	small  = domain.VectorSpace{Model: "model-a", Dimensions: 4}
	other  = domain.VectorSpace{Model: "model-b", Dimensions: 3}
	t0     = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func point(scope domain.IndexScope, id string, space domain.VectorSpace, vec []float32, typ string, created time.Time, tags ...string) domain.VectorPoint {
	return domain.VectorPoint{
		MemoryID: id, UserID: scope.UserID, AgentID: scope.AgentID, Space: space,
		TextHash: "h-" + id, Type: typ, Tags: tags, CreatedAt: created, Vector: vec,
	}
}

// e is the i-th unit vector of size 4.
func e(i int) []float32 {
	v := make([]float32, 4)
	v[i] = 1
	return v
}

func upsert(t *testing.T, ix domain.VectorIndex, pts ...domain.VectorPoint) {
	t.Helper()
	if err := ix.UpsertVectors(context.Background(), pts...); err != nil {
		t.Fatalf("UpsertVectors: %v", err)
	}
}

func search(t *testing.T, ix domain.VectorIndex, q domain.VectorQuery) []domain.IndexHit {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 10
	}
	if q.Space == (domain.VectorSpace{}) {
		q.Space = small
	}
	hits, err := ix.SearchVectors(context.Background(), q)
	if err != nil {
		t.Fatalf("SearchVectors(%+v): %v", q, err)
	}
	return hits
}

func count(t *testing.T, ix domain.VectorIndex, scope domain.IndexScope, space domain.VectorSpace) int {
	t.Helper()
	n, err := ix.CountVectors(context.Background(), scope, space)
	if err != nil {
		t.Fatalf("CountVectors: %v", err)
	}
	return n
}

func ids(hits []domain.IndexHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.MemoryID
	}
	return out
}

func sameSet(t *testing.T, what string, hits []domain.IndexHit, want ...string) {
	t.Helper()
	got := ids(hits)
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func readYourWrites(t *testing.T, ix domain.VectorIndex) {
	if err := ix.Ready(context.Background()); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	sameSet(t, "empty index", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}))
	if n := count(t, ix, alice, small); n != 0 {
		t.Fatalf("empty count = %d", n)
	}
	upsert(t, ix, point(alice, "m1", small, e(0), "note", t0))
	hits := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)})
	sameSet(t, "after upsert", hits, "m1")
	if !hits[0].CreatedAt.Equal(t0) {
		t.Fatalf("hit CreatedAt = %v, want %v", hits[0].CreatedAt, t0)
	}
	if n := count(t, ix, alice, small); n != 1 {
		t.Fatalf("count = %d, want 1", n)
	}
}

func isolation(t *testing.T, ix domain.VectorIndex) {
	upsert(t, ix,
		point(alice, "a1", small, e(0), "note", t0),
		point(alice2, "a2", small, e(0), "note", t0),
		point(bruno, "b1", small, e(0), "note", t0),
	)
	for _, c := range []struct {
		scope domain.IndexScope
		want  string
	}{{alice, "a1"}, {alice2, "a2"}, {bruno, "b1"}} {
		sameSet(t, fmt.Sprintf("scope %+v", c.scope), search(t, ix, domain.VectorQuery{Scope: c.scope, Vector: e(0)}), c.want)
		if n := count(t, ix, c.scope, small); n != 1 {
			t.Fatalf("count of %+v = %d, want 1", c.scope, n)
		}
	}
	sameSet(t, "unknown agent", search(t, ix, domain.VectorQuery{Scope: domain.IndexScope{UserID: "u-alice", AgentID: "nobody"}, Vector: e(0)}))
}

func filterFixture(t *testing.T, ix domain.VectorIndex) {
	upsert(t, ix,
		point(alice, "f1", small, []float32{1, 0.1, 0, 0}, "note", t0, "work", "urgent"),
		point(alice, "f2", small, []float32{1, 0.2, 0, 0}, "episode", t0.Add(time.Hour), "work"),
		point(alice, "f3", small, []float32{1, 0.3, 0, 0}, "belief", t0.Add(2*time.Hour), "urgent"),
		point(alice, "f4", small, []float32{1, 0.4, 0, 0}, "note", t0.Add(3*time.Hour)),
	)
}

func filtered(t *testing.T, ix domain.VectorIndex, f domain.IndexFilter) []domain.IndexHit {
	t.Helper()
	return search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Filter: f})
}

func filterTypes(t *testing.T, ix domain.VectorIndex) {
	filterFixture(t, ix)
	sameSet(t, "types note", filtered(t, ix, domain.IndexFilter{Types: []string{"note"}}), "f1", "f4")
	sameSet(t, "types episode+belief", filtered(t, ix, domain.IndexFilter{Types: []string{"episode", "belief"}}), "f2", "f3")
	sameSet(t, "unknown type", filtered(t, ix, domain.IndexFilter{Types: []string{"goal"}}))
}

func filterTags(t *testing.T, ix domain.VectorIndex) {
	filterFixture(t, ix)
	sameSet(t, "tag work", filtered(t, ix, domain.IndexFilter{Tags: []string{"work"}}), "f1", "f2")
	sameSet(t, "tags work+urgent (all of)", filtered(t, ix, domain.IndexFilter{Tags: []string{"work", "urgent"}}), "f1")
	sameSet(t, "unknown tag", filtered(t, ix, domain.IndexFilter{Tags: []string{"work", "never"}}))
}

func filterCreatedAfter(t *testing.T, ix domain.VectorIndex) {
	filterFixture(t, ix)
	sameSet(t, "created_after = f2's time", filtered(t, ix, domain.IndexFilter{CreatedAfter: t0.Add(time.Hour)}), "f2", "f3", "f4")
	sameSet(t, "created_after past the last", filtered(t, ix, domain.IndexFilter{CreatedAfter: t0.Add(4 * time.Hour)}))
}

func filterCreatedBefore(t *testing.T, ix domain.VectorIndex) {
	filterFixture(t, ix)
	sameSet(t, "created_before = f3's time", filtered(t, ix, domain.IndexFilter{CreatedBefore: t0.Add(2 * time.Hour)}), "f1", "f2")
	sameSet(t, "created_before = the first", filtered(t, ix, domain.IndexFilter{CreatedBefore: t0}))
}

func filtersCombined(t *testing.T, ix domain.VectorIndex) {
	filterFixture(t, ix)
	sameSet(t, "note + urgent", filtered(t, ix, domain.IndexFilter{Types: []string{"note"}, Tags: []string{"urgent"}}), "f1")
	sameSet(t, "window [t0+1h, t0+3h) + urgent", filtered(t, ix, domain.IndexFilter{
		Tags: []string{"urgent"}, CreatedAfter: t0.Add(time.Hour), CreatedBefore: t0.Add(3 * time.Hour),
	}), "f3")
	sameSet(t, "everything at once", filtered(t, ix, domain.IndexFilter{
		Types: []string{"note", "episode"}, Tags: []string{"work"}, CreatedAfter: t0, CreatedBefore: t0.Add(time.Hour),
	}), "f1")
}

// filterNeverShortens: 50 near points fail the filter, 5 far ones pass;
// a page of 5 must hold the 5, which a post-filter of the 5 nearest
// would miss.
func filterNeverShortens(t *testing.T, ix domain.VectorIndex) {
	var pts []domain.VectorPoint
	for i := range 50 {
		pts = append(pts, point(alice, fmt.Sprintf("near%02d", i), small, []float32{1, float32(i) / 1000, 0, 0}, "note", t0))
	}
	for i := range 5 {
		pts = append(pts, point(alice, fmt.Sprintf("far%d", i), small, []float32{0.2, 1, float32(i) / 10, 0}, "belief", t0))
	}
	upsert(t, ix, pts...)
	sameSet(t, "filtered page", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Limit: 5, Filter: domain.IndexFilter{Types: []string{"belief"}}}),
		"far0", "far1", "far2", "far3", "far4")
}

func forgetAndUnforget(t *testing.T, ix domain.VectorIndex) {
	ctx := context.Background()
	upsert(t, ix, point(alice, "k1", small, e(0), "note", t0), point(alice, "k2", small, e(1), "note", t0), point(alice, "k1", other, []float32{1, 0, 0}, "note", t0))
	if err := ix.SetForgotten(ctx, alice, "k1", true); err != nil {
		t.Fatal(err)
	}
	sameSet(t, "after forget", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "k2")
	sameSet(t, "after forget, other space", search(t, ix, domain.VectorQuery{Scope: alice, Space: other, Vector: []float32{1, 0, 0}}))
	if n := count(t, ix, alice, small); n != 1 {
		t.Fatalf("count after forget = %d, want 1", n)
	}
	if err := ix.SetForgotten(ctx, bruno, "k2", true); err != nil {
		t.Fatalf("forgetting in another scope: %v", err)
	}
	sameSet(t, "another scope's forget changes nothing", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(1)}), "k2")
	if err := ix.SetForgotten(ctx, alice, "k1", false); err != nil {
		t.Fatal(err)
	}
	sameSet(t, "after unforget", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "k1", "k2")
	if n := count(t, ix, alice, small); n != 2 {
		t.Fatalf("count after unforget = %d, want 2", n)
	}
	if err := ix.SetForgotten(ctx, alice, "absent", true); err != nil {
		t.Fatalf("forgetting an absent memory: %v", err)
	}
}

func upsertForgotten(t *testing.T, ix domain.VectorIndex) {
	p := point(alice, "g1", small, e(2), "note", t0)
	p.Forgotten = true
	upsert(t, ix, p)
	sameSet(t, "forgotten point", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(2)}))
	p.Forgotten = false
	upsert(t, ix, p)
	sameSet(t, "re-upserted not forgotten", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(2)}), "g1")
}

// includeForgotten: a query that includes forgotten memories finds their
// points with filters, space and scope still applied; the next query
// without the flag does not, and CountVectors still counts the searchable
// ones only.
func includeForgotten(t *testing.T, ix domain.VectorIndex) {
	ctx := context.Background()
	upsert(t, ix, point(alice, "i1", small, e(0), "note", t0), point(alice, "i2", small, e(1), "episode", t0),
		point(alice, "i1", other, []float32{1, 0, 0}, "note", t0), point(bruno, "i4", small, e(0), "note", t0))
	for _, f := range []struct {
		scope domain.IndexScope
		id    string
	}{{alice, "i1"}, {alice, "i2"}, {bruno, "i4"}} {
		if err := ix.SetForgotten(ctx, f.scope, f.id, true); err != nil {
			t.Fatal(err)
		}
	}
	with := domain.IndexFilter{IncludeForgotten: true}
	sameSet(t, "without the flag", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}))
	sameSet(t, "with the flag", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Filter: with}), "i1", "i2")
	sameSet(t, "with the flag, other space", search(t, ix, domain.VectorQuery{Scope: alice, Space: other, Vector: []float32{1, 0, 0}, Filter: with}), "i1")
	sameSet(t, "with the flag and a type filter", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0),
		Filter: domain.IndexFilter{IncludeForgotten: true, Types: []string{"episode"}}}), "i2")
	sameSet(t, "with the flag, other user", search(t, ix, domain.VectorQuery{Scope: bruno, Vector: e(0), Filter: with}), "i4")
	if n := count(t, ix, alice, small); n != 0 {
		t.Fatalf("count with everything forgotten = %d, want 0", n)
	}
	if err := ix.SetForgotten(ctx, alice, "i1", false); err != nil {
		t.Fatal(err)
	}
	sameSet(t, "after unforget, without", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "i1")
	sameSet(t, "after unforget, with the flag", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Filter: with}), "i1", "i2")
}

func deleteMemory(t *testing.T, ix domain.VectorIndex) {
	ctx := context.Background()
	upsert(t, ix, point(alice, "d1", small, e(0), "note", t0), point(alice, "d1", other, []float32{1, 0, 0}, "note", t0), point(alice, "d2", small, e(1), "note", t0))
	if err := ix.DeleteMemory(ctx, alice, "d1"); err != nil {
		t.Fatal(err)
	}
	sameSet(t, "after delete", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "d2")
	sameSet(t, "after delete, other space", search(t, ix, domain.VectorQuery{Scope: alice, Space: other, Vector: []float32{1, 0, 0}}))
	for _, id := range []string{"d1", "absent"} {
		if err := ix.DeleteMemory(ctx, alice, id); err != nil {
			t.Fatalf("deleting %s again/absent: %v", id, err)
		}
	}
}

func deleteAgent(t *testing.T, ix domain.VectorIndex) {
	ctx := context.Background()
	upsert(t, ix, point(alice, "x1", small, e(0), "note", t0), point(alice, "x1", other, []float32{1, 0, 0}, "note", t0),
		point(alice2, "x2", small, e(0), "note", t0), point(bruno, "x3", small, e(0), "note", t0))
	if err := ix.DeleteAgent(ctx, alice); err != nil {
		t.Fatal(err)
	}
	sameSet(t, "deleted agent", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}))
	if n := count(t, ix, alice, other); n != 0 {
		t.Fatalf("deleted agent still has %d points in the other space", n)
	}
	sameSet(t, "same user's other agent", search(t, ix, domain.VectorQuery{Scope: alice2, Vector: e(0)}), "x2")
	sameSet(t, "other user's agent of that name", search(t, ix, domain.VectorQuery{Scope: bruno, Vector: e(0)}), "x3")
	if err := ix.DeleteAgent(ctx, alice); err != nil {
		t.Fatalf("deleting an agent twice: %v", err)
	}
	upsert(t, ix, point(alice, "x4", small, e(0), "note", t0))
	sameSet(t, "agent recreated", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "x4")
}

// modelSwitch: while an agent is re-embedded its memories have points in
// both spaces, each searched alone; dropping the old space leaves the new.
func modelSwitch(t *testing.T, ix domain.VectorIndex) {
	ctx := context.Background()
	upsert(t, ix, point(alice, "w1", small, e(0), "note", t0), point(alice, "w2", small, e(1), "note", t0), point(bruno, "w9", small, e(0), "note", t0))
	upsert(t, ix, point(alice, "w1", other, []float32{0, 0, 1}, "note", t0))
	if got, want := [2]int{count(t, ix, alice, small), count(t, ix, alice, other)}, [2]int{2, 1}; got != want {
		t.Fatalf("counts (old, new) = %v, want %v", got, want)
	}
	sameSet(t, "old space", search(t, ix, domain.VectorQuery{Scope: alice, Space: small, Vector: e(0)}), "w1", "w2")
	sameSet(t, "new space", search(t, ix, domain.VectorQuery{Scope: alice, Space: other, Vector: []float32{0, 0, 1}}), "w1")
	if err := ix.DeleteSpace(ctx, alice, small); err != nil {
		t.Fatal(err)
	}
	sameSet(t, "old space dropped", search(t, ix, domain.VectorQuery{Scope: alice, Space: small, Vector: e(0)}))
	sameSet(t, "new space kept", search(t, ix, domain.VectorQuery{Scope: alice, Space: other, Vector: []float32{0, 0, 1}}), "w1")
	sameSet(t, "other user's points in the old space kept", search(t, ix, domain.VectorQuery{Scope: bruno, Space: small, Vector: e(0)}), "w9")
	if err := ix.DeleteSpace(ctx, alice, small); err != nil {
		t.Fatalf("dropping a space twice: %v", err)
	}
}

func dropAll(t *testing.T, ix domain.VectorIndex) {
	ctx := context.Background()
	upsert(t, ix, point(alice, "y1", small, e(0), "note", t0), point(bruno, "y2", other, []float32{1, 0, 0}, "note", t0))
	if err := ix.SetForgotten(ctx, alice, "y1", true); err != nil {
		t.Fatal(err)
	}
	if err := ix.DropAll(ctx); err != nil {
		t.Fatal(err)
	}
	sameSet(t, "after drop", search(t, ix, domain.VectorQuery{Scope: bruno, Space: other, Vector: []float32{1, 0, 0}}))
	upsert(t, ix, point(alice, "y1", small, e(0), "note", t0))
	sameSet(t, "rebuilt after drop (forgotten state gone too)", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "y1")
}

func scoresAndOrdering(t *testing.T, ix domain.VectorIndex) {
	upsert(t, ix,
		point(alice, "same", small, []float32{2, 0, 0, 0}, "note", t0), // same direction, other length
		point(alice, "close", small, []float32{1, 1, 0, 0}, "note", t0),
		point(alice, "orthogonal", small, e(1), "note", t0),
		point(alice, "opposite", small, []float32{-1, 0, 0, 0}, "note", t0),
	)
	hits := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)})
	if got := ids(hits); len(got) < 2 || got[0] != "same" || got[1] != "close" {
		t.Fatalf("order: got %v, want same, close first", got)
	}
	want := map[string]float64{"same": 1, "close": 1 / math.Sqrt2, "orthogonal": 0, "opposite": 0}
	for i, h := range hits {
		if math.Abs(h.Score-want[h.MemoryID]) > 1e-4 {
			t.Errorf("%s score %v, want %v (max(0, cosine))", h.MemoryID, h.Score, want[h.MemoryID])
		}
		if i > 0 && h.Score > hits[i-1].Score {
			t.Fatalf("hits not best first: %v", hits)
		}
	}
}

func equalScoresNewerFirst(t *testing.T, ix domain.VectorIndex) {
	upsert(t, ix,
		point(alice, "e1", small, e(3), "note", t0),
		point(alice, "e2", small, e(3), "note", t0.Add(2*time.Hour)),
		point(alice, "e3", small, e(3), "note", t0.Add(time.Hour)),
	)
	if got := ids(search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(3)})); !slices.Equal(got, []string{"e2", "e3", "e1"}) {
		t.Fatalf("equal points: got %v, want newer first [e2 e3 e1]", got)
	}
}

func minScoreAndLimit(t *testing.T, ix domain.VectorIndex) {
	for i := range 20 {
		upsert(t, ix, point(alice, fmt.Sprintf("l%02d", i), small, []float32{1, float32(i) / 5, 0, 0}, "note", t0))
	}
	all := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Limit: 100})
	if len(all) != 20 || all[0].MemoryID != "l00" || all[19].MemoryID != "l19" {
		t.Fatalf("all: got %v", ids(all))
	}
	if got := ids(search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Limit: 5})); !slices.Equal(got, ids(all[:5])) {
		t.Fatalf("limit 5: got %v, want %v", got, ids(all[:5]))
	}
	floor := all[9].Score
	cut := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Limit: 100, MinScore: floor})
	if !slices.Equal(ids(cut), ids(all[:10])) {
		t.Fatalf("min_score %v: got %v, want %v", floor, ids(cut), ids(all[:10]))
	}
	// min_score is applied before the limit, so a page is never short.
	if got := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Limit: 3, MinScore: floor}); len(got) != 3 {
		t.Fatalf("limit 3 with min_score: %d hits", len(got))
	}
}

func replaceChanges(t *testing.T, ix domain.VectorIndex) {
	upsert(t, ix, point(alice, "r1", small, e(0), "note", t0, "kitchen"))
	p := point(alice, "r1", small, e(1), "note", t0, "dining")
	p.TextHash = "h-r1-v2"
	upsert(t, ix, p)
	hits := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(1)})
	if len(hits) != 1 || hits[0].Score < 0.999 {
		t.Fatalf("replaced vector: %v", hits)
	}
	sameSet(t, "old tag", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(1), Filter: domain.IndexFilter{Tags: []string{"kitchen"}}}))
	sameSet(t, "new tag", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(1), Filter: domain.IndexFilter{Tags: []string{"dining"}}}), "r1")
	if n := count(t, ix, alice, small); n != 1 {
		t.Fatalf("count after replace = %d, want 1", n)
	}
}

func idempotentRedelivery(t *testing.T, ix domain.VectorIndex) {
	ctx := context.Background()
	batch := []domain.VectorPoint{
		point(alice, "i1", small, []float32{1, 0.5, 0, 0}, "note", t0),
		point(alice, "i2", small, []float32{1, 0.1, 0, 0}, "note", t0.Add(time.Minute)),
		point(alice, "i3", small, []float32{1, 0, 0, 0}, "note", t0.Add(2*time.Minute)),
	}
	upsert(t, ix, batch...)
	if err := ix.DeleteMemory(ctx, alice, "i3"); err != nil {
		t.Fatal(err)
	}
	first := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)})
	upsert(t, ix, batch[:2]...)
	if err := ix.DeleteMemory(ctx, alice, "i3"); err != nil {
		t.Fatal(err)
	}
	again := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)})
	if !slices.Equal(ids(first), ids(again)) || count(t, ix, alice, small) != 2 {
		t.Fatalf("redelivery changed results:\n first %v\n again %v", first, again)
	}
}

func rejectedPoints(t *testing.T, ix domain.VectorIndex) {
	err := ix.UpsertVectors(context.Background(),
		point(alice, "ok1", small, e(0), "note", t0),
		point(alice, "zero", small, []float32{0, 0, 0, 0}, "note", t0),
		point(alice, "short", small, []float32{1, 0}, "note", t0),
		point(alice, "ok2", small, e(1), "note", t0),
	)
	if !errors.Is(err, domain.ErrIndexRejected) {
		t.Fatalf("zero and short vectors: %v, want ErrIndexRejected", err)
	}
	sameSet(t, "the acceptable points are stored", search(t, ix, domain.VectorQuery{Scope: alice, Vector: []float32{1, 1, 0, 0}}), "ok1", "ok2")
}

func queryOfWrongSize(t *testing.T, ix domain.VectorIndex) {
	upsert(t, ix, point(alice, "q1", small, e(0), "note", t0))
	if _, err := ix.SearchVectors(context.Background(), domain.VectorQuery{Scope: alice, Space: small, Vector: []float32{1, 0}, Limit: 5}); err == nil {
		t.Fatal("a 2-dimensional query in a 4-dimensional space returned no error")
	}
}

func canceledContextFails(t *testing.T, ix domain.VectorIndex) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	checkAll(t, ix, ctx, func(name string, err error) {
		if err == nil {
			t.Errorf("%s with a canceled context returned nil", name)
		}
	})
}

func unreachable(t *testing.T, ix domain.VectorIndex) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	checkAll(t, ix, ctx, func(name string, err error) {
		if !errors.Is(err, domain.ErrIndexUnavailable) {
			t.Errorf("%s against a down backend: %v, want ErrIndexUnavailable", name, err)
		}
	})
}

func checkAll(t *testing.T, ix domain.VectorIndex, ctx context.Context, check func(string, error)) {
	t.Helper()
	p := point(alice, "c1", small, e(0), "note", t0)
	for name, op := range map[string]func() error{
		"UpsertVectors": func() error { return ix.UpsertVectors(ctx, p) },
		"SetForgotten":  func() error { return ix.SetForgotten(ctx, alice, "c1", true) },
		"DeleteMemory":  func() error { return ix.DeleteMemory(ctx, alice, "c1") },
		"DeleteAgent":   func() error { return ix.DeleteAgent(ctx, alice) },
		"DeleteSpace":   func() error { return ix.DeleteSpace(ctx, alice, small) },
		"DropAll":       func() error { return ix.DropAll(ctx) },
		"SearchVectors": func() error {
			_, err := ix.SearchVectors(ctx, domain.VectorQuery{Scope: alice, Space: small, Vector: e(0), Limit: 1})
			return err
		},
		"CountVectors": func() error { _, err := ix.CountVectors(ctx, alice, small); return err },
		"Ready":        func() error { return ix.Ready(ctx) },
	} {
		check(name, op())
	}
}
