// Package indexstatetest is the conformance suite of the index
// projections' state ports (domain.KeywordState, domain.VectorState): the
// unit of work with its checkpoint and beforeCommit hook, and each
// transaction operation, read back through the same ports, and batches
// against their writes applied one at a time, compared by the state's
// Export. An adapter runs it with one line per port; every open must
// return a fresh, empty state.
package indexstatetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

var errInjected = errors.New("injected index failure")

// exporter is a state that writes itself as canonical bytes (every
// adapter's does: the replay tests compare a rebuild with them).
type exporter interface {
	Export(ctx context.Context, w io.Writer) error
}

// compareStates fails unless the states export the same bytes and the
// reads within their batches saw the same.
func compareStates(t *testing.T, batched, alone any, seenBatched, seenAlone []string) {
	t.Helper()
	export := func(s any) string {
		e, ok := s.(exporter)
		if !ok {
			t.Fatalf("%T does not export its state", s)
		}
		var buf bytes.Buffer
		if err := e.Export(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if got, want := strings.Join(seenBatched, "\n"), strings.Join(seenAlone, "\n"); got != want {
		t.Fatalf("within the batches:\n%s\nwant what the writes one at a time see:\n%s", got, want)
	}
	if got, want := export(batched), export(alone); got != want {
		t.Fatalf("state after the batches:\n%s\nwant the state of the writes one at a time:\n%s", got, want)
	}
}

// batchCase is batches of steps on a state's write transaction; a step
// records what it reads in seen.
type batchCase[Tx any] struct {
	name    string
	batches [][]func(tx Tx, seen *[]string) error
}

// runBatchCases applies each case's batches as given to one state and
// each step as a batch of its own to another, one event a step, and
// requires the same state and the same reads (compareStates), also after
// the last batch is delivered again (its checkpoint skips it).
func runBatchCases[S, Tx any](t *testing.T, open func(*testing.T) S,
	apply func(s S, events []domain.Event, fn func(context.Context, Tx, domain.Event) error) error, cases []batchCase[Tx]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			batched, alone := open(t), open(t)
			var seenBatched, seenAlone []string
			applySteps := func(s S, first uint64, seen *[]string, steps ...func(Tx, *[]string) error) {
				t.Helper()
				err := apply(s, events(first, len(steps)), func(ctx context.Context, tx Tx, e domain.Event) error {
					return steps[e.Position-first](tx, seen)
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			first := uint64(1)
			for _, steps := range c.batches {
				applySteps(batched, first, &seenBatched, steps...)
				for i, step := range steps {
					applySteps(alone, first+uint64(i), &seenAlone, step)
				}
				first += uint64(len(steps))
			}
			compareStates(t, batched, alone, seenBatched, seenAlone)
			last := c.batches[len(c.batches)-1]
			applySteps(batched, first-uint64(len(last)), &seenBatched, last...) // redelivered: skipped
			compareStates(t, batched, alone, seenBatched, seenAlone)
		})
	}
}

// events are n events at positions first, first+1, …
func events(first uint64, n int) []domain.Event {
	out := make([]domain.Event, n)
	for i := range out {
		out[i] = domain.Event{Position: first + uint64(i), Stream: "conformance", Version: uint64(i), Type: "ConformanceStep"}
	}
	return out
}

var (
	ann    = domain.IndexScope{UserID: "u-ann", AgentID: "a1"}
	bob    = domain.IndexScope{UserID: "u-bob", AgentID: "a1"}
	stamp  = time.Date(2026, 11, 23, 12, 30, 45, 123456789, time.UTC)
	spaceA = domain.VectorSpace{Model: "model-a", Dimensions: 3}
	spaceB = domain.VectorSpace{Model: "model-b", Dimensions: 2}
)

func source(scope domain.IndexScope, id, text string) domain.KeywordSource {
	return domain.KeywordSource{
		MemoryID: id, UserID: scope.UserID, AgentID: scope.AgentID, Type: "note", Tags: []string{"work", "q4"}, CreatedAt: stamp,
		Content: json.RawMessage(`{"content":"` + text + `"}`), Text: text, Meta: "work q4",
	}
}

// RunKeyword checks a domain.KeywordState.
func RunKeyword(t *testing.T, open func(t *testing.T) domain.KeywordState) {
	ctx := context.Background()
	// step applies ops as one batch at first, first+1, …
	step := func(s domain.KeywordState, first uint64, before func(context.Context) error, ops ...func(domain.KeywordStateTx) error) error {
		return s.ApplyKeyword(ctx, events(first, len(ops)), func(ctx context.Context, tx domain.KeywordStateTx, e domain.Event) error {
			return ops[e.Position-first](tx)
		}, before)
	}
	loaded := func(t *testing.T, s domain.KeywordState) []domain.KeywordSource {
		var out []domain.KeywordSource
		if err := s.LoadKeyword(ctx, func(src domain.KeywordSource) error { out = append(out, src); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}

	t.Run("sources round-trip, scoped to their agent", func(t *testing.T) {
		s := open(t)
		want := source(ann, "m1", "budget review")
		want.Forgotten = true
		err := step(s, 1, nil, func(tx domain.KeywordStateTx) error {
			if err := tx.PutAgent(ctx, ann); err != nil {
				return err
			}
			if ok, err := tx.InsertSource(ctx, want); err != nil || !ok {
				return errors.Join(err, errors.New("first insert not inserted"))
			}
			if ok, err := tx.InsertSource(ctx, source(ann, "m1", "other")); err != nil || ok {
				return errors.Join(err, errors.New("second insert of one id inserted"))
			}
			got, found, err := tx.Source(ctx, ann, "m1")
			if err != nil || !found || !reflect.DeepEqual(got, want) {
				return errors.Join(err, errors.New("source read back differs"))
			}
			if _, found, err := tx.Source(ctx, bob, "m1"); err != nil || found {
				return errors.Join(err, errors.New("another agent's scope finds the source"))
			}
			if exists, err := tx.AgentExists(ctx, bob); err != nil || exists {
				return errors.Join(err, errors.New("an agent never put exists"))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := loaded(t, s); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Fatalf("loaded %+v, want %+v", got, want)
		}
	})

	t.Run("update and delete change only their memory", func(t *testing.T) {
		s := open(t)
		changed := source(ann, "m1", "budget moved")
		changed.Tags = nil
		err := step(s, 1, nil,
			func(tx domain.KeywordStateTx) error {
				_, err := tx.InsertSource(ctx, source(ann, "m1", "budget"))
				return err
			},
			func(tx domain.KeywordStateTx) error {
				_, err := tx.InsertSource(ctx, source(ann, "m2", "cat"))
				return err
			},
			func(tx domain.KeywordStateTx) error {
				_, err := tx.InsertSource(ctx, source(bob, "m3", "dog"))
				return err
			},
			func(tx domain.KeywordStateTx) error { return tx.UpdateSource(ctx, changed) },
			func(tx domain.KeywordStateTx) error {
				if ok, err := tx.DeleteSource(ctx, bob, "m2"); err != nil || ok {
					return errors.Join(err, errors.New("delete in another scope deleted"))
				}
				if ok, err := tx.DeleteSource(ctx, ann, "m2"); err != nil || !ok {
					return errors.Join(err, errors.New("delete did not delete"))
				}
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		got := loaded(t, s)
		if len(got) != 2 || got[0].MemoryID != "m1" || got[1].MemoryID != "m3" || got[0].Text != "budget moved" || len(got[0].Tags) != 0 {
			t.Fatalf("loaded %+v, want m1 (updated) then m3", got)
		}
	})

	t.Run("deleting an agent removes its sources only", func(t *testing.T) {
		s := open(t)
		err := step(s, 1, nil,
			func(tx domain.KeywordStateTx) error { return errors.Join(tx.PutAgent(ctx, ann), tx.PutAgent(ctx, bob)) },
			func(tx domain.KeywordStateTx) error {
				_, err := tx.InsertSource(ctx, source(ann, "m1", "x"))
				return err
			},
			func(tx domain.KeywordStateTx) error {
				_, err := tx.InsertSource(ctx, source(bob, "m2", "y"))
				return err
			},
			func(tx domain.KeywordStateTx) error { return tx.DeleteAgent(ctx, ann) },
			func(tx domain.KeywordStateTx) error {
				a, errA := tx.AgentExists(ctx, ann)
				b, errB := tx.AgentExists(ctx, bob)
				if a || !b {
					return errors.Join(errA, errB, errors.New("agents after deleting ann are wrong"))
				}
				return errors.Join(errA, errB)
			})
		if err != nil {
			t.Fatal(err)
		}
		if got := loaded(t, s); len(got) != 1 || got[0].MemoryID != "m2" {
			t.Fatalf("loaded %+v, want bob's m2 only", got)
		}
	})

	// A state may hold a batch's inserts back to write many rows per
	// statement: whatever it holds, the batch leaves the state (seq
	// included) that its writes applied one batch each leave, and the
	// reads and inserts within it answer as they do then.
	t.Run("ABatchLeavesTheStateOfItsWritesOneAtATime", func(t *testing.T) {
		type op = func(tx domain.KeywordStateTx, seen *[]string) error
		insert := func(scope domain.IndexScope, id, text string) op {
			return func(tx domain.KeywordStateTx, seen *[]string) error {
				inserted, err := tx.InsertSource(ctx, source(scope, id, text))
				*seen = append(*seen, fmt.Sprintf("insert %s/%s %q: %v", scope.UserID, id, text, inserted))
				return err
			}
		}
		read := func(scope domain.IndexScope, id string) op {
			return func(tx domain.KeywordStateTx, seen *[]string) error {
				src, found, err := tx.Source(ctx, scope, id)
				*seen = append(*seen, fmt.Sprintf("source %s/%s: %v %s %q %v", scope.UserID, id, found, src.Content, src.Text, src.Forgotten))
				return err
			}
		}
		update := func(scope domain.IndexScope, id, text string) op {
			return func(tx domain.KeywordStateTx, seen *[]string) error {
				src := source(scope, id, text)
				src.Forgotten = true
				return tx.UpdateSource(ctx, src)
			}
		}
		remove := func(scope domain.IndexScope, id string) op {
			return func(tx domain.KeywordStateTx, seen *[]string) error {
				deleted, err := tx.DeleteSource(ctx, scope, id)
				*seen = append(*seen, fmt.Sprintf("delete %s/%s: %v", scope.UserID, id, deleted))
				return err
			}
		}
		agent := func(scope domain.IndexScope) op {
			return func(tx domain.KeywordStateTx, seen *[]string) error { return tx.PutAgent(ctx, scope) }
		}
		deleteAgent := func(scope domain.IndexScope) op {
			return func(tx domain.KeywordStateTx, seen *[]string) error {
				if err := tx.DeleteAgent(ctx, scope); err != nil {
					return err
				}
				exists, err := tx.AgentExists(ctx, scope)
				*seen = append(*seen, fmt.Sprintf("agent %s after its delete: %v", scope.UserID, exists))
				return err
			}
		}
		many := []op{agent(ann)}
		for i := range 300 {
			many = append(many, insert(ann, fmt.Sprintf("m%03d", i), fmt.Sprint("text ", i)))
		}
		many = append(many, insert(ann, "m007", "again"), insert(bob, "m299", "again in another scope"), read(ann, "m299"))
		cases := []batchCase[domain.KeywordStateTx]{
			{"MoreInsertsThanOneStatementTakes", [][]op{many, {insert(ann, "m000", "stored"), insert(ann, "m300", "new"), insert(ann, "m300", "held")}}},
			{"AHeldSourceReadUpdatedAndDeleted", [][]op{{
				insert(ann, "m1", "v1"), read(ann, "m1"), read(bob, "m1"), update(ann, "m1", "v2"), read(ann, "m1"),
				insert(ann, "m2", "v1"), remove(bob, "m2"), remove(ann, "m2"), read(ann, "m2"), insert(ann, "m2", "v3"), insert(ann, "m3", "v1"),
			}}},
			// A delete while inserts are held: the source deleted has the
			// highest seq, which the next insert takes again.
			{"ADeleteOfAStoredSourceWhileInsertsAreHeld", [][]op{
				{insert(ann, "m1", "v1"), insert(ann, "m2", "v1")},
				{insert(ann, "m3", "v1"), remove(ann, "m2"), insert(ann, "m4", "v1"), update(ann, "m1", "v2"), insert(ann, "m5", "v1")},
			}},
			{"AnAgentDeletedAfterItsInserts", [][]op{{
				agent(ann), agent(bob), insert(ann, "m1", "v1"), insert(bob, "m2", "v1"), insert(ann, "m3", "v1"),
				deleteAgent(ann), read(ann, "m1"), read(bob, "m2"), agent(ann), insert(ann, "m1", "v2"), insert(bob, "m3", "v2"),
			}}},
		}
		runBatchCases(t, open, func(s domain.KeywordState, events []domain.Event, fn func(context.Context, domain.KeywordStateTx, domain.Event) error) error {
			return s.ApplyKeyword(ctx, events, fn, nil)
		}, cases)
	})

	t.Run("LoadKeywordOf reads the named memories as LoadKeyword does, in its order", func(t *testing.T) {
		s := open(t)
		var ops []func(domain.KeywordStateTx) error
		ops = append(ops, func(tx domain.KeywordStateTx) error { return errors.Join(tx.PutAgent(ctx, ann), tx.PutAgent(ctx, bob)) })
		for i, id := range []string{"m1", "m2", "m3", "m4"} {
			scope := []domain.IndexScope{ann, bob}[i%2]
			ops = append(ops, func(tx domain.KeywordStateTx) error {
				_, err := tx.InsertSource(ctx, source(scope, id, "text "+id))
				return err
			})
		}
		ops = append(ops, func(tx domain.KeywordStateTx) error {
			src := source(ann, "m3", "changed")
			src.Forgotten = true
			return tx.UpdateSource(ctx, src)
		}, func(tx domain.KeywordStateTx) error { _, err := tx.DeleteSource(ctx, bob, "m2"); return err })
		if err := step(s, 1, nil, ops...); err != nil {
			t.Fatal(err)
		}
		byID := map[string]domain.KeywordSource{}
		for _, src := range loaded(t, s) {
			byID[src.MemoryID] = src
		}
		for _, tt := range []struct {
			ids  []string
			want []string
		}{
			{ids: []string{"m3", "m1", "m2", "gone", "m3"}, want: []string{"m1", "m3"}},
			{ids: []string{"m4"}, want: []string{"m4"}},
			{ids: nil, want: nil},
		} {
			var got []domain.KeywordSource
			if err := s.LoadKeywordOf(ctx, tt.ids, func(src domain.KeywordSource) error { got = append(got, src); return nil }); err != nil {
				t.Fatal(err)
			}
			var want []domain.KeywordSource
			for _, id := range tt.want {
				want = append(want, byID[id])
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("LoadKeywordOf(%q) = %+v, want %+v", tt.ids, got, want)
			}
		}
	})

	t.Run("checkpoint skips what it covers; a failed index write keeps nothing", func(t *testing.T) {
		s := open(t)
		insert := func(id string) func(domain.KeywordStateTx) error {
			return func(tx domain.KeywordStateTx) error { _, err := tx.InsertSource(ctx, source(ann, id, id)); return err }
		}
		var before int
		count := func(context.Context) error { before++; return nil }
		if err := step(s, 1, count, insert("m1"), insert("m2")); err != nil {
			t.Fatal(err)
		}
		// Redelivered with one more event: only the new one applies.
		if err := step(s, 1, count, insert("m1"), insert("m2"), insert("m3")); err != nil {
			t.Fatal(err)
		}
		if err := step(s, 1, count, insert("m1"), insert("m2")); err != nil {
			t.Fatal(err)
		}
		if pos, err := s.KeywordCheckpoint(ctx); err != nil || pos != 3 || before != 2 {
			t.Fatalf("checkpoint %d (%v), index writes %d; want 3 and 2 (none for a batch applied already)", pos, err, before)
		}
		err := step(s, 4, func(context.Context) error { return errInjected }, insert("m4"))
		if !errors.Is(err, errInjected) {
			t.Fatalf("failed index write: %v, want it wrapped", err)
		}
		if pos, _ := s.KeywordCheckpoint(ctx); pos != 3 || len(loaded(t, s)) != 3 {
			t.Fatalf("after a failed index write: checkpoint %d, %d sources; want 3 and 3", pos, len(loaded(t, s)))
		}
		if err := s.ResetKeyword(ctx); err != nil {
			t.Fatal(err)
		}
		if pos, _ := s.KeywordCheckpoint(ctx); pos != 0 || len(loaded(t, s)) != 0 {
			t.Fatalf("after reset: checkpoint %d, %d sources; want none", pos, len(loaded(t, s)))
		}
	})
}

func memory(scope domain.IndexScope, id, hash string) domain.VectorMemory {
	return domain.VectorMemory{MemoryID: id, UserID: scope.UserID, AgentID: scope.AgentID, Type: "note", Tags: []string{"work"}, CreatedAt: stamp, TextHash: hash}
}

// RunVectors checks a domain.VectorState.
func RunVectors(t *testing.T, open func(t *testing.T) domain.VectorState) {
	ctx := context.Background()
	step := func(s domain.VectorState, first uint64, before func(context.Context) error, ops ...func(domain.VectorStateTx) error) error {
		return s.ApplyVectors(ctx, events(first, len(ops)), func(ctx context.Context, tx domain.VectorStateTx, e domain.Event) error {
			return ops[e.Position-first](tx)
		}, before)
	}
	loaded := func(t *testing.T, s domain.VectorState) []domain.LoadedVector {
		var out []domain.LoadedVector
		if err := s.LoadVectors(ctx, func(v domain.LoadedVector) error {
			v.Vector = append([]float32(nil), v.Vector...)
			out = append(out, v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	exact := []float32{0.1, -1e-30, 3.4028235e38}

	t.Run("agents, memories and current vectors round-trip", func(t *testing.T) {
		s := open(t)
		m := memory(ann, "m1", "h1")
		m.Forgotten = true
		err := step(s, 1, nil,
			func(tx domain.VectorStateTx) error {
				return errors.Join(tx.PutAgent(ctx, domain.VectorAgent{UserID: ann.UserID, AgentID: ann.AgentID, Space: spaceB}),
					tx.PutAgent(ctx, domain.VectorAgent{UserID: ann.UserID, AgentID: ann.AgentID, Space: spaceA}))
			},
			func(tx domain.VectorStateTx) error { return tx.PutMemory(ctx, m) },
			func(tx domain.VectorStateTx) error { return tx.PutVector(ctx, "m1", spaceA, "h1", exact) },
			func(tx domain.VectorStateTx) error { return tx.PutVector(ctx, "m1", spaceB, "h0", []float32{1, 2}) },
			func(tx domain.VectorStateTx) error {
				a, found, err := tx.Agent(ctx, ann.UserID, ann.AgentID)
				if err != nil || !found || a.Space != spaceA {
					return errors.Join(err, errors.New("agent's space is not the last put"))
				}
				got, found, err := tx.Memory(ctx, "m1")
				if err != nil || !found || !reflect.DeepEqual(got, m) {
					return errors.Join(err, errors.New("memory read back differs"))
				}
				current, err := tx.CurrentVectors(ctx, "m1")
				if err != nil || len(current) != 1 || current[0].Space != spaceA || !reflect.DeepEqual(current[0].Vector, exact) {
					return errors.Join(err, errors.New("current vectors are not the one of the current text, exactly"))
				}
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		got := loaded(t, s)
		if len(got) != 1 || !reflect.DeepEqual(got[0], domain.LoadedVector{Memory: m, Space: spaceA, Vector: exact}) {
			t.Fatalf("loaded %+v, want m1's current vector, flagged forgotten", got)
		}
		agents, err := s.VectorAgents(ctx)
		if err != nil || len(agents) != 1 || agents[0].Space != spaceA {
			t.Fatalf("agents %+v (%v), want ann in %v", agents, err, spaceA)
		}
	})

	t.Run("a repeated insert keeps the first memory; one after a delete stores again", func(t *testing.T) {
		s := open(t)
		first, second := memory(ann, "m1", "h1"), memory(bob, "m1", "h2")
		second.Type, second.Tags = "fact", nil
		insert := func(m domain.VectorMemory, want bool) func(domain.VectorStateTx) error {
			return func(tx domain.VectorStateTx) error {
				inserted, err := tx.InsertMemory(ctx, m)
				if err == nil && inserted != want {
					err = fmt.Errorf("insert of %s (%s) reported inserted=%v, want %v", m.MemoryID, m.TextHash, inserted, want)
				}
				return err
			}
		}
		read := func(want domain.VectorMemory, wantFound bool) func(domain.VectorStateTx) error {
			return func(tx domain.VectorStateTx) error {
				got, found, err := tx.Memory(ctx, want.MemoryID)
				if err == nil && (found != wantFound || found && !reflect.DeepEqual(got, want)) {
					err = fmt.Errorf("memory %s read back %+v (found %v), want %+v (found %v)", want.MemoryID, got, found, want, wantFound)
				}
				return err
			}
		}
		empty := second
		empty.Tags = []string{}
		// In one batch (the adapter may cache what it inserted) and
		// across batches (it reads what is stored).
		if err := step(s, 1, nil, insert(first, true), insert(second, false), read(first, true)); err != nil {
			t.Fatal(err)
		}
		if err := step(s, 4, nil, read(first, true), insert(second, false), read(first, true)); err != nil {
			t.Fatal(err)
		}
		if err := step(s, 7, nil, insert(second, false), read(first, true), func(tx domain.VectorStateTx) error { return tx.DeleteMemory(ctx, "m1") },
			read(first, false), insert(second, true), read(empty, true), insert(first, false)); err != nil {
			t.Fatal(err)
		}
		if err := step(s, 14, nil, read(empty, true)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("deletes remove what they name only", func(t *testing.T) {
		s := open(t)
		err := step(s, 1, nil,
			func(tx domain.VectorStateTx) error {
				return errors.Join(tx.PutAgent(ctx, domain.VectorAgent{UserID: ann.UserID, AgentID: ann.AgentID, Space: spaceA}),
					tx.PutAgent(ctx, domain.VectorAgent{UserID: bob.UserID, AgentID: bob.AgentID, Space: spaceA}))
			},
			func(tx domain.VectorStateTx) error {
				return errors.Join(tx.PutMemory(ctx, memory(ann, "m1", "h")), tx.PutMemory(ctx, memory(ann, "m2", "h")), tx.PutMemory(ctx, memory(bob, "m3", "h")))
			},
			func(tx domain.VectorStateTx) error {
				return errors.Join(tx.PutVector(ctx, "m1", spaceA, "h", []float32{1, 0, 0}), tx.PutVector(ctx, "m1", spaceB, "h", []float32{1, 0}),
					tx.PutVector(ctx, "m2", spaceA, "h", []float32{0, 1, 0}), tx.PutVector(ctx, "m3", spaceA, "h", []float32{0, 0, 1}))
			},
			func(tx domain.VectorStateTx) error { return tx.DeleteSpace(ctx, ann.UserID, ann.AgentID, spaceB) },
			func(tx domain.VectorStateTx) error { return tx.DeleteMemory(ctx, "m2") },
		)
		if err != nil {
			t.Fatal(err)
		}
		ids := func() []string {
			var out []string
			for _, v := range loaded(t, s) {
				out = append(out, v.Memory.MemoryID+"/"+v.Space.Model)
			}
			return out
		}
		if got := ids(); !reflect.DeepEqual(got, []string{"m1/model-a", "m3/model-a"}) {
			t.Fatalf("vectors after deleting a space and a memory: %v", got)
		}
		if err := step(s, 6, nil, func(tx domain.VectorStateTx) error { return tx.DeleteAgent(ctx, ann.UserID, ann.AgentID) }); err != nil {
			t.Fatal(err)
		}
		agents, _ := s.VectorAgents(ctx)
		if got := ids(); !reflect.DeepEqual(got, []string{"m3/model-a"}) || len(agents) != 1 || agents[0].UserID != bob.UserID {
			t.Fatalf("after deleting ann: vectors %v, agents %+v; want bob's only", got, agents)
		}
	})

	// A state may hold a batch's inserts back to write many rows per
	// statement: whatever it holds, the batch leaves the state (seq
	// included) that its writes applied one batch each leave, and the
	// reads and inserts within it answer as they do then.
	t.Run("ABatchLeavesTheStateOfItsWritesOneAtATime", func(t *testing.T) {
		type op = func(tx domain.VectorStateTx, seen *[]string) error
		agent := func(scope domain.IndexScope, space domain.VectorSpace) op {
			return func(tx domain.VectorStateTx, seen *[]string) error {
				return tx.PutAgent(ctx, domain.VectorAgent{UserID: scope.UserID, AgentID: scope.AgentID, Space: space})
			}
		}
		insert := func(scope domain.IndexScope, id, hash string) op {
			return func(tx domain.VectorStateTx, seen *[]string) error {
				inserted, err := tx.InsertMemory(ctx, memory(scope, id, hash))
				*seen = append(*seen, fmt.Sprintf("insert %s/%s %s: %v", scope.UserID, id, hash, inserted))
				return err
			}
		}
		vector := func(id string, space domain.VectorSpace, hash string, x float32) op {
			return func(tx domain.VectorStateTx, seen *[]string) error {
				v := make([]float32, space.Dimensions)
				v[0] = x
				return tx.PutVector(ctx, id, space, hash, v)
			}
		}
		read := func(id string) op {
			return func(tx domain.VectorStateTx, seen *[]string) error {
				m, found, err := tx.Memory(ctx, id)
				if err != nil {
					return err
				}
				current, err := tx.CurrentVectors(ctx, id)
				*seen = append(*seen, fmt.Sprintf("memory %s: %v %+v, current %v", id, found, m, current))
				return err
			}
		}
		update := func(scope domain.IndexScope, id, hash string) op {
			return func(tx domain.VectorStateTx, seen *[]string) error {
				m := memory(scope, id, hash)
				m.Tags, m.Forgotten = []string{"moved"}, true
				return tx.PutMemory(ctx, m)
			}
		}
		remove := func(id string) op {
			return func(tx domain.VectorStateTx, seen *[]string) error { return tx.DeleteMemory(ctx, id) }
		}
		deleteSpace := func(scope domain.IndexScope, space domain.VectorSpace) op {
			return func(tx domain.VectorStateTx, seen *[]string) error {
				return tx.DeleteSpace(ctx, scope.UserID, scope.AgentID, space)
			}
		}
		deleteAgent := func(scope domain.IndexScope) op {
			return func(tx domain.VectorStateTx, seen *[]string) error {
				if err := tx.DeleteAgent(ctx, scope.UserID, scope.AgentID); err != nil {
					return err
				}
				_, exists, err := tx.Agent(ctx, scope.UserID, scope.AgentID)
				*seen = append(*seen, fmt.Sprintf("agent %s after its delete: %v", scope.UserID, exists))
				return err
			}
		}
		many := []op{agent(ann, spaceA)}
		for i := range 300 {
			id := fmt.Sprintf("m%03d", i)
			many = append(many, insert(ann, id, "h"), vector(id, spaceA, "h", float32(i)))
		}
		many = append(many, insert(ann, "m007", "again"), insert(bob, "m299", "again"), vector("m299", spaceA, "h", -1), read("m299"))
		cases := []batchCase[domain.VectorStateTx]{
			{"MoreInsertsThanOneStatementTakes", [][]op{many, {insert(ann, "m000", "stored"), insert(ann, "m300", "h"), insert(ann, "m300", "held")}}},
			{"AHeldMemoryReadUpdatedAndDeleted", [][]op{{
				insert(ann, "m1", "h1"), vector("m1", spaceA, "h1", 1), read("m1"), vector("m1", spaceA, "h1", 2), vector("m1", spaceB, "h1", 3), read("m1"),
				update(ann, "m1", "h2"), vector("m1", spaceA, "h2", 4), read("m1"),
				insert(ann, "m2", "h1"), vector("m2", spaceA, "h1", 5), remove("m2"), read("m2"), insert(bob, "m2", "h3"), vector("m2", spaceA, "h3", 6),
				insert(ann, "m3", "h1"), vector("m3", spaceA, "h1", 7), vector("m3", spaceB, "h1", 8), deleteSpace(ann, spaceB), vector("m3", spaceB, "h1", 9), read("m3"),
			}}},
			// Deletes while inserts are held: the vector deleted has the
			// highest seq, which the next insert takes again.
			{"ADeleteOfAStoredMemoryWhileInsertsAreHeld", [][]op{
				{insert(ann, "m1", "h"), vector("m1", spaceA, "h", 1), insert(ann, "m2", "h"), vector("m2", spaceB, "h", 2)},
				{insert(ann, "m3", "h"), vector("m3", spaceA, "h", 3), remove("m2"), insert(ann, "m4", "h"), vector("m4", spaceB, "h", 4),
					deleteSpace(ann, spaceB), vector("m1", spaceA, "h", 5), update(ann, "m1", "h"), vector("m5", spaceA, "h", 6)},
			}},
			{"AnAgentDeletedAfterItsInserts", [][]op{{
				agent(ann, spaceA), agent(bob, spaceA), insert(ann, "m1", "h"), vector("m1", spaceA, "h", 1), insert(bob, "m2", "h"), vector("m2", spaceA, "h", 2),
				deleteAgent(ann), read("m1"), read("m2"), agent(ann, spaceB), insert(ann, "m1", "h2"), vector("m1", spaceB, "h2", 3), read("m1"),
			}}},
		}
		runBatchCases(t, open, func(s domain.VectorState, events []domain.Event, fn func(context.Context, domain.VectorStateTx, domain.Event) error) error {
			return s.ApplyVectors(ctx, events, fn, nil)
		}, cases)
	})

	t.Run("LoadVectorsOf reads the named memories' vectors as LoadVectors does, in its order", func(t *testing.T) {
		s := open(t)
		err := step(s, 1, nil,
			func(tx domain.VectorStateTx) error {
				return errors.Join(tx.PutAgent(ctx, domain.VectorAgent{UserID: ann.UserID, AgentID: ann.AgentID, Space: spaceA}),
					tx.PutAgent(ctx, domain.VectorAgent{UserID: bob.UserID, AgentID: bob.AgentID, Space: spaceB}))
			},
			func(tx domain.VectorStateTx) error {
				return errors.Join(tx.PutMemory(ctx, memory(ann, "m1", "h1")), tx.PutMemory(ctx, memory(bob, "m2", "h2")), tx.PutMemory(ctx, memory(ann, "m3", "h3")))
			},
			func(tx domain.VectorStateTx) error {
				return errors.Join(tx.PutVector(ctx, "m1", spaceA, "h1", []float32{1, 0, 0}), tx.PutVector(ctx, "m1", spaceB, "h1", []float32{0, 1}),
					tx.PutVector(ctx, "m2", spaceB, "h2", []float32{1, 1}), tx.PutVector(ctx, "m3", spaceA, "old", []float32{0, 0, 1}))
			})
		if err != nil {
			t.Fatal(err)
		}
		all := loaded(t, s)
		for _, tt := range []struct {
			ids  []string
			want []string
		}{
			{ids: []string{"m3", "m1", "gone"}, want: []string{"m1"}}, // m3 has no vector of its current text
			{ids: []string{"m2", "m1"}, want: []string{"m1", "m2"}},
			{ids: nil, want: nil},
		} {
			var got []domain.LoadedVector
			if err := s.LoadVectorsOf(ctx, tt.ids, func(v domain.LoadedVector) error {
				v.Vector = append([]float32(nil), v.Vector...)
				got = append(got, v)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var want []domain.LoadedVector
			for _, v := range all {
				if slices.Contains(tt.want, v.Memory.MemoryID) {
					want = append(want, v)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("LoadVectorsOf(%q) = %+v, want %+v", tt.ids, got, want)
			}
		}
	})

	t.Run("checkpoint skips what it covers; a failed index write keeps nothing", func(t *testing.T) {
		s := open(t)
		put := func(id string) func(domain.VectorStateTx) error {
			return func(tx domain.VectorStateTx) error {
				return errors.Join(tx.PutMemory(ctx, memory(ann, id, "h")), tx.PutVector(ctx, id, spaceA, "h", []float32{1, 2, 3}))
			}
		}
		var before int
		count := func(context.Context) error { before++; return nil }
		if err := step(s, 1, count, put("m1"), put("m2")); err != nil {
			t.Fatal(err)
		}
		if err := step(s, 1, count, put("m1"), put("m2")); err != nil {
			t.Fatal(err)
		}
		if pos, err := s.VectorsCheckpoint(ctx); err != nil || pos != 2 || before != 1 {
			t.Fatalf("checkpoint %d (%v), index writes %d; want 2 and 1", pos, err, before)
		}
		if err := step(s, 3, func(context.Context) error { return errInjected }, put("m3")); !errors.Is(err, errInjected) {
			t.Fatalf("failed index write: %v, want it wrapped", err)
		}
		if pos, _ := s.VectorsCheckpoint(ctx); pos != 2 || len(loaded(t, s)) != 2 {
			t.Fatalf("after a failed index write: checkpoint %d, %d vectors; want 2 and 2", pos, len(loaded(t, s)))
		}
		if err := s.ResetVectors(ctx); err != nil {
			t.Fatal(err)
		}
		agents, _ := s.VectorAgents(ctx)
		if pos, _ := s.VectorsCheckpoint(ctx); pos != 0 || len(loaded(t, s)) != 0 || len(agents) != 0 {
			t.Fatalf("after reset: checkpoint %d, %d vectors, %d agents; want none", pos, len(loaded(t, s)), len(agents))
		}
	})
}
