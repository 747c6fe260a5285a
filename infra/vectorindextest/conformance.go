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
	"github.com/engram-memory/engram/infra/indextest"
)

// Target describes the adapter under test.
type Target = indextest.Target[domain.VectorIndex]

// Run runs the suite.
func Run(t *testing.T, target Target) {
	indextest.Suite[domain.VectorIndex]{
		Cases: []indextest.Case[domain.VectorIndex]{
			{Name: "ReadYourWrites", Run: readYourWrites},
			{Name: "IsolationBetweenUsersAndAgents", Run: isolation},
			{Name: "FilterNeverShortensThePage", Run: filterNeverShortens},
			{Name: "ForgetAndUnforget", Run: forgetAndUnforget},
			{Name: "UpsertForgottenPoint", Run: upsertForgotten},
			{Name: "IncludeForgotten", Run: includeForgotten},
			{Name: "DeleteMemoryInEverySpace", Run: deleteMemory},
			{Name: "DeleteAgent", Run: deleteAgent},
			{Name: "ModelSwitch", Run: modelSwitch},
			{Name: "DropAll", Run: dropAll},
			{Name: "ScoresAndOrdering", Run: scoresAndOrdering},
			{Name: "EqualScoresNewerFirst", Run: equalScoresNewerFirst},
			{Name: "MinScoreAndLimit", Run: minScoreAndLimit},
			{Name: "ReplaceChangesVectorAndTags", Run: replaceChanges},
			{Name: "IdempotentRedelivery", Run: idempotentRedelivery},
			{Name: "RejectedPointsLeaveTheOthers", Run: rejectedPoints},
			{Name: "QueryOfWrongSizeFails", Run: queryOfWrongSize},
			{Name: "CanceledContextFails", Run: canceledContextFails},
		},
		CheckFilters: checkFilters,
		Unreachable:  unreachable,
	}.Run(t, target)
}

var (
	alice  = indextest.Alice
	alice2 = indextest.Alice2
	bruno  = indextest.Bruno
	small  = domain.VectorSpace{Model: "model-a", Dimensions: 4}
	other  = domain.VectorSpace{Model: "model-b", Dimensions: 3}
	t0     = indextest.T0
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

func readYourWrites(t *testing.T, ix domain.VectorIndex) {
	if err := ix.Ready(context.Background()); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	indextest.SameSet(t, "empty index", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}))
	if n := count(t, ix, alice, small); n != 0 {
		t.Fatalf("empty count = %d", n)
	}
	upsert(t, ix, point(alice, "m1", small, e(0), "note", t0))
	hits := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)})
	indextest.SameSet(t, "after upsert", hits, "m1")
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
		indextest.SameSet(t, fmt.Sprintf("scope %+v", c.scope), search(t, ix, domain.VectorQuery{Scope: c.scope, Vector: e(0)}), c.want)
		if n := count(t, ix, c.scope, small); n != 1 {
			t.Fatalf("count of %+v = %d, want 1", c.scope, n)
		}
	}
	indextest.SameSet(t, "unknown agent", search(t, ix, domain.VectorQuery{Scope: domain.IndexScope{UserID: "u-alice", AgentID: "nobody"}, Vector: e(0)}))
}

// checkFilters stores the filter fixture as points near e(0), in
// fixture order, and runs cases with a query for e(0).
func checkFilters(t *testing.T, ix domain.VectorIndex, cases []indextest.FilterCase) {
	var pts []domain.VectorPoint
	for i, m := range indextest.FilterFixture {
		pts = append(pts, point(alice, m.ID, small, []float32{1, float32(i+1) / 10, 0, 0}, m.Type, m.CreatedAt, m.Tags...))
	}
	upsert(t, ix, pts...)
	indextest.CheckFilters(t, cases, func(f domain.IndexFilter) []domain.IndexHit {
		return search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Filter: f})
	})
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
	indextest.SameSet(t, "filtered page", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Limit: 5, Filter: domain.IndexFilter{Types: []string{"belief"}}}),
		"far0", "far1", "far2", "far3", "far4")
}

func forgetAndUnforget(t *testing.T, ix domain.VectorIndex) {
	ctx := context.Background()
	upsert(t, ix, point(alice, "k1", small, e(0), "note", t0), point(alice, "k2", small, e(1), "note", t0), point(alice, "k1", other, []float32{1, 0, 0}, "note", t0))
	if err := ix.SetForgotten(ctx, alice, "k1", true); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "after forget", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "k2")
	indextest.SameSet(t, "after forget, other space", search(t, ix, domain.VectorQuery{Scope: alice, Space: other, Vector: []float32{1, 0, 0}}))
	if n := count(t, ix, alice, small); n != 1 {
		t.Fatalf("count after forget = %d, want 1", n)
	}
	if err := ix.SetForgotten(ctx, bruno, "k2", true); err != nil {
		t.Fatalf("forgetting in another scope: %v", err)
	}
	indextest.SameSet(t, "another scope's forget changes nothing", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(1)}), "k2")
	if err := ix.SetForgotten(ctx, alice, "k1", false); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "after unforget", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "k1", "k2")
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
	indextest.SameSet(t, "forgotten point", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(2)}))
	p.Forgotten = false
	upsert(t, ix, p)
	indextest.SameSet(t, "re-upserted not forgotten", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(2)}), "g1")
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
	indextest.SameSet(t, "without the flag", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}))
	indextest.SameSet(t, "with the flag", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Filter: with}), "i1", "i2")
	indextest.SameSet(t, "with the flag, other space", search(t, ix, domain.VectorQuery{Scope: alice, Space: other, Vector: []float32{1, 0, 0}, Filter: with}), "i1")
	indextest.SameSet(t, "with the flag and a type filter", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0),
		Filter: domain.IndexFilter{IncludeForgotten: true, Types: []string{"episode"}}}), "i2")
	indextest.SameSet(t, "with the flag, other user", search(t, ix, domain.VectorQuery{Scope: bruno, Vector: e(0), Filter: with}), "i4")
	if n := count(t, ix, alice, small); n != 0 {
		t.Fatalf("count with everything forgotten = %d, want 0", n)
	}
	if err := ix.SetForgotten(ctx, alice, "i1", false); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "after unforget, without", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "i1")
	indextest.SameSet(t, "after unforget, with the flag", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Filter: with}), "i1", "i2")
}

func deleteMemory(t *testing.T, ix domain.VectorIndex) {
	ctx := context.Background()
	upsert(t, ix, point(alice, "d1", small, e(0), "note", t0), point(alice, "d1", other, []float32{1, 0, 0}, "note", t0), point(alice, "d2", small, e(1), "note", t0))
	if err := ix.DeleteMemory(ctx, alice, "d1"); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "after delete", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "d2")
	indextest.SameSet(t, "after delete, other space", search(t, ix, domain.VectorQuery{Scope: alice, Space: other, Vector: []float32{1, 0, 0}}))
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
	indextest.SameSet(t, "deleted agent", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}))
	if n := count(t, ix, alice, other); n != 0 {
		t.Fatalf("deleted agent still has %d points in the other space", n)
	}
	indextest.SameSet(t, "same user's other agent", search(t, ix, domain.VectorQuery{Scope: alice2, Vector: e(0)}), "x2")
	indextest.SameSet(t, "other user's agent of that name", search(t, ix, domain.VectorQuery{Scope: bruno, Vector: e(0)}), "x3")
	if err := ix.DeleteAgent(ctx, alice); err != nil {
		t.Fatalf("deleting an agent twice: %v", err)
	}
	upsert(t, ix, point(alice, "x4", small, e(0), "note", t0))
	indextest.SameSet(t, "agent recreated", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "x4")
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
	indextest.SameSet(t, "old space", search(t, ix, domain.VectorQuery{Scope: alice, Space: small, Vector: e(0)}), "w1", "w2")
	indextest.SameSet(t, "new space", search(t, ix, domain.VectorQuery{Scope: alice, Space: other, Vector: []float32{0, 0, 1}}), "w1")
	if err := ix.DeleteSpace(ctx, alice, small); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "old space dropped", search(t, ix, domain.VectorQuery{Scope: alice, Space: small, Vector: e(0)}))
	indextest.SameSet(t, "new space kept", search(t, ix, domain.VectorQuery{Scope: alice, Space: other, Vector: []float32{0, 0, 1}}), "w1")
	indextest.SameSet(t, "other user's points in the old space kept", search(t, ix, domain.VectorQuery{Scope: bruno, Space: small, Vector: e(0)}), "w9")
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
	indextest.SameSet(t, "after drop", search(t, ix, domain.VectorQuery{Scope: bruno, Space: other, Vector: []float32{1, 0, 0}}))
	upsert(t, ix, point(alice, "y1", small, e(0), "note", t0))
	indextest.SameSet(t, "rebuilt after drop (forgotten state gone too)", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)}), "y1")
}

func scoresAndOrdering(t *testing.T, ix domain.VectorIndex) {
	upsert(t, ix,
		point(alice, "same", small, []float32{2, 0, 0, 0}, "note", t0), // same direction, other length
		point(alice, "close", small, []float32{1, 1, 0, 0}, "note", t0),
		point(alice, "orthogonal", small, e(1), "note", t0),
		point(alice, "opposite", small, []float32{-1, 0, 0, 0}, "note", t0),
	)
	hits := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0)})
	if got := indextest.IDs(hits); len(got) < 2 || got[0] != "same" || got[1] != "close" {
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
	if got := indextest.IDs(search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(3)})); !slices.Equal(got, []string{"e2", "e3", "e1"}) {
		t.Fatalf("equal points: got %v, want newer first [e2 e3 e1]", got)
	}
}

func minScoreAndLimit(t *testing.T, ix domain.VectorIndex) {
	for i := range 20 {
		upsert(t, ix, point(alice, fmt.Sprintf("l%02d", i), small, []float32{1, float32(i) / 5, 0, 0}, "note", t0))
	}
	all := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Limit: 100})
	if len(all) != 20 || all[0].MemoryID != "l00" || all[19].MemoryID != "l19" {
		t.Fatalf("all: got %v", indextest.IDs(all))
	}
	if got := indextest.IDs(search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Limit: 5})); !slices.Equal(got, indextest.IDs(all[:5])) {
		t.Fatalf("limit 5: got %v, want %v", got, indextest.IDs(all[:5]))
	}
	floor := all[9].Score
	cut := search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(0), Limit: 100, MinScore: floor})
	if !slices.Equal(indextest.IDs(cut), indextest.IDs(all[:10])) {
		t.Fatalf("min_score %v: got %v, want %v", floor, indextest.IDs(cut), indextest.IDs(all[:10]))
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
	indextest.SameSet(t, "old tag", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(1), Filter: domain.IndexFilter{Tags: []string{"kitchen"}}}))
	indextest.SameSet(t, "new tag", search(t, ix, domain.VectorQuery{Scope: alice, Vector: e(1), Filter: domain.IndexFilter{Tags: []string{"dining"}}}), "r1")
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
	if !slices.Equal(indextest.IDs(first), indextest.IDs(again)) || count(t, ix, alice, small) != 2 {
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
	indextest.SameSet(t, "the acceptable points are stored", search(t, ix, domain.VectorQuery{Scope: alice, Vector: []float32{1, 1, 0, 0}}), "ok1", "ok2")
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
