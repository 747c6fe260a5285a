// Package keywordindextest is the conformance suite every
// domain.KeywordIndex adapter (embedded, Meilisearch) must pass. It states
// the port's contract as tests: scoping to one user's agent, every filter
// alone and combined, forget/purge/agent deletion, scores in [0, 1] with
// best-first ordering, idempotent redelivery, read-your-writes and
// surfaced errors.
//
// The suite asserts nothing a backend may legitimately rank differently
// (BM25 against Meilisearch's bucket sort): only that a document matching
// every query word outranks one matching fewer, and that equal documents
// come newer first.
package keywordindextest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/indextest"
)

// Target describes the adapter under test.
type Target = indextest.Target[domain.KeywordIndex]

// Run runs the suite.
func Run(t *testing.T, target Target) {
	indextest.Suite[domain.KeywordIndex]{
		Cases: []indextest.Case[domain.KeywordIndex]{
			{Name: "ReadYourWrites", Run: readYourWrites},
			{Name: "IsolationBetweenUsersAndAgents", Run: isolation},
			{Name: "ForgetAndUnforget", Run: forgetAndUnforget},
			{Name: "UpsertForgottenDocument", Run: upsertForgotten},
			{Name: "IncludeForgotten", Run: includeForgotten},
			{Name: "DeleteMemory", Run: deleteMemory},
			{Name: "DeleteAgent", Run: deleteAgent},
			{Name: "DropAll", Run: dropAll},
			{Name: "ScoresAndOrdering", Run: scoresAndOrdering},
			{Name: "EqualScoresNewerFirst", Run: equalScoresNewerFirst},
			{Name: "MinScoreAndLimit", Run: minScoreAndLimit},
			{Name: "ReplaceChangesText", Run: replaceChangesText},
			{Name: "IdempotentRedelivery", Run: idempotentRedelivery},
			{Name: "QuerySyntaxIsPlainText", Run: querySyntaxIsPlainText},
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
	t0     = indextest.T0
)

func doc(scope domain.IndexScope, id, typ, text string, created time.Time, tags ...string) domain.KeywordDocument {
	return domain.KeywordDocument{
		MemoryID: id, UserID: scope.UserID, AgentID: scope.AgentID, Type: typ, Tags: tags,
		CreatedAt: created, Text: text, TextHash: fmt.Sprintf("h-%s-%d", id, len(text)),
	}
}

func upsert(t *testing.T, ix domain.KeywordIndex, docs ...domain.KeywordDocument) {
	t.Helper()
	if err := ix.UpsertDocuments(context.Background(), docs...); err != nil {
		t.Fatalf("UpsertDocuments: %v", err)
	}
}

func search(t *testing.T, ix domain.KeywordIndex, q domain.KeywordQuery) []domain.IndexHit {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 10
	}
	hits, err := ix.SearchKeyword(context.Background(), q)
	if err != nil {
		t.Fatalf("SearchKeyword(%+v): %v", q, err)
	}
	return hits
}

func readYourWrites(t *testing.T, ix domain.KeywordIndex) {
	if err := ix.Ready(context.Background()); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	indextest.SameSet(t, "empty index", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "lighthouse"}))
	upsert(t, ix, doc(alice, "m1", "note", "the lighthouse keeper", t0))
	hits := search(t, ix, domain.KeywordQuery{Scope: alice, Text: "lighthouse"})
	indextest.SameSet(t, "after upsert", hits, "m1")
	if !hits[0].CreatedAt.Equal(t0) {
		t.Fatalf("hit CreatedAt = %v, want %v", hits[0].CreatedAt, t0)
	}
}

func isolation(t *testing.T, ix domain.KeywordIndex) {
	upsert(t, ix,
		doc(alice, "a1", "note", "granite quarry visit", t0),
		doc(alice2, "a2", "note", "granite quarry visit", t0),
		doc(bruno, "b1", "note", "granite quarry visit", t0),
	)
	for _, c := range []struct {
		scope domain.IndexScope
		want  string
	}{{alice, "a1"}, {alice2, "a2"}, {bruno, "b1"}} {
		indextest.SameSet(t, fmt.Sprintf("scope %+v", c.scope), search(t, ix, domain.KeywordQuery{Scope: c.scope, Text: "granite"}), c.want)
	}
	indextest.SameSet(t, "unknown agent", search(t, ix, domain.KeywordQuery{Scope: domain.IndexScope{UserID: "u-alice", AgentID: "nobody"}, Text: "granite"}))
}

// checkFilters stores the filter fixture as documents of one text and
// runs cases with a query that matches it all.
func checkFilters(t *testing.T, ix domain.KeywordIndex, cases []indextest.FilterCase) {
	var docs []domain.KeywordDocument
	for _, m := range indextest.FilterFixture {
		docs = append(docs, doc(alice, m.ID, m.Type, "harbour crane report", m.CreatedAt, m.Tags...))
	}
	upsert(t, ix, docs...)
	indextest.CheckFilters(t, cases, func(f domain.IndexFilter) []domain.IndexHit {
		return search(t, ix, domain.KeywordQuery{Scope: alice, Text: "harbour crane", Filter: f})
	})
}

func forgetAndUnforget(t *testing.T, ix domain.KeywordIndex) {
	ctx := context.Background()
	upsert(t, ix, doc(alice, "k1", "note", "violin lesson", t0), doc(alice, "k2", "note", "violin repair", t0))
	if err := ix.SetForgotten(ctx, alice, "k1", true); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "after forget", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "violin"}), "k2")
	if err := ix.SetForgotten(ctx, alice, "k1", true); err != nil {
		t.Fatalf("forgetting twice: %v", err)
	}
	if err := ix.SetForgotten(ctx, bruno, "k2", true); err != nil {
		t.Fatalf("forgetting another user's memory id: %v", err)
	}
	indextest.SameSet(t, "another scope's forget changes nothing", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "violin"}), "k2")
	if err := ix.SetForgotten(ctx, alice, "k1", false); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "after unforget", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "violin"}), "k1", "k2")
	if err := ix.SetForgotten(ctx, alice, "absent", true); err != nil {
		t.Fatalf("forgetting an absent memory: %v", err)
	}
}

func upsertForgotten(t *testing.T, ix domain.KeywordIndex) {
	d := doc(alice, "g1", "note", "walrus sighting", t0)
	d.Forgotten = true
	upsert(t, ix, d)
	indextest.SameSet(t, "forgotten document", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "walrus"}))
	d.Forgotten = false
	upsert(t, ix, d)
	indextest.SameSet(t, "re-upserted not forgotten", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "walrus"}), "g1")
}

// includeForgotten: a query that includes forgotten memories finds them
// with their filters and scope still applied; the next query without the
// flag does not.
func includeForgotten(t *testing.T, ix domain.KeywordIndex) {
	ctx := context.Background()
	upsert(t, ix, doc(alice, "i1", "note", "heron nest", t0), doc(alice, "i2", "episode", "heron flight", t0),
		doc(alice2, "i3", "note", "heron nest", t0), doc(bruno, "i4", "note", "heron nest", t0))
	for _, f := range []struct {
		scope domain.IndexScope
		id    string
	}{{alice, "i1"}, {alice, "i2"}, {alice2, "i3"}, {bruno, "i4"}} {
		if err := ix.SetForgotten(ctx, f.scope, f.id, true); err != nil {
			t.Fatal(err)
		}
	}
	with := domain.IndexFilter{IncludeForgotten: true}
	indextest.SameSet(t, "without the flag", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "heron"}))
	indextest.SameSet(t, "with the flag", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "heron", Filter: with}), "i1", "i2")
	indextest.SameSet(t, "with the flag and a type filter", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "heron",
		Filter: domain.IndexFilter{IncludeForgotten: true, Types: []string{"episode"}}}), "i2")
	indextest.SameSet(t, "with the flag, other user", search(t, ix, domain.KeywordQuery{Scope: bruno, Text: "heron", Filter: with}), "i4")
	indextest.SameSet(t, "still hidden without the flag", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "heron"}))
	if err := ix.SetForgotten(ctx, alice, "i1", false); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "after unforget, with the flag", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "heron", Filter: with}), "i1", "i2")
	indextest.SameSet(t, "after unforget, without", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "heron"}), "i1")
}

func deleteMemory(t *testing.T, ix domain.KeywordIndex) {
	ctx := context.Background()
	upsert(t, ix, doc(alice, "d1", "note", "saffron rice", t0), doc(alice, "d2", "note", "saffron tea", t0))
	if err := ix.DeleteMemory(ctx, alice, "d1"); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "after delete", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "saffron"}), "d2")
	for _, id := range []string{"d1", "absent"} {
		if err := ix.DeleteMemory(ctx, alice, id); err != nil {
			t.Fatalf("deleting %s again/absent: %v", id, err)
		}
	}
}

func deleteAgent(t *testing.T, ix domain.KeywordIndex) {
	ctx := context.Background()
	upsert(t, ix, doc(alice, "x1", "note", "orchard pruning", t0), doc(alice2, "x2", "note", "orchard pruning", t0), doc(bruno, "x3", "note", "orchard pruning", t0))
	if err := ix.DeleteAgent(ctx, alice); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "deleted agent", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "orchard"}))
	indextest.SameSet(t, "same user's other agent", search(t, ix, domain.KeywordQuery{Scope: alice2, Text: "orchard"}), "x2")
	indextest.SameSet(t, "other user's agent of that name", search(t, ix, domain.KeywordQuery{Scope: bruno, Text: "orchard"}), "x3")
	if err := ix.DeleteAgent(ctx, alice); err != nil {
		t.Fatalf("deleting an agent twice: %v", err)
	}
	upsert(t, ix, doc(alice, "x4", "note", "orchard again", t0))
	indextest.SameSet(t, "agent recreated", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "orchard"}), "x4")
}

func dropAll(t *testing.T, ix domain.KeywordIndex) {
	ctx := context.Background()
	upsert(t, ix, doc(alice, "y1", "note", "glacier hike", t0), doc(bruno, "y2", "note", "glacier hike", t0))
	if err := ix.SetForgotten(ctx, alice, "y1", true); err != nil {
		t.Fatal(err)
	}
	if err := ix.DropAll(ctx); err != nil {
		t.Fatal(err)
	}
	indextest.SameSet(t, "after drop", search(t, ix, domain.KeywordQuery{Scope: bruno, Text: "glacier"}))
	upsert(t, ix, doc(alice, "y1", "note", "glacier hike", t0))
	indextest.SameSet(t, "rebuilt after drop (forgotten state gone too)", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "glacier"}), "y1")
}

func scoresAndOrdering(t *testing.T, ix domain.KeywordIndex) {
	upsert(t, ix,
		doc(alice, "s1", "note", "the tram to the museum was late", t0),
		doc(alice, "s2", "note", "museum tickets bought for the tram tour of the old museum quarter", t0),
		doc(alice, "s3", "note", "a tram ride", t0),
		doc(alice, "s4", "note", "nothing relevant here", t0),
	)
	hits := search(t, ix, domain.KeywordQuery{Scope: alice, Text: "museum tram"})
	indextest.SameSet(t, "matches", hits, "s1", "s2", "s3")
	for i, h := range hits {
		if h.Score <= 0 || h.Score > 1 {
			t.Fatalf("hit %d score %v outside (0, 1]", i, h.Score)
		}
		if i > 0 && h.Score > hits[i-1].Score {
			t.Fatalf("hits not best first: %v", hits)
		}
	}
	if hits[len(hits)-1].MemoryID != "s3" {
		t.Fatalf("the memory matching one of two words ranks last, got %v", indextest.IDs(hits))
	}
}

func equalScoresNewerFirst(t *testing.T, ix domain.KeywordIndex) {
	upsert(t, ix,
		doc(alice, "e1", "note", "pelican", t0),
		doc(alice, "e2", "note", "pelican", t0.Add(2*time.Hour)),
		doc(alice, "e3", "note", "pelican", t0.Add(time.Hour)),
	)
	hits := search(t, ix, domain.KeywordQuery{Scope: alice, Text: "pelican"})
	if got := indextest.IDs(hits); !slices.Equal(got, []string{"e2", "e3", "e1"}) {
		t.Fatalf("equal documents: got %v, want newer first [e2 e3 e1]", got)
	}
	if hits[0].Score != hits[2].Score {
		t.Fatalf("identical documents scored %v and %v", hits[0].Score, hits[2].Score)
	}
}

func minScoreAndLimit(t *testing.T, ix domain.KeywordIndex) {
	for i := range 12 {
		upsert(t, ix, doc(alice, fmt.Sprintf("l%02d", i), "note", "compass bearing "+fmt.Sprint(i), t0.Add(time.Duration(i)*time.Minute)))
	}
	upsert(t, ix, doc(alice, "best", "note", "compass compass bearing", t0))
	all := search(t, ix, domain.KeywordQuery{Scope: alice, Text: "compass bearing", Limit: 100})
	if len(all) != 13 {
		t.Fatalf("got %d hits, want 13", len(all))
	}
	limited := search(t, ix, domain.KeywordQuery{Scope: alice, Text: "compass bearing", Limit: 5})
	if !slices.Equal(indextest.IDs(limited), indextest.IDs(all[:5])) {
		t.Fatalf("limit 5: got %v, want the first five of %v", indextest.IDs(limited), indextest.IDs(all))
	}
	top := all[0].Score
	cut := search(t, ix, domain.KeywordQuery{Scope: alice, Text: "compass bearing", Limit: 100, MinScore: top})
	for _, h := range cut {
		if h.Score < top {
			t.Fatalf("min_score %v let %v through", top, h)
		}
	}
	if len(cut) == 0 || len(cut) == len(all) {
		t.Fatalf("min_score %v kept %d of %d hits", top, len(cut), len(all))
	}
	if hits := search(t, ix, domain.KeywordQuery{Scope: alice, Text: "compass", Limit: 100, MinScore: 1.01}); len(hits) != 0 {
		t.Fatalf("min_score above 1 kept %v", indextest.IDs(hits))
	}
}

func replaceChangesText(t *testing.T, ix domain.KeywordIndex) {
	upsert(t, ix, doc(alice, "r1", "note", "copper kettle", t0, "kitchen"))
	upsert(t, ix, doc(alice, "r1", "note", "silver teapot", t0, "dining"))
	indextest.SameSet(t, "old text", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "copper"}))
	indextest.SameSet(t, "new text", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "teapot"}), "r1")
	indextest.SameSet(t, "old tag", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "teapot", Filter: domain.IndexFilter{Tags: []string{"kitchen"}}}))
	indextest.SameSet(t, "new tag", search(t, ix, domain.KeywordQuery{Scope: alice, Text: "teapot", Filter: domain.IndexFilter{Tags: []string{"dining"}}}), "r1")
}

func idempotentRedelivery(t *testing.T, ix domain.KeywordIndex) {
	ctx := context.Background()
	batch := []domain.KeywordDocument{
		doc(alice, "i1", "note", "marble staircase", t0),
		doc(alice, "i2", "note", "marble floor and marble columns", t0.Add(time.Minute)),
		doc(alice, "i3", "note", "wooden staircase", t0.Add(2*time.Minute)),
	}
	upsert(t, ix, batch...)
	if err := ix.DeleteMemory(ctx, alice, "i3"); err != nil {
		t.Fatal(err)
	}
	first := search(t, ix, domain.KeywordQuery{Scope: alice, Text: "marble staircase"})
	upsert(t, ix, batch[:2]...) // the batch delivered again, without the deleted one
	if err := ix.DeleteMemory(ctx, alice, "i3"); err != nil {
		t.Fatal(err)
	}
	again := search(t, ix, domain.KeywordQuery{Scope: alice, Text: "marble staircase"})
	if !slices.Equal(first, again) {
		t.Fatalf("redelivery changed results:\n first %v\n again %v", first, again)
	}
}

func querySyntaxIsPlainText(t *testing.T, ix domain.KeywordIndex) {
	upsert(t, ix, doc(alice, "q1", "note", "error code AND status", t0))
	for _, q := range []string{`"unbalanced`, `status AND -code OR (`, `*`, `created_at > 0`, `user_id = "u-bruno"`, ``, `   `} {
		if _, err := ix.SearchKeyword(context.Background(), domain.KeywordQuery{Scope: alice, Text: q, Limit: 10}); err != nil {
			t.Fatalf("query %q: %v", q, err)
		}
	}
	indextest.SameSet(t, "filter-like text matches no other user", search(t, ix, domain.KeywordQuery{Scope: bruno, Text: `status OR user_id = "u-alice"`}))
}

func canceledContextFails(t *testing.T, ix domain.KeywordIndex) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := doc(alice, "c1", "note", "cancelled", t0)
	for name, op := range map[string]func() error{
		"UpsertDocuments": func() error { return ix.UpsertDocuments(ctx, d) },
		"SetForgotten":    func() error { return ix.SetForgotten(ctx, alice, "c1", true) },
		"DeleteMemory":    func() error { return ix.DeleteMemory(ctx, alice, "c1") },
		"DeleteAgent":     func() error { return ix.DeleteAgent(ctx, alice) },
		"DropAll":         func() error { return ix.DropAll(ctx) },
		"SearchKeyword": func() error {
			_, err := ix.SearchKeyword(ctx, domain.KeywordQuery{Scope: alice, Text: "x", Limit: 1})
			return err
		},
		"Ready": func() error { return ix.Ready(ctx) },
	} {
		if err := op(); err == nil {
			t.Errorf("%s with a canceled context returned nil", name)
		}
	}
}

func unreachable(t *testing.T, ix domain.KeywordIndex) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := doc(alice, "z1", "note", "unreachable", t0)
	for name, op := range map[string]func() error{
		"UpsertDocuments": func() error { return ix.UpsertDocuments(ctx, d) },
		"SetForgotten":    func() error { return ix.SetForgotten(ctx, alice, "z1", true) },
		"DeleteMemory":    func() error { return ix.DeleteMemory(ctx, alice, "z1") },
		"DeleteAgent":     func() error { return ix.DeleteAgent(ctx, alice) },
		"DropAll":         func() error { return ix.DropAll(ctx) },
		"SearchKeyword": func() error {
			_, err := ix.SearchKeyword(ctx, domain.KeywordQuery{Scope: alice, Text: "x", Limit: 1})
			return err
		},
		"Ready": func() error { return ix.Ready(ctx) },
	} {
		if err := op(); !errors.Is(err, domain.ErrIndexUnavailable) {
			t.Errorf("%s against a down backend: %v, want ErrIndexUnavailable", name, err)
		}
	}
}
