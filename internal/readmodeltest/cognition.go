package readmodeltest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// Provenance is a provenance read model store with the queries that walk
// its trees.
type Provenance interface {
	memory.ProvenanceReadModel
	Sources(ctx context.Context, userID, agentID string, ids []string) (map[string][]memory.Ref, error)
	Derived(ctx context.Context, userID, agentID string, ids []string) (map[string][]memory.Ref, error)
}

type provOp = op[memory.ProvenanceTx]

func edge(ref memory.AgentRef, child, parent string) provOp {
	return func(ctx context.Context, tx memory.ProvenanceTx) error {
		return tx.AddEdge(ctx, ref, memory.Ref{Type: memory.Belief, ID: child}, memory.Ref{Type: memory.Episode, ID: parent})
	}
}

// RunProvenance runs the suite against the stores open returns.
func RunProvenance(t *testing.T, open func(t *testing.T) Provenance) {
	ctx := context.Background()
	sources := func(t *testing.T, s Provenance, ref memory.AgentRef, id string) []memory.Ref {
		t.Helper()
		m, err := s.Sources(ctx, ref.UserID, ref.AgentID, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		return m[id]
	}
	t.Run("UnitOfWork", unitOfWork[memory.ProvenanceTx]{
		open: func(t *testing.T) domain.ReadModelStore[memory.ProvenanceTx] { return open(t) },
		put: func(ctx context.Context, tx memory.ProvenanceTx, i int) error {
			return edge(alice, id("c", i), "p")(ctx, tx)
		},
		seen: func(t *testing.T, s domain.ReadModelStore[memory.ProvenanceTx], i int) bool {
			return len(sources(t, s.(Provenance), alice, id("c", i))) == 1
		},
	}.run)

	t.Run("EdgesBothWaysPerAgent", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, edge(alice, "c1", "p1"), edge(alice, "c1", "p2"), edge(alice, "c1", "p1"), edge(alice, "c2", "p1"), edge(bob, "c9", "p1"))
		if got := sources(t, s, bob, "c1"); len(got) != 0 {
			t.Fatalf("another user reads alice's edges: %+v", got)
		}
		if got := sources(t, s, alice, "c1"); len(got) != 2 || got[0].ID != "p1" || got[0].Type != memory.Episode || got[1].ID != "p2" {
			t.Fatalf("sources of c1 = %+v, want p1 and p2 once each", got)
		}
		d, err := s.Derived(ctx, alice.UserID, alice.AgentID, []string{"p1"})
		if err != nil || len(d["p1"]) != 2 || d["p1"][0].ID != "c1" || d["p1"][0].Type != memory.Belief || d["p1"][1].ID != "c2" {
			t.Fatalf("derived from p1 = %+v %v, want c1 and c2 (not bob's c9)", d, err)
		}
	})

	t.Run("DeletesAreScoped", func(t *testing.T) {
		s := open(t)
		// Memory ids are unique across users; other agents' memories
		// derive from ids of their own.
		mustApply(t, s, 1, edge(alice, "c1", "p1"), edge(alice, "c2", "c1"), edge(alice, "c3", "p3"),
			edge(aliceTwo, "c4", "p4"), edge(bob, "c5", "p5"),
			func(ctx context.Context, tx memory.ProvenanceTx) error { return tx.DeleteEdgesOf(ctx, alice, "c1") })
		if got := sources(t, s, alice, "c1"); len(got) != 0 {
			t.Fatalf("edges of a purged child survived: %+v", got)
		}
		if got := sources(t, s, alice, "c2"); len(got) != 0 {
			t.Fatalf("edges of a purged parent survived: %+v", got)
		}
		if len(sources(t, s, alice, "c3")) != 1 || len(sources(t, s, aliceTwo, "c4")) != 1 || len(sources(t, s, bob, "c5")) != 1 {
			t.Fatal("a purge removed edges of other memories or agents")
		}
		// A purge names the memory's agent: the same id under another
		// agent removes nothing.
		mustApply(t, s, 7, func(ctx context.Context, tx memory.ProvenanceTx) error { return tx.DeleteEdgesOf(ctx, bob, "c3") })
		if len(sources(t, s, alice, "c3")) != 1 {
			t.Fatal("another user's purge removed an edge")
		}
		mustApply(t, s, 8, func(ctx context.Context, tx memory.ProvenanceTx) error { return tx.DeleteAgentEdges(ctx, alice) })
		if len(sources(t, s, alice, "c3")) != 0 || len(sources(t, s, aliceTwo, "c4")) != 1 || len(sources(t, s, bob, "c5")) != 1 {
			t.Fatal("agent delete is not scoped to the agent")
		}
	})
}

// Suggestions is a suggestions read model store with its queries.
type Suggestions interface {
	processing.SuggestionsReadModel
	Suggestion(ctx context.Context, userID, id string) (processing.Suggestion, bool, error)
	ListSuggestions(ctx context.Context, q processing.SuggestionQuery) ([]processing.Suggestion, error)
}

type sugOp = op[processing.SuggestionsTx]

func suggested(ref memory.AgentRef, sid string) sugOp {
	return func(ctx context.Context, tx processing.SuggestionsTx) error {
		return tx.AddSuggestion(ctx, processing.SuggestionCreated{
			AgentRef: processing.AgentRef{UserID: ref.UserID, AgentID: ref.AgentID}, SuggestionID: sid, Transition: processing.RawToNote,
			MemoryType: "note", Content: json.RawMessage(`{"content":"x"}`), Confidence: 0.8, Sources: []string{"raw_entry:r1"},
			Fingerprint: "f-" + sid, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
		})
	}
}

func resolved(ref memory.AgentRef, sid string, status processing.Status, at time.Time) sugOp {
	return func(ctx context.Context, tx processing.SuggestionsTx) error {
		return tx.Resolve(ctx, processing.SuggestionResolved{AgentRef: processing.AgentRef{UserID: ref.UserID, AgentID: ref.AgentID},
			SuggestionID: sid, Status: status, Reason: "because", PromotedTo: "note:n1", ResolvedAt: at})
	}
}

// RunSuggestions runs the suite against the stores open returns.
func RunSuggestions(t *testing.T, open func(t *testing.T) Suggestions) {
	ctx := context.Background()
	get := func(t *testing.T, s Suggestions, userID, sid string) processing.Suggestion {
		t.Helper()
		v, found, err := s.Suggestion(ctx, userID, sid)
		if err != nil || !found {
			t.Fatalf("suggestion %s of %s: %v %v", sid, userID, found, err)
		}
		return v
	}
	t.Run("UnitOfWork", unitOfWork[processing.SuggestionsTx]{
		open: func(t *testing.T) domain.ReadModelStore[processing.SuggestionsTx] { return open(t) },
		put: func(ctx context.Context, tx processing.SuggestionsTx, i int) error {
			return suggested(alice, id("s", i))(ctx, tx)
		},
		seen: func(t *testing.T, s domain.ReadModelStore[processing.SuggestionsTx], i int) bool {
			_, found, err := s.(Suggestions).Suggestion(ctx, alice.UserID, id("s", i))
			if err != nil {
				t.Fatal(err)
			}
			return found
		},
	}.run)

	t.Run("ResolveOnlyPendingOfTheUser", func(t *testing.T) {
		s := open(t)
		first, later := t0.Add(time.Minute), t0.Add(time.Hour)
		mustApply(t, s, 1, suggested(alice, "s1"), suggested(alice, "s1"), suggested(alice, "s2"),
			resolved(bob, "s1", processing.Rejected, first), // another user's resolve: ignored
			resolved(alice, "s1", processing.Promoted, first),
			resolved(alice, "s1", processing.Rejected, later)) // resolved already: ignored
		v := get(t, s, alice.UserID, "s1")
		if v.Status != processing.Promoted || v.ResolvedAt == nil || !v.ResolvedAt.Equal(first) || v.Reason != "because" || v.PromotedTo != "note:n1" ||
			v.Confidence != 0.8 || len(v.Sources) != 1 || v.Transition != processing.RawToNote || !v.ExpiresAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("s1 = %+v", v)
		}
		if v := get(t, s, alice.UserID, "s2"); v.Status != processing.Pending || v.ResolvedAt != nil {
			t.Fatalf("s2 = %+v", v)
		}
		if _, found, _ := s.Suggestion(ctx, bob.UserID, "s1"); found {
			t.Fatal("another user reads the suggestion")
		}
		pending, err := s.ListSuggestions(ctx, processing.SuggestionQuery{UserID: alice.UserID, AgentID: alice.AgentID, Status: processing.Pending, Now: t0, Limit: 10})
		if err != nil || len(pending) != 1 || pending[0].ID != "s2" {
			t.Fatalf("pending = %+v %v", pending, err)
		}
	})

	t.Run("PromoteWinsOverAnEarlierResolution", func(t *testing.T) {
		s := open(t)
		rejectedAt, promotedAt := t0.Add(time.Minute), t0.Add(2*time.Minute)
		promote := func(ref memory.AgentRef, sid string) sugOp {
			return func(ctx context.Context, tx processing.SuggestionsTx) error {
				return tx.Promote(ctx, processing.SuggestionResolved{AgentRef: processing.AgentRef{UserID: ref.UserID, AgentID: ref.AgentID},
					SuggestionID: sid, Status: processing.Modified, PromotedTo: "note:m1", ResolvedAt: promotedAt})
			}
		}
		mustApply(t, s, 1, suggested(alice, "s1"), suggested(alice, "s2"),
			resolved(alice, "s1", processing.Rejected, rejectedAt), // a concurrent reject recorded first
			promote(alice, "s1"),
			promote(bob, "s2"),      // another user's promotion: ignored
			promote(aliceTwo, "s2")) // another agent's: ignored
		if v := get(t, s, alice.UserID, "s1"); v.Status != processing.Modified || v.PromotedTo != "note:m1" || v.Reason != "" ||
			v.ResolvedAt == nil || !v.ResolvedAt.Equal(promotedAt) {
			t.Fatalf("s1 = %+v", v)
		}
		if v := get(t, s, alice.UserID, "s2"); v.Status != processing.Pending {
			t.Fatalf("s2 = %+v", v)
		}
	})

	t.Run("DeleteAgentSuggestionsIsScoped", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, suggested(alice, "s1"), suggested(aliceTwo, "s2"), suggested(bob, "s3"),
			func(ctx context.Context, tx processing.SuggestionsTx) error {
				return tx.DeleteAgentSuggestions(ctx, alice.UserID, alice.AgentID)
			})
		if _, found, _ := s.Suggestion(ctx, alice.UserID, "s1"); found {
			t.Fatal("a deleted agent's suggestion survived")
		}
		get(t, s, aliceTwo.UserID, "s2")
		get(t, s, bob.UserID, "s3")
	})
}
