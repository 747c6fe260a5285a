package readmodeltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/audit"
)

// Audit is an audit read model store with its query.
type Audit interface {
	audit.ReadModel
	Entries(ctx context.Context, q audit.Query) (audit.Page, error)
}

type auditOp = op[audit.ReadModelTx]

func entry(position uint64, userID, agentID, memoryID string) auditOp {
	return func(ctx context.Context, tx audit.ReadModelTx) error {
		return tx.AddEntry(ctx, position, userID, audit.Entry{
			ID: fmt.Sprintf("ev-%d", position), At: t0.Add(time.Duration(position) * time.Second), Operation: "create",
			AgentID: agentID, MemoryType: "note", MemoryID: memoryID, Actor: "key:k1", Details: json.RawMessage(`{"derived_from":[]}`),
		})
	}
}

// RunAudit runs the suite against the stores open returns.
func RunAudit(t *testing.T, open func(t *testing.T) Audit) {
	ctx := context.Background()
	entries := func(t *testing.T, s Audit, userID, agentID string) []audit.Entry {
		t.Helper()
		p, err := s.Entries(ctx, audit.Query{UserID: userID, AgentID: agentID, Limit: audit.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		return p.Entries
	}
	t.Run("UnitOfWork", unitOfWork[audit.ReadModelTx]{
		open: func(t *testing.T) domain.ReadModelStore[audit.ReadModelTx] { return open(t) },
		put: func(ctx context.Context, tx audit.ReadModelTx, i int) error {
			return entry(uint64(i), "u1", "a1", id("m", i))(ctx, tx)
		},
		seen: func(t *testing.T, s domain.ReadModelStore[audit.ReadModelTx], i int) bool {
			for _, e := range entries(t, s.(Audit), "u1", "a1") {
				if e.MemoryID == id("m", i) {
					return true
				}
			}
			return false
		},
	}.run)

	t.Run("EntriesRoundTripNewestFirstPerUserAndAgent", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, entry(1, "u1", "a1", "m1"), entry(2, "u1", "a1", "m2"), entry(2, "u1", "a1", "m9"), // redelivered position
			entry(3, "u1", "", ""), entry(4, "u2", "a1", "m3"))
		got := entries(t, s, "u1", "a1")
		if len(got) != 2 || got[0].ID != "ev-2" || got[0].MemoryID != "m2" || got[1].ID != "ev-1" {
			t.Fatalf("u1/a1 entries = %+v, want ev-2 (m2) then ev-1", got)
		}
		e := got[1]
		if !e.At.Equal(t0.Add(time.Second)) || e.Operation != "create" || e.AgentID != "a1" || e.MemoryType != "note" || e.Actor != "key:k1" ||
			string(e.Details) != `{"derived_from":[]}` {
			t.Fatalf("entry = %+v", e)
		}
		if acct := entries(t, s, "u1", ""); len(acct) != 1 || acct[0].ID != "ev-3" {
			t.Fatalf("account entries = %+v", acct)
		}
		if other := entries(t, s, "u2", "a1"); len(other) != 1 || other[0].MemoryID != "m3" {
			t.Fatalf("u2 entries = %+v", other)
		}
	})

	// A store may collect a batch's rows and write them many per
	// statement: every row of a large batch lands, in order, and a
	// position seen twice keeps its first entry.
	t.Run("LargeBatchKeepsEveryEntryAndTheFirstOfAPosition", func(t *testing.T) {
		s := open(t)
		const n = 777
		ops := make([]auditOp, 0, n+1)
		for i := 1; i <= n; i++ {
			ops = append(ops, entry(uint64(i), "u1", "a1", id("m", i)))
		}
		ops = append(ops, entry(500, "u1", "a1", "m-redelivered"))
		mustApply(t, s, 1, ops...)
		got := entries(t, s, "u1", "a1")
		if len(got) != n {
			t.Fatalf("%d entries, want %d", len(got), n)
		}
		for i, e := range got {
			if want := n - i; e.ID != fmt.Sprintf("ev-%d", want) || e.MemoryID != id("m", want) {
				t.Fatalf("entry %d = %s (%s), want ev-%d (%s)", i, e.ID, e.MemoryID, want, id("m", want))
			}
		}
	})

	t.Run("MemoryTypesAndAgentDelete", func(t *testing.T) {
		s := open(t)
		var before, after [2]bool
		typeOf := func(into *[2]bool) auditOp {
			return func(ctx context.Context, tx audit.ReadModelTx) error {
				for i, m := range []string{"m1", "m2"} {
					typ, found, err := tx.MemoryType(ctx, m)
					if err != nil {
						return err
					}
					if found && typ != "belief" {
						t.Errorf("type of %s = %q, want belief", m, typ)
					}
					into[i] = found
				}
				return nil
			}
		}
		mustApply(t, s, 1,
			func(ctx context.Context, tx audit.ReadModelTx) error {
				return tx.RememberMemoryType(ctx, "m1", "belief")
			},
			func(ctx context.Context, tx audit.ReadModelTx) error {
				return tx.RememberMemoryType(ctx, "m2", "belief")
			},
			entry(3, "u1", "a1", "m1"), entry(4, "u1", "a2", "m2"), entry(5, "u1", "", ""),
			typeOf(&before),
			func(ctx context.Context, tx audit.ReadModelTx) error { return tx.DeleteAgent(ctx, "u1", "a1") },
			typeOf(&after))
		if before != [2]bool{true, true} || after != [2]bool{false, true} {
			t.Fatalf("types known before/after deleting a1 = %v/%v, want [true true]/[false true]", before, after)
		}
		if len(entries(t, s, "u1", "a1")) != 0 || len(entries(t, s, "u1", "a2")) != 1 || len(entries(t, s, "u1", "")) != 1 {
			t.Fatal("agent delete is not scoped to the agent's entries")
		}
	})

	t.Run("PagesNewestFirstByBefore", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, entry(1, "u1", "a1", "m1"), entry(2, "u1", "a1", "m2"), entry(3, "u2", "a1", "m9"),
			entry(4, "u1", "a1", "m3"), entry(5, "u1", "a1", "m4"), entry(6, "u1", "a1", "m5"))
		var got []string
		before := ""
		for range 3 {
			p, err := s.Entries(ctx, audit.Query{UserID: "u1", AgentID: "a1", Before: before, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Entries {
				got = append(got, e.ID)
			}
			if before = p.NextBefore; before == "" {
				break
			}
		}
		if fmt.Sprint(got) != "[ev-6 ev-5 ev-4 ev-2 ev-1]" || before != "" {
			t.Fatalf("pages = %v (last next_before %q), want [ev-6 ev-5 ev-4 ev-2 ev-1] and no next page", got, before)
		}
		// Another user's entry, or an entry of another agent, is not a
		// bound of this trail: the request is invalid, not empty.
		for _, q := range []audit.Query{{UserID: "u1", AgentID: "a1", Before: "ev-3"}, {UserID: "u1", AgentID: "a2", Before: "ev-4"}, {UserID: "u1", AgentID: "a1", Before: "nope"}} {
			var de *domain.Error
			if _, err := s.Entries(ctx, q); !errors.As(err, &de) || de.Kind != domain.KindInvalid {
				t.Fatalf("Entries(%+v) = %v, want an invalid-request error", q, err)
			}
		}
	})
}
