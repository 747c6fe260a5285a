package readmodeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Memories is a memories read model store with the queries the memory
// commands and the embedding queue read it by.
type Memories interface {
	memory.ReadModel
	Agent(ctx context.Context, userID, agentID string) (memory.AgentView, bool, error)
	Memory(ctx context.Context, userID, id string) (memory.View, bool, error)
	PendingEmbeddings(ctx context.Context, limit int) ([]memory.PendingEmbedding, error)
	StreamVersion(ctx context.Context, stream string) (int64, error)
}

type memOp = op[memory.ReadModelTx]

var (
	alice    = memory.AgentRef{UserID: "u1", AgentID: "a1"}
	aliceTwo = memory.AgentRef{UserID: "u1", AgentID: "a2"}
	bob      = memory.AgentRef{UserID: "u2", AgentID: "a1"}
)

func addAgent(ref memory.AgentRef, model string) memOp {
	return func(ctx context.Context, tx memory.ReadModelTx) error {
		return tx.AddAgent(ctx, memory.AgentCreated{AgentRef: ref, EmbeddingModel: model, Dimensions: 4, CreatedAt: t0})
	}
}

func note(text string) json.RawMessage {
	raw, _ := json.Marshal(memory.NoteContent{Content: text})
	return raw
}

func newNote(ref memory.AgentRef, id, text string) memory.NewMemory {
	content := note(text)
	return memory.NewMemory{
		MemoryCreated: memory.MemoryCreated{AgentRef: ref, MemoryID: id, Type: memory.Note, Content: content, Tags: []string{"t1"},
			DerivedFrom: []string{}, CreatedAt: t0, TextHash: memory.TextHash(text)},
		Vitality: memory.InitialVitality(memory.Note, content, t0),
	}
}

func raw(ref memory.AgentRef, id, content string) memory.NewMemory {
	return memory.NewMemory{
		MemoryCreated: memory.MemoryCreated{AgentRef: ref, MemoryID: id, Type: memory.RawEntry, Content: json.RawMessage(content),
			Tags: []string{}, DerivedFrom: []string{}, CreatedAt: t0, TextHash: memory.TextHash(content)},
		Vitality: memory.InitialVitality(memory.RawEntry, json.RawMessage(content), t0),
	}
}

func insert(m memory.NewMemory) memOp {
	return func(ctx context.Context, tx memory.ReadModelTx) error {
		return tx.InsertMemory(ctx, m)
	}
}

func embedded(ref memory.AgentRef, id, model, text string) memOp {
	return func(ctx context.Context, tx memory.ReadModelTx) error {
		return tx.RecordEmbedding(ctx, ref, id, model, 4, memory.TextHash(text))
	}
}

// RunMemories runs the suite against the stores open returns.
func RunMemories(t *testing.T, open func(t *testing.T) Memories) {
	ctx := context.Background()
	view := func(t *testing.T, s Memories, userID, id string) memory.View {
		t.Helper()
		v, found, err := s.Memory(ctx, userID, id)
		if err != nil || !found {
			t.Fatalf("memory %s of %s: %v %v", id, userID, found, err)
		}
		return v
	}
	agent := func(t *testing.T, s Memories, ref memory.AgentRef) memory.AgentView {
		t.Helper()
		a, found, err := s.Agent(ctx, ref.UserID, ref.AgentID)
		if err != nil || !found {
			t.Fatalf("agent %+v: %v %v", ref, found, err)
		}
		return a
	}
	pending := func(t *testing.T, s Memories) []string {
		t.Helper()
		p, err := s.PendingEmbeddings(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(p))
		for i, e := range p {
			ids[i] = e.MemoryID
		}
		return ids
	}

	t.Run("UnitOfWork", unitOfWork[memory.ReadModelTx]{
		open: func(t *testing.T) domain.ReadModelStore[memory.ReadModelTx] { return open(t) },
		put: func(ctx context.Context, tx memory.ReadModelTx, i int) error {
			return addAgent(memory.AgentRef{UserID: "u1", AgentID: id("a", i)}, "m1")(ctx, tx)
		},
		seen: func(t *testing.T, s domain.ReadModelStore[memory.ReadModelTx], i int) bool {
			_, found, err := s.(Memories).Agent(ctx, "u1", id("a", i))
			if err != nil {
				t.Fatal(err)
			}
			return found
		},
	}.run)

	t.Run("AgentsFirstBindingWinsAndExistenceFollowsTheBatch", func(t *testing.T) {
		s := open(t)
		var seen []bool
		exists := func(ctx context.Context, tx memory.ReadModelTx) error {
			ok, err := tx.AgentExists(ctx, alice)
			seen = append(seen, ok)
			return err
		}
		mustApply(t, s, 1, exists, addAgent(alice, "m1"), exists, addAgent(alice, "m2"),
			func(ctx context.Context, tx memory.ReadModelTx) error {
				model, dims, found, err := tx.AgentModel(ctx, alice)
				if err == nil && (!found || model != "m1" || dims != 4) {
					t.Errorf("AgentModel = %s/%d %v, want the first binding m1/4", model, dims, found)
				}
				return err
			},
			func(ctx context.Context, tx memory.ReadModelTx) error { return tx.DeleteAgent(ctx, alice) }, exists)
		if want := []bool{false, true, false}; len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
			t.Fatalf("AgentExists within one batch = %v, want %v", seen, want)
		}
		mustApply(t, s, 8, addAgent(alice, "m2"))
		if a := agent(t, s, alice); a.EmbeddingModel != "m2" || a.StoredMemories != 0 {
			t.Fatalf("agent created again after its deletion: %+v", a)
		}
	})

	t.Run("InsertMemoryOnceAndReadItBack", func(t *testing.T) {
		s := open(t)
		m := newNote(alice, "m-1", "deploy on friday")
		mustApply(t, s, 1, addAgent(alice, "m1"), insert(m), insert(newNote(alice, "m-1", "another text")), func(ctx context.Context, tx memory.ReadModelTx) error {
			got, found, err := tx.Memory(ctx, alice, "m-1")
			if err == nil && (!found || got.Type != memory.Note || string(got.Content) != string(m.Content) || got.Vitality != m.Vitality) {
				t.Errorf("tx.Memory = %+v %v, want the inserted note", got, found)
			}
			if _, found, _ := tx.Memory(ctx, aliceTwo, "m-1"); found {
				t.Error("tx.Memory finds a memory under another agent")
			}
			return err
		})
		if a := agent(t, s, alice); a.StoredMemories != 1 || a.TextBytes != int64(len(m.Content)) {
			t.Fatalf("agent after inserting one id twice: %d memories of %d bytes, want 1 of %d", a.StoredMemories, a.TextBytes, len(m.Content))
		}
		v := view(t, s, "u1", "m-1")
		if string(v.Content) != string(m.Content) || v.Version != 1 || v.Forgotten || v.TextHash != m.TextHash ||
			len(v.Tags) != 1 || v.Tags[0] != "t1" || !v.CreatedAt.Equal(t0) || v.Embedding.Status != memory.StatusPending {
			t.Fatalf("view: %+v", v)
		}
		if _, found, _ := s.Memory(ctx, "u2", "m-1"); found {
			t.Fatal("another user reads the memory")
		}
		if p := pending(t, s); len(p) != 1 || p[0] != "m-1" {
			t.Fatalf("pending = %v", p)
		}
	})

	t.Run("EmbeddingsCountOnlyForTheCurrentTextInTheAgentsModel", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, addAgent(alice, "m1"), insert(newNote(alice, "m-1", "v1")),
			embedded(alice, "m-1", "m1", "stale text"), // a text a patch replaced: ignored
			embedded(alice, "m-1", "m2", "v1"))         // another model: not what search uses
		if v := view(t, s, "u1", "m-1"); v.Embedding.Status != memory.StatusPending {
			t.Fatalf("status = %s, want pending", v.Embedding.Status)
		}
		mustApply(t, s, 5, embedded(alice, "m-1", "m1", "v1"), embedded(bob, "m-1", "m1", "v1"))
		if v := view(t, s, "u1", "m-1"); v.Embedding.Status != memory.StatusEmbedded || v.Version != 1 {
			t.Fatalf("status = %s version %d, want embedded at version 1", v.Embedding.Status, v.Version)
		}
		if p := pending(t, s); len(p) != 0 {
			t.Fatalf("pending = %v", p)
		}
	})

	t.Run("SetContentAndRefreshPending", func(t *testing.T) {
		s := open(t)
		at := t0.Add(time.Hour)
		mustApply(t, s, 1, addAgent(alice, "m1"), insert(newNote(alice, "m-1", "v1")), embedded(alice, "m-1", "m1", "v1"),
			func(ctx context.Context, tx memory.ReadModelTx) error {
				return tx.SetContent(ctx, alice, "m-1", note("v2"), nil, memory.TextHash("v2"), at)
			},
			func(ctx context.Context, tx memory.ReadModelTx) error { return tx.RefreshPending(ctx, alice, "m-1") })
		v := view(t, s, "u1", "m-1")
		if string(v.Content) != string(note("v2")) || v.TextHash != memory.TextHash("v2") || !v.UpdatedAt.Equal(at) || v.Version != 2 ||
			len(v.Tags) != 1 || v.Embedding.Status != memory.StatusPending {
			t.Fatalf("after SetContent without tags: %+v", v)
		}
		tags := []string{"x", "y"}
		mustApply(t, s, 6, func(ctx context.Context, tx memory.ReadModelTx) error {
			return tx.SetContent(ctx, alice, "m-1", note("v1"), &tags, memory.TextHash("v1"), at)
		}, func(ctx context.Context, tx memory.ReadModelTx) error { return tx.RefreshPending(ctx, alice, "m-1") },
			func(ctx context.Context, tx memory.ReadModelTx) error { // the wrong agent changes nothing
				return tx.SetContent(ctx, aliceTwo, "m-1", note("v9"), nil, memory.TextHash("v9"), at)
			})
		v = view(t, s, "u1", "m-1")
		if len(v.Tags) != 2 || v.Version != 3 || string(v.Content) != string(note("v1")) || v.Embedding.Status != memory.StatusEmbedded {
			t.Fatalf("after SetContent back to v1 with tags (its vector still serves): %+v", v)
		}
	})

	t.Run("VitalityVersionsAndVerification", func(t *testing.T) {
		s := open(t)
		at := t0.Add(2 * time.Hour)
		vit := memory.Vitality{Type: memory.Note, Base: 0.25, Since: at, Protected: true}
		mustApply(t, s, 1, addAgent(alice, "m1"), insert(newNote(alice, "m-1", "v1")),
			func(ctx context.Context, tx memory.ReadModelTx) error { return tx.SetVitality(ctx, alice, "m-1", vit) },
			func(ctx context.Context, tx memory.ReadModelTx) error { return tx.CountVersion(ctx, alice, "m-1") },
			func(ctx context.Context, tx memory.ReadModelTx) error {
				return tx.CountVerification(ctx, alice, "m-1", at)
			},
			func(ctx context.Context, tx memory.ReadModelTx) error {
				return tx.CountVerification(ctx, bob, "m-1", at)
			})
		v := view(t, s, "u1", "m-1")
		if v.Vitality.Base != 0.25 || !v.Vitality.Since.Equal(at) || !v.Protected || v.Version != 2 || v.VerificationCount != 1 ||
			v.LastVerifiedAt == nil || !v.LastVerifiedAt.Equal(at) {
			t.Fatalf("view: %+v", v)
		}
	})

	t.Run("ForgetKeepsTheFirstTimeAndRecoverBringsItBack", func(t *testing.T) {
		s := open(t)
		first, second := t0.Add(time.Hour), t0.Add(2*time.Hour)
		forget := func(at time.Time) memOp {
			return func(ctx context.Context, tx memory.ReadModelTx) error { return tx.Forget(ctx, alice, "m-1", at) }
		}
		mustApply(t, s, 1, addAgent(alice, "m1"), insert(newNote(alice, "m-1", "v1")), forget(first), forget(second),
			func(ctx context.Context, tx memory.ReadModelTx) error {
				m, _, err := tx.Memory(ctx, alice, "m-1")
				if err == nil && !m.Vitality.Forgotten {
					t.Error("tx.Memory of a forgotten memory: Forgotten is false")
				}
				return err
			})
		v := view(t, s, "u1", "m-1")
		if !v.Forgotten || v.ForgottenAt == nil || !v.ForgottenAt.Equal(first) || v.Version != 2 {
			t.Fatalf("forgotten twice: %+v", v)
		}
		if p := pending(t, s); len(p) != 0 {
			t.Fatalf("a forgotten memory is pending: %v", p)
		}
		mustApply(t, s, 6, func(ctx context.Context, tx memory.ReadModelTx) error { return tx.Recover(ctx, alice, "m-1") },
			func(ctx context.Context, tx memory.ReadModelTx) error { return tx.RefreshPending(ctx, alice, "m-1") })
		if v := view(t, s, "u1", "m-1"); v.Forgotten || v.Embedding.Status != memory.StatusPending {
			t.Fatalf("recovered: %+v", v)
		}
	})

	t.Run("MarkConsumedIsScopedToTheAgent", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, consumedSeed()...)
		for id, want := range map[string]bool{"m-1": true, "m-2": false, "m-3": false, "m-4": true, "m-5": false} {
			if v := view(t, s, "u1", id); v.Processed != want || v.Version != 1 {
				t.Errorf("%s: processed %v version %d, want processed %v at version 1", id, v.Processed, v.Version, want)
			}
		}
		// The content flag follows the content; a pass's consumption stays.
		mustApply(t, s, 20, func(ctx context.Context, tx memory.ReadModelTx) error {
			return tx.SetContent(ctx, alice, "m-4", json.RawMessage(`{"content":"done by hand","processed":false}`), nil, "h", t0)
		}, markConsumed(alice, "m-5"), func(ctx context.Context, tx memory.ReadModelTx) error {
			return tx.SetContent(ctx, alice, "m-5", json.RawMessage(`{"content":"x","processed":false}`), nil, "h", t0)
		})
		if a, b := view(t, s, "u1", "m-4"), view(t, s, "u1", "m-5"); a.Processed || !b.Processed {
			t.Fatalf("after content changes: m-4 processed %v (want false), m-5 processed %v (want true)", a.Processed, b.Processed)
		}
	})

	t.Run("MemoryCountLeavesOutForgottenMemories", func(t *testing.T) {
		s := open(t)
		created := func(id string) []memOp { return []memOp{insert(newNote(alice, id, "v1"))} }
		forget := func(id string) memOp {
			return func(ctx context.Context, tx memory.ReadModelTx) error { return tx.Forget(ctx, alice, id, t0) }
		}
		recoverOp := func(id string) memOp {
			return func(ctx context.Context, tx memory.ReadModelTx) error { return tx.Recover(ctx, alice, id) }
		}
		purge := func(id string) memOp {
			return func(ctx context.Context, tx memory.ReadModelTx) error {
				if err := tx.DeleteMemory(ctx, alice, id); err != nil {
					return err
				}
				return tx.AddToAgent(ctx, alice, -1, -int64(len(newNote(alice, id, "v1").Content)))
			}
		}
		mustApply(t, s, 1, append(append(append([]memOp{addAgent(alice, "m1"), addAgent(bob, "m1")}, created("m-1")...), created("m-2")...), created("m-3")...)...)
		steps := []struct {
			name         string
			op           memOp
			count, store int
		}{
			{"three created", nil, 3, 3},
			{"one forgotten", forget("m-1"), 2, 3},
			{"forgotten again", forget("m-1"), 2, 3},
			{"another user's forget", func(ctx context.Context, tx memory.ReadModelTx) error { return tx.Forget(ctx, bob, "m-2", t0) }, 2, 3},
			{"recovered", recoverOp("m-1"), 3, 3},
			{"recovering a live memory", recoverOp("m-1"), 3, 3},
			{"a forgotten memory purged", func(ctx context.Context, tx memory.ReadModelTx) error {
				if err := forget("m-2")(ctx, tx); err != nil {
					return err
				}
				return purge("m-2")(ctx, tx)
			}, 2, 2},
			{"a live memory purged", purge("m-3"), 1, 1},
		}
		for i, st := range steps {
			if st.op != nil {
				mustApply(t, s, uint64(10+i), st.op)
			}
			if a := agent(t, s, alice); a.MemoryCount != st.count || a.StoredMemories != st.store {
				t.Errorf("%s: memory_count %d, stored %d; want %d, %d", st.name, a.MemoryCount, a.StoredMemories, st.count, st.store)
			}
		}
	})

	t.Run("QuotaCountersAndDeleteMemory", func(t *testing.T) {
		s := open(t)
		m := newNote(alice, "m-1", "v1")
		mustApply(t, s, 1, addAgent(alice, "m1"), addAgent(bob, "m1"), insert(m), embedded(alice, "m-1", "m1", "v1"))
		if a := agent(t, s, alice); a.StoredMemories != 1 || a.TextBytes != int64(len(m.Content)) {
			t.Fatalf("counters: %+v", a)
		}
		mustApply(t, s, 6, func(ctx context.Context, tx memory.ReadModelTx) error { return tx.DeleteMemory(ctx, bob, "m-1") })
		view(t, s, "u1", "m-1") // another user's delete changes nothing
		mustApply(t, s, 7, func(ctx context.Context, tx memory.ReadModelTx) error { return tx.DeleteMemory(ctx, alice, "m-1") },
			func(ctx context.Context, tx memory.ReadModelTx) error {
				return tx.AddToAgent(ctx, alice, -1, -int64(len(m.Content)))
			},
			// The id inserted again starts without the old vector record.
			insert(newNote(alice, "m-1", "v1")))
		if v := view(t, s, "u1", "m-1"); v.Embedding.Status != memory.StatusPending || v.Version != 1 {
			t.Fatalf("re-inserted after delete: %+v", v)
		}
		if a := agent(t, s, alice); a.StoredMemories != 1 || a.TextBytes != int64(len(m.Content)) {
			t.Fatalf("counters after the delete and the new insert: %+v", a)
		}
	})

	t.Run("ModelSwitchDropsTheOldVectorsRecords", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, addAgent(alice, "m1"), addAgent(aliceTwo, "m1"),
			insert(newNote(alice, "m-1", "v1")), insert(newNote(alice, "m-2", "v2")), insert(newNote(aliceTwo, "m-3", "v3")),
			embedded(alice, "m-1", "m1", "v1"), embedded(alice, "m-2", "m2", "v2"), embedded(aliceTwo, "m-3", "m1", "v3"),
			func(ctx context.Context, tx memory.ReadModelTx) error { return tx.DropEmbeddings(ctx, alice, "m1", 4) },
			func(ctx context.Context, tx memory.ReadModelTx) error { return tx.SetAgentModel(ctx, alice, "m2", 4) },
			func(ctx context.Context, tx memory.ReadModelTx) error { return tx.RefreshPending(ctx, alice, "") })
		if a := agent(t, s, alice); a.EmbeddingModel != "m2" {
			t.Fatalf("agent: %+v", a)
		}
		if p := pending(t, s); len(p) != 1 || p[0] != "m-1" {
			t.Fatalf("pending after the switch = %v, want only m-1 (m-2 has an m2 vector, the other agent is untouched)", p)
		}
		mustApply(t, s, 12, func(ctx context.Context, tx memory.ReadModelTx) error { return tx.SetAgentModel(ctx, alice, "m1", 4) },
			func(ctx context.Context, tx memory.ReadModelTx) error { return tx.RefreshPending(ctx, alice, "") })
		if p := pending(t, s); len(p) != 2 {
			t.Fatalf("switching back: pending = %v, want m-1 and m-2 (the m1 records were dropped)", p)
		}
	})

	t.Run("DeleteAgentIsScopedToTheAgent", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, addAgent(alice, "m1"), addAgent(aliceTwo, "m1"), addAgent(bob, "m1"),
			insert(newNote(alice, "m-1", "v1")), insert(newNote(aliceTwo, "m-2", "v2")), insert(newNote(bob, "m-3", "v3")),
			func(ctx context.Context, tx memory.ReadModelTx) error {
				return tx.PutSettings(ctx, alice, json.RawMessage(`{"lazy_decay":false}`), false, t0)
			},
			func(ctx context.Context, tx memory.ReadModelTx) error { return tx.DeleteAgent(ctx, alice) },
			addAgent(alice, "m1"),
			func(ctx context.Context, tx memory.ReadModelTx) error {
				on, err := tx.LazyDecay(ctx, alice)
				if err == nil && !on {
					t.Error("the deleted agent's settings survived")
				}
				return err
			})
		if _, found, _ := s.Memory(ctx, "u1", "m-1"); found {
			t.Fatal("a deleted agent's memory survived")
		}
		view(t, s, "u1", "m-2")
		view(t, s, "u2", "m-3")
	})

	t.Run("SettingsAndLazyDecay", func(t *testing.T) {
		s := open(t)
		var before, after bool
		mustApply(t, s, 1, addAgent(alice, "m1"), insert(newNote(alice, "m-1", "v1")),
			func(ctx context.Context, tx memory.ReadModelTx) (err error) {
				before, err = tx.LazyDecay(ctx, alice)
				return
			},
			func(ctx context.Context, tx memory.ReadModelTx) error {
				return tx.PutSettings(ctx, alice, json.RawMessage(`{"lazy_decay":false}`), false, t0)
			},
			func(ctx context.Context, tx memory.ReadModelTx) (err error) {
				after, err = tx.LazyDecay(ctx, alice)
				return
			})
		if !before || after {
			t.Fatalf("lazy decay before/after settings = %v/%v, want true/false", before, after)
		}
		if v := view(t, s, "u1", "m-1"); v.LazyDecay {
			t.Fatal("the memory view ignores the agent's lazy_decay")
		}
	})

	// A store may hold a batch's writes back to write each row once (a
	// memory created and embedded in one batch is one insert): whatever it
	// holds, the state is the one each write applied alone leaves, and
	// the reads within the batch see it.
	t.Run("ABatchLeavesTheStateOfItsWritesOneAtATime", func(t *testing.T) {
		export := func(t *testing.T, s Memories) string {
			t.Helper()
			var buf bytes.Buffer
			if err := s.(exporter).Export(ctx, &buf); err != nil {
				t.Fatal(err)
			}
			return buf.String()
		}
		do := func(f func(context.Context, memory.ReadModelTx) error) memOp { return f }
		setContent := func(ref memory.AgentRef, id, text string) memOp {
			return func(ctx context.Context, tx memory.ReadModelTx) error {
				if err := tx.SetContent(ctx, ref, id, note(text), nil, memory.TextHash(text), t0.Add(time.Hour)); err != nil {
					return err
				}
				return tx.RefreshPending(ctx, ref, id)
			}
		}
		count := func(ref memory.AgentRef, n int, bytes int64) memOp {
			return func(ctx context.Context, tx memory.ReadModelTx) error { return tx.AddToAgent(ctx, ref, n, bytes) }
		}
		readBack := func(ref memory.AgentRef, id string, found bool) memOp {
			return func(ctx context.Context, tx memory.ReadModelTx) error {
				_, ok, err := tx.Memory(ctx, ref, id)
				if err == nil && ok != found {
					t.Errorf("tx.Memory(%s) within the batch: found %v, want %v", id, ok, found)
				}
				return err
			}
		}
		drive := newNote(alice, "m-5", "v5")
		drive.Type, drive.Vitality = memory.Drive, memory.InitialVitality(memory.Drive, drive.Content, t0)
		// many is a batch of 600 memories created and embedded (more rows
		// than a store writing them many per statement puts in one, 256 at
		// most in SQLite's multi-row inserts), three of whose ids an
		// earlier batch put in the table: in the middle of the first 256
		// (m-0100), of the next (m-0300) and last (m-0599). Every seventh
		// is embedded in another model too, every fifth is aliceTwo's.
		manyID := func(i int) string { return fmt.Sprintf("m-%04d", i) }
		manyRef := func(i int) memory.AgentRef {
			if i%5 == 0 {
				return aliceTwo
			}
			return alice
		}
		before := []memOp{addAgent(alice, "m1"), addAgent(aliceTwo, "m1"),
			insert(newNote(manyRef(100), manyID(100), "v100")), // the text inserted again: its vector is recorded
			insert(newNote(manyRef(300), manyID(300), "old")),  // another text: its vector is not
			insert(newNote(manyRef(599), manyID(599), "v599")), embedded(manyRef(599), manyID(599), "m1", "v599")}
		var many []memOp
		for i := range 600 {
			ref, id, text := manyRef(i), manyID(i), fmt.Sprintf("v%d", i)
			many = append(many, insert(newNote(ref, id, text)), embedded(ref, id, "m1", text))
			if i%7 == 0 {
				many = append(many, embedded(ref, id, "m2", text))
			}
		}
		cases := []struct {
			name    string
			batches [][]memOp
			// want checks the state (beyond its equality with the
			// unbatched one); nil checks nothing more.
			want func(t *testing.T, s Memories)
		}{
			{"CreatedAndEmbeddedInOneBatch", [][]memOp{{addAgent(alice, "m1"),
				insert(newNote(alice, "m-1", "v1")), embedded(alice, "m-1", "m1", "v1"),
				insert(newNote(alice, "m-2", "v2")), embedded(alice, "m-2", "m2", "v2"), // another model
				insert(newNote(alice, "m-3", "v3")), do(func(ctx context.Context, tx memory.ReadModelTx) error {
					return tx.RecordEmbedding(ctx, alice, "m-3", "m1", 8, memory.TextHash("v3")) // another size
				}),
				insert(newNote(alice, "m-4", "v4")), embedded(alice, "m-4", "m1", "stale"), embedded(bob, "m-4", "m1", "v4"),
				insert(drive), embedded(alice, "m-5", "m1", "v5"), // never pending
				readBack(alice, "m-1", true), readBack(bob, "m-1", false)}},
				func(t *testing.T, s Memories) {
					if p := pending(t, s); len(p) != 3 || p[0] != "m-2" || p[2] != "m-4" {
						t.Errorf("pending = %v, want m-2, m-3, m-4", p)
					}
					if a := agent(t, s, alice); a.StoredMemories != 5 {
						t.Errorf("stored memories = %d, want 5", a.StoredMemories)
					}
				}},
			{"EmbeddedInALaterBatch", [][]memOp{
				{addAgent(alice, "m1"), insert(newNote(alice, "m-1", "v1")), insert(newNote(alice, "m-2", "v2"))},
				{embedded(alice, "m-1", "m1", "v1"), insert(newNote(alice, "m-3", "v3")), embedded(alice, "m-3", "m1", "v3"), embedded(alice, "m-2", "m1", "v2")},
			}, func(t *testing.T, s Memories) {
				if p := pending(t, s); len(p) != 0 {
					t.Errorf("pending = %v, want none", p)
				}
			}},
			{"CreatedEmbeddedChangedForgottenAndDeletedInOneBatch", [][]memOp{{addAgent(alice, "m1"),
				insert(newNote(alice, "m-1", "v1")), embedded(alice, "m-1", "m1", "v1"), setContent(alice, "m-1", "v2"),
				count(alice, 0, int64(len(note("v2"))-len(note("v1")))), embedded(alice, "m-1", "m1", "v2"),
				do(func(ctx context.Context, tx memory.ReadModelTx) error { return tx.Forget(ctx, alice, "m-1", t0) }),
				insert(newNote(alice, "m-2", "v1")), embedded(alice, "m-2", "m1", "v1"), markConsumed(alice, "m-2"),
				do(func(ctx context.Context, tx memory.ReadModelTx) error {
					return tx.SetVitality(ctx, alice, "m-2", memory.Vitality{Type: memory.Note, Base: 0.5, Since: t0})
				}),
				do(func(ctx context.Context, tx memory.ReadModelTx) error { return tx.DeleteMemory(ctx, alice, "m-1") }),
				count(alice, -1, -int64(len(note("v2")))), readBack(alice, "m-1", false),
				insert(newNote(alice, "m-1", "v3")), // the id again, after its delete: a new memory
			}}, func(t *testing.T, s Memories) {
				if a := agent(t, s, alice); a.StoredMemories != 2 || a.MemoryCount != 2 || a.TextBytes != int64(len(note("v1"))+len(note("v3"))) {
					t.Errorf("agent = %+v, want 2 memories of %d bytes", a, len(note("v1"))+len(note("v3")))
				}
				if v := view(t, s, "u1", "m-1"); v.Embedding.Status != memory.StatusPending || v.Forgotten {
					t.Errorf("m-1 inserted again: %+v", v)
				}
			}},
			{"AnIdHeldAlreadyInsertedAgainWithVectors", [][]memOp{
				{addAgent(alice, "m1"), insert(newNote(alice, "m-1", "v1"))},
				// The second insert changes nothing; its text's vector is
				// not the held text's, the held text's one counts.
				{insert(newNote(alice, "m-1", "v2")), embedded(alice, "m-1", "m1", "v2"), insert(newNote(alice, "m-2", "v1")),
					insert(newNote(alice, "m-2", "v9")), embedded(alice, "m-2", "m1", "v9")},
				// The held text's vector, after an insert of the same text.
				{insert(newNote(alice, "m-1", "v1")), embedded(alice, "m-1", "m1", "v1")},
			}, func(t *testing.T, s Memories) {
				if p := pending(t, s); len(p) != 1 || p[0] != "m-2" {
					t.Errorf("pending = %v, want m-2", p)
				}
				if a := agent(t, s, alice); a.StoredMemories != 2 {
					t.Errorf("stored memories = %d, want 2", a.StoredMemories)
				}
			}},
			{"ManyHeldAmongIdsTheTableHas", [][]memOp{before, many}, func(t *testing.T, s Memories) {
				if p := pending(t, s); len(p) != 1 || p[0] != manyID(300) {
					t.Errorf("pending = %v, want %s", p, manyID(300))
				}
				if a, b := agent(t, s, alice), agent(t, s, aliceTwo); a.StoredMemories != 480 || b.StoredMemories != 120 {
					t.Errorf("stored memories = %d and %d, want 480 and 120", a.StoredMemories, b.StoredMemories)
				}
			}},
			{"AnAgentCreatedAndDeletedInOneBatch", [][]memOp{{addAgent(alice, "m1"), addAgent(bob, "m1"),
				insert(newNote(alice, "m-1", "v1")), embedded(alice, "m-1", "m1", "v1"), insert(newNote(bob, "m-2", "v2")),
				do(func(ctx context.Context, tx memory.ReadModelTx) error { return tx.DeleteAgent(ctx, alice) }),
				readBack(alice, "m-1", false), addAgent(alice, "m2"),
				insert(newNote(alice, "m-3", "v3")), embedded(alice, "m-3", "m1", "v3"), embedded(bob, "m-2", "m1", "v2"),
			}}, func(t *testing.T, s Memories) {
				if a := agent(t, s, alice); a.StoredMemories != 1 || a.EmbeddingModel != "m2" {
					t.Errorf("agent created again = %+v, want 1 memory in m2", a)
				}
				if p := pending(t, s); len(p) != 1 || p[0] != "m-3" {
					t.Errorf("pending = %v, want m-3 (its vector is not in m2)", p)
				}
			}},
			{"ModelSwitchedAfterEmbeddings", [][]memOp{{addAgent(alice, "m1"),
				insert(newNote(alice, "m-1", "v1")), embedded(alice, "m-1", "m1", "v1"),
				insert(newNote(alice, "m-2", "v2")), embedded(alice, "m-2", "m2", "v2"),
				do(func(ctx context.Context, tx memory.ReadModelTx) error { return tx.DropEmbeddings(ctx, alice, "m1", 4) }),
				do(func(ctx context.Context, tx memory.ReadModelTx) error { return tx.SetAgentModel(ctx, alice, "m2", 4) }),
				do(func(ctx context.Context, tx memory.ReadModelTx) error { return tx.RefreshPending(ctx, alice, "") }),
				insert(newNote(alice, "m-3", "v3")), embedded(alice, "m-3", "m1", "v3"),
				insert(newNote(alice, "m-4", "v4")), embedded(alice, "m-4", "m2", "v4"),
			}}, func(t *testing.T, s Memories) {
				if p := pending(t, s); len(p) != 2 || p[0] != "m-1" || p[1] != "m-3" {
					t.Errorf("pending = %v, want m-1 and m-3", p)
				}
			}},
			{"CountersAcrossBatches", [][]memOp{
				{addAgent(alice, "m1"), addAgent(aliceTwo, "m1"), insert(newNote(alice, "m-1", "v1")), insert(newNote(aliceTwo, "m-2", "v2"))},
				{insert(newNote(alice, "m-3", "v3")), count(aliceTwo, -1, -int64(len(note("v2")))), count(alice, 0, 7)},
				{count(aliceTwo, 1, int64(len(note("v2")))), insert(newNote(aliceTwo, "m-4", "v4"))},
			}, func(t *testing.T, s Memories) {
				if a, b := agent(t, s, alice), agent(t, s, aliceTwo); a.StoredMemories != 2 || a.TextBytes != int64(2*len(note("v1"))+7) ||
					b.StoredMemories != 2 || b.TextBytes != int64(2*len(note("v2"))) {
					t.Errorf("agents = %+v and %+v", a, b)
				}
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				batched, alone := open(t), open(t)
				first := uint64(1)
				for _, ops := range c.batches {
					mustApply(t, batched, first, ops...)
					for i, op := range ops {
						mustApply(t, alone, first+uint64(i), op)
					}
					first += uint64(len(ops))
				}
				want := export(t, alone)
				if got := export(t, batched); got != want {
					t.Fatalf("state after the batches:\n%s\nwant the state of the writes one at a time:\n%s", got, want)
				}
				last := c.batches[len(c.batches)-1]
				mustApply(t, batched, first-uint64(len(last)), last...) // redelivered
				if got := export(t, batched); got != want {
					t.Fatalf("a redelivered batch changed the state:\n%s\nwant:\n%s", got, want)
				}
				if c.want != nil {
					c.want(t, batched)
				}
			})
		}
	})

	t.Run("StreamVersions", func(t *testing.T) {
		s := open(t)
		if v, err := s.StreamVersion(ctx, "agent-x"); err != nil || v != domain.ExpectNoStream {
			t.Fatalf("unknown stream version = %d %v", v, err)
		}
		mustApply(t, s, 1,
			func(ctx context.Context, tx memory.ReadModelTx) error {
				return tx.RecordStreamVersion(ctx, "agent-x", 3)
			},
			func(ctx context.Context, tx memory.ReadModelTx) error {
				return tx.RecordStreamVersion(ctx, "agent-x", 7)
			},
			func(ctx context.Context, tx memory.ReadModelTx) error {
				return tx.RecordStreamVersion(ctx, "agent-y", 0)
			})
		if v, _ := s.StreamVersion(ctx, "agent-x"); v != 7 {
			t.Fatalf("stream version = %d, want 7", v)
		}
		if v, _ := s.StreamVersion(ctx, "agent-y"); v != 0 {
			t.Fatalf("stream version = %d, want 0", v)
		}
	})
}

func markConsumed(ref memory.AgentRef, id string) memOp {
	return func(ctx context.Context, tx memory.ReadModelTx) error { return tx.MarkConsumed(ctx, ref, id) }
}

// consumedSeed stores five memories of alice's agents: m-1 consumed by a
// pass, m-4 processed by its content, m-2, m-3 and m-5 unprocessed (the
// marks of another agent's and another user's memory, and of one not
// held, change nothing).
func consumedSeed() []memOp {
	return []memOp{addAgent(alice, "m1"), addAgent(aliceTwo, "m1"),
		insert(newNote(alice, "m-1", "one")), insert(newNote(alice, "m-2", "two")), insert(newNote(aliceTwo, "m-3", "three")),
		markConsumed(alice, "m-1"), markConsumed(alice, "m-1"), // a second pass over it changes nothing
		markConsumed(aliceTwo, "m-2"), markConsumed(bob, "m-3"), // another agent's, another user's memory: left alone
		markConsumed(alice, "m-gone"), // not held: ignored
		insert(raw(alice, "m-4", `{"content":"done by hand","processed":true}`)), insert(raw(alice, "m-5", `{"content":"x","processed":false}`))}
}
