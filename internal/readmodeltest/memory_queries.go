package readmodeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/projections"
)

// MemoryQueries is a memories read model store with every query the
// commands, search, the dashboard and the CLI read it by, and its export.
type MemoryQueries interface {
	Memories
	Export(ctx context.Context, w io.Writer) error
	ListAgents(ctx context.Context, q memory.AgentListQuery) (memory.AgentPage, error)
	AgentsAfter(ctx context.Context, after memory.AgentRef, limit int) ([]memory.AgentRef, error)
	Usage(ctx context.Context, userID string) (memory.Usage, error)
	AgentIDs(ctx context.Context, userID string) ([]string, error)
	MemoryOwner(ctx context.Context, id string) (userID, agentID string, found bool, err error)
	MemoriesByID(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.View, error)
	ExcerptsByID(ctx context.Context, userID, agentID string, ids []string, includeForgotten bool) (map[string]memory.Excerpt, error)
	ListMemories(ctx context.Context, q memory.ListQuery) (memory.Page, error)
	ExistingRefs(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.Type, error)
	MemoryIDsAfter(ctx context.Context, userID, agentID string, types []memory.Type, afterID string, limit int) ([]memory.View, error)
	CountMemories(ctx context.Context, userID, agentID string, types []memory.Type) (int, error)
	Settings(ctx context.Context, userID, agentID string) (agentsettings.View, bool, error)
	AgentStats(ctx context.Context, userID, agentID string, now time.Time) (memory.Stats, bool, error)
}

// memLog feeds the memories projection from an event log in memory, as
// the projection engine would.
type memLog struct {
	eventLog
	t  *testing.T
	rm MemoryQueries
}

func newMemLog(t *testing.T, rm MemoryQueries) *memLog {
	return &memLog{t: t, rm: rm}
}

func (l *memLog) projection() *projections.Memories { return projections.NewMemories(l.rm) }

// append records payloads on the agent's stream and applies them.
func (l *memLog) append(ref memory.AgentRef, payloads ...domain.Payload) {
	l.t.Helper()
	l.appendTo(memory.AgentStream(ref.UserID, ref.AgentID), payloads...)
}

// appendTo records payloads on stream and applies them, as one batch.
func (l *memLog) appendTo(stream string, payloads ...domain.Payload) {
	l.t.Helper()
	if err := l.projection().Apply(context.Background(), l.record(l.t, stream, payloads...)); err != nil {
		l.t.Fatal(err)
	}
}

func (l *memLog) export() []byte {
	l.t.Helper()
	var buf bytes.Buffer
	if err := l.rm.Export(context.Background(), &buf); err != nil {
		l.t.Fatal(err)
	}
	return buf.Bytes()
}

func (l *memLog) view(ref memory.AgentRef, id string) (memory.View, bool) {
	l.t.Helper()
	v, found, err := l.rm.Memory(context.Background(), ref.UserID, id)
	if err != nil {
		l.t.Fatal(err)
	}
	return v, found
}

var (
	memAlice = memory.AgentRef{UserID: "user-a", AgentID: "claire"}
	memBob   = memory.AgentRef{UserID: "user-b", AgentID: "claire"}
	memT0    = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	memHash  = memory.TextHash
)

func memAgentCreated(ref memory.AgentRef, model string, dims int) memory.AgentCreated {
	return memory.AgentCreated{AgentRef: ref, EmbeddingModel: model, Dimensions: dims, CreatedAt: memT0}
}

func memNoteCreated(ref memory.AgentRef, id, text string, at time.Time) memory.MemoryCreated {
	content, _ := json.Marshal(map[string]string{"content": text})
	return memory.MemoryCreated{AgentRef: ref, MemoryID: id, Type: memory.Note, Content: content, Tags: []string{"t"}, CreatedAt: at, TextHash: memHash(text)}
}

func memEmbeddedEvent(ref memory.AgentRef, id, model string, dims int, text string) memory.MemoryEmbedded {
	return memory.MemoryEmbedded{AgentRef: ref, MemoryID: id, Model: model, Dimensions: dims, TextHash: memHash(text), Vector: make(memory.Vector, dims)}
}

// RunMemoryQueries runs the query specification of the memories read
// model, fed by the memories projection, against the stores open returns.
func RunMemoryQueries(t *testing.T, open func(t *testing.T) MemoryQueries) {
	ctx := context.Background()

	t.Run("Rules", func(t *testing.T) {
		l := newMemLog(t, open(t))
		ctx := context.Background()
		l.append(memAlice, memAgentCreated(memAlice, "m1", 4), memNoteCreated(memAlice, "n1", "one", memT0), memEmbeddedEvent(memAlice, "n1", "m1", 4, "one"))

		t.Run("a second AgentCreated is ignored", func(t *testing.T) {
			l.append(memAlice, memAgentCreated(memAlice, "other-model", 8))
			a, found, err := l.rm.Agent(ctx, memAlice.UserID, memAlice.AgentID)
			if err != nil || !found || a.EmbeddingModel != "m1" || a.Dimensions != 4 || a.MemoryCount != 1 {
				t.Errorf("agent = %+v, %v, %v", a, found, err)
			}
		})
		t.Run("MemoryOwner finds a memory's owner across users", func(t *testing.T) {
			user, agent, found, err := l.rm.MemoryOwner(ctx, "n1")
			if err != nil || !found || user != memAlice.UserID || agent != memAlice.AgentID {
				t.Errorf("MemoryOwner(n1) = %q, %q, %v, %v", user, agent, found, err)
			}
			if _, _, found, err := l.rm.MemoryOwner(ctx, "nobody"); err != nil || found {
				t.Errorf("MemoryOwner(nobody) found %v, %v", found, err)
			}
		})
		t.Run("memory events of an unknown agent are ignored", func(t *testing.T) {
			ghost := memory.AgentRef{UserID: "user-a", AgentID: "ghost"}
			l.append(ghost, memNoteCreated(ghost, "g1", "boo", memT0), memEmbeddedEvent(ghost, "g1", "m1", 4, "boo"))
			if _, found := l.view(ghost, "g1"); found {
				t.Error("a memory of an agent that does not exist was recorded")
			}
		})
		t.Run("a vector of a replaced text is ignored", func(t *testing.T) {
			l.append(memAlice, memNoteCreated(memAlice, "n2", "old text", memT0))
			content, _ := json.Marshal(map[string]string{"content": "new text"})
			l.append(memAlice, memory.MemoryUpdated{AgentRef: memAlice, MemoryID: "n2", Content: content, Tags: []string{}, TextHash: memHash("new text"), UpdatedAt: memT0.Add(time.Second)})
			l.append(memAlice, memEmbeddedEvent(memAlice, "n2", "m1", 4, "old text"))
			if v, _ := l.view(memAlice, "n2"); v.Embedding.Status != memory.StatusPending {
				t.Errorf("status = %s after a stale vector", v.Embedding.Status)
			}
			pending, err := l.rm.PendingEmbeddings(ctx, 10)
			if err != nil || len(pending) != 1 || pending[0].MemoryID != "n2" || pending[0].TextHash != memHash("new text") || pending[0].Model != "m1" {
				t.Fatalf("pending = %+v, %v", pending, err)
			}
			l.append(memAlice, memEmbeddedEvent(memAlice, "n2", "m1", 4, "new text"))
			if v, _ := l.view(memAlice, "n2"); v.Embedding.Status != memory.StatusEmbedded {
				t.Errorf("status = %s after the current vector", v.Embedding.Status)
			}
		})
		t.Run("a model switch makes memories pending until embedded in the new model", func(t *testing.T) {
			l.append(memAlice, memory.AgentModelSwitched{AgentRef: memAlice, Model: "m2", Dimensions: 8})
			pending, _ := l.rm.PendingEmbeddings(ctx, 10)
			if len(pending) != 2 || pending[0].Model != "m2" || pending[0].Dimensions != 8 {
				t.Fatalf("pending after switch = %+v", pending)
			}
			// Same model name in another size is another index.
			l.append(memAlice, memEmbeddedEvent(memAlice, "n1", "m2", 4, "one"))
			if v, _ := l.view(memAlice, "n1"); v.Embedding.Status != memory.StatusPending || v.Embedding.Model != "m2" {
				t.Errorf("n1 = %+v", v.Embedding)
			}
			l.append(memAlice, memEmbeddedEvent(memAlice, "n1", "m2", 8, "one"), memEmbeddedEvent(memAlice, "n2", "m2", 8, "new text"))
			if pending, _ := l.rm.PendingEmbeddings(ctx, 10); len(pending) != 0 {
				t.Errorf("still pending: %+v", pending)
			}
			// The old model's vectors were dropped with the switch (as the
			// vector projection drops them): switching back needs new ones.
			if strings.Contains(string(l.export()), `"model":"m1"`) {
				t.Error("vectors of the old model are still recorded")
			}
			l.append(memAlice, memory.AgentModelSwitched{AgentRef: memAlice, Model: "m1", Dimensions: 4})
			if pending, _ := l.rm.PendingEmbeddings(ctx, 10); len(pending) != 2 {
				t.Errorf("pending after switching back: %+v", pending)
			}
			l.append(memAlice, memEmbeddedEvent(memAlice, "n1", "m1", 4, "one"), memEmbeddedEvent(memAlice, "n2", "m1", 4, "new text"))
		})
		t.Run("forgotten memories are not pending and keep their first time", func(t *testing.T) {
			l.append(memAlice, memNoteCreated(memAlice, "n3", "three", memT0))
			l.append(memAlice, memory.MemoryForgotten{AgentRef: memAlice, MemoryID: "n3", ForgottenAt: memT0.Add(time.Hour)},
				memory.MemoryForgotten{AgentRef: memAlice, MemoryID: "n3", ForgottenAt: memT0.Add(2 * time.Hour)})
			v, _ := l.view(memAlice, "n3")
			if !v.Forgotten || !v.ForgottenAt.Equal(memT0.Add(time.Hour)) || v.Embedding.Status != memory.StatusNotIndexed {
				t.Errorf("forgotten view = %+v", v)
			}
			if pending, _ := l.rm.PendingEmbeddings(ctx, 10); len(pending) != 0 {
				t.Errorf("a forgotten memory is pending: %+v", pending)
			}
			if got, _ := l.rm.MemoriesByID(ctx, memAlice.UserID, memAlice.AgentID, []string{"n1", "n3", "g1"}); len(got) != 1 {
				t.Errorf("MemoriesByID = %d memories, want only n1", len(got))
			}
			// Search's excerpts: the same memories, with what a result shows,
			// and nothing of another user's agent of the same name.
			full, _ := l.view(memAlice, "n1")
			got, err := l.rm.ExcerptsByID(ctx, memAlice.UserID, memAlice.AgentID, []string{"n1", "n3", "g1", "n1"}, false)
			if e := got["n1"]; err != nil || len(got) != 1 || e.ID != "n1" || e.AgentID != memAlice.AgentID || e.Type != full.Type ||
				!bytes.Equal(e.Content, full.Content) || !slices.Equal(e.Tags, full.Tags) || !e.CreatedAt.Equal(full.CreatedAt) ||
				e.Vitality != full.Vitality || e.LazyDecay != full.LazyDecay {
				t.Errorf("ExcerptsByID = %+v, %v; want only n1 as %+v", got, err, full)
			}
			// With forgotten memories: n3 too, flagged, at strength 0.
			got, err = l.rm.ExcerptsByID(ctx, memAlice.UserID, memAlice.AgentID, []string{"n1", "n3", "g1"}, true)
			if e := got["n3"]; err != nil || len(got) != 2 || !e.Vitality.Forgotten || e.StrengthAt(memT0) != 0 || got["n1"].Vitality.Forgotten {
				t.Errorf("ExcerptsByID with forgotten = %+v, %v; want n1 and n3 (forgotten)", got, err)
			}
			for _, withForgotten := range []bool{false, true} {
				if got, _ := l.rm.ExcerptsByID(ctx, memBob.UserID, memBob.AgentID, []string{"n1", "n3"}, withForgotten); len(got) != 0 {
					t.Errorf("ExcerptsByID across users (with forgotten: %v) = %+v", withForgotten, got)
				}
			}
			n, _ := l.rm.CountMemories(ctx, memAlice.UserID, memAlice.AgentID, nil)
			ids, _ := l.rm.MemoryIDsAfter(ctx, memAlice.UserID, memAlice.AgentID, nil, "", 10)
			if n != 2 || len(ids) != 2 || ids[0].ID != "n1" || ids[1].ID != "n2" {
				t.Errorf("count %d, ids %v", n, ids)
			}
		})
		t.Run("events of a purged memory are ignored", func(t *testing.T) {
			l.append(memAlice, memory.MemoryPurged{AgentRef: memAlice, MemoryID: "n3"},
				memory.MemoryForgotten{AgentRef: memAlice, MemoryID: "n3", ForgottenAt: memT0},
				memEmbeddedEvent(memAlice, "n3", "m1", 4, "three"))
			if _, found := l.view(memAlice, "n3"); found || bytes.Contains(l.export(), []byte(`"n3"`)) {
				t.Error("the purged memory is back")
			}
		})
		t.Run("users never mix", func(t *testing.T) {
			l.append(memBob, memAgentCreated(memBob, "m1", 4), memNoteCreated(memBob, "b1", "bob's", memT0))
			if _, found := l.view(memBob, "n1"); found {
				t.Error("bob sees alice's memory")
			}
			if refs, _ := l.rm.ExistingRefs(ctx, memBob.UserID, memBob.AgentID, []string{"n1", "b1"}); len(refs) != 1 || refs["b1"] != memory.Note {
				t.Errorf("refs = %v", refs)
			}
			// A memory event naming bob's agent cannot touch alice's memory.
			l.append(memBob, memory.MemoryPurged{AgentRef: memBob, MemoryID: "n1"})
			if _, found := l.view(memAlice, "n1"); !found {
				t.Error("bob's stream purged alice's memory")
			}
			l.append(memBob, memory.AgentDeleted{AgentRef: memBob})
			ids, _ := l.rm.AgentIDs(ctx, memAlice.UserID)
			if fmt.Sprint(ids) != "[claire]" {
				t.Errorf("alice's agents = %v", ids)
			}
			for _, row := range strings.Split(string(l.export()), "\n") {
				// The stream goes on after the delete, and so does its version.
				if strings.Contains(row, "user-b") && !strings.Contains(row, `"table":"agent_streams"`) {
					t.Errorf("a row of bob's deleted agent remains: %s", row)
				}
			}
			if v, err := l.rm.StreamVersion(ctx, memory.AgentStream(memBob.UserID, memBob.AgentID)); err != nil || v != 3 {
				t.Errorf("bob's stream version after the delete = %d, %v; want 3", v, err)
			}
		})
	})

	t.Run("RedeliveryAndReplay", func(t *testing.T) {
		l := newMemLog(t, open(t))
		ctx := context.Background()
		l.append(memAlice, memAgentCreated(memAlice, "m1", 4))
		for i := range 20 {
			id := fmt.Sprintf("n%02d", i)
			l.append(memAlice, memNoteCreated(memAlice, id, id, memT0.Add(time.Duration(i%5)*time.Minute)), memEmbeddedEvent(memAlice, id, "m1", 4, id))
		}
		l.append(memAlice, memory.MemoryForgotten{AgentRef: memAlice, MemoryID: "n03", ForgottenAt: memT0}, memory.MemoryPurged{AgentRef: memAlice, MemoryID: "n04"})
		before := l.export()

		all := l.all
		if err := l.projection().Apply(ctx, all); err != nil { // redelivered: a no-op
			t.Fatal(err)
		}
		if !bytes.Equal(before, l.export()) {
			t.Fatal("redelivering applied events changed the read model")
		}
		if err := l.rm.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if pos, _ := l.rm.Checkpoint(ctx); pos != 0 || len(l.export()) != 0 {
			t.Fatal("reset left state behind")
		}
		for i := 0; i < len(all); i += 7 { // replay in other batch sizes
			if err := l.projection().Apply(ctx, all[i:min(i+7, len(all))]); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(before, l.export()) {
			t.Fatalf("replay differs:\n%s\n---\n%s", before, l.export())
		}
		if pos, _ := l.rm.Checkpoint(ctx); pos != all[len(all)-1].Position {
			t.Errorf("checkpoint %d, want %d", pos, all[len(all)-1].Position)
		}
	})

	t.Run("ListingPagesNewestFirst", func(t *testing.T) {
		l := newMemLog(t, open(t))
		ctx := context.Background()
		l.append(memAlice, memAgentCreated(memAlice, "m1", 4))
		var payloads []domain.Payload
		for i := range 30 {
			payloads = append(payloads, memNoteCreated(memAlice, fmt.Sprintf("n%02d", i), "x", memT0.Add(time.Duration(i/3)*time.Second)))
		}
		l.append(memAlice, payloads...)
		var got []string
		cursor := ""
		for {
			page, err := l.rm.ListMemories(ctx, memory.ListQuery{UserID: memAlice.UserID, AgentID: memAlice.AgentID, Limit: 4, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range page.Memories {
				got = append(got, v.ID)
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		var want []string
		for i := 29; i >= 0; i-- {
			want = append(want, fmt.Sprintf("n%02d", i))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("order = %v\nwant    %v", got, want)
		}
		for _, bad := range []string{"x", "bm90IGEgY3Vyc29y", "MjAyNXxhYmM"} {
			_, err := l.rm.ListMemories(ctx, memory.ListQuery{UserID: memAlice.UserID, Cursor: bad})
			if de, ok := domain.AsError(err); !ok || de.Kind != domain.KindInvalid {
				t.Errorf("cursor %q: err = %v", bad, err)
			}
		}
		page, err := l.rm.ListMemories(ctx, memory.ListQuery{UserID: memBob.UserID})
		if err != nil || len(page.Memories) != 0 {
			t.Errorf("bob lists %d of alice's memories", len(page.Memories))
		}
	})

	// Patches appended as writers that all decided on the same state would
	// append them: each one's fields apply to the memory as the log left
	// it, so changes of different fields all survive, and of one field the
	// last in log order wins.
	t.Run("PatchesApplyFieldByField", func(t *testing.T) {
		l := newMemLog(t, open(t))
		ctx := context.Background()
		content, err := memory.NormalizeContent(memory.Note, json.RawMessage(`{"content":"base"}`))
		if err != nil {
			t.Fatal(err)
		}
		created := memNoteCreated(memAlice, "n1", "base", memT0)
		created.Content = content
		l.append(memAlice, memAgentCreated(memAlice, "m1", 4), created)
		patch := func(fields string, tags *[]string) memory.MemoryPatched {
			var changes map[string]json.RawMessage
			if fields != "" {
				if err := json.Unmarshal([]byte(fields), &changes); err != nil {
					t.Fatal(err)
				}
			}
			return memory.MemoryPatched{AgentRef: memAlice, MemoryID: "n1", Content: changes, Tags: tags, TextHash: memHash("base"), UpdatedAt: memT0.Add(time.Minute)}
		}
		field := func(name string) any {
			v, _ := l.view(memAlice, "n1")
			var c map[string]any
			if err := json.Unmarshal(v.Content, &c); err != nil {
				t.Fatal(err)
			}
			return c[name]
		}
		tags := []string{"x"}
		for _, step := range []struct {
			name    string
			events  []domain.Payload
			field   string
			want    any
			version int64
		}{
			{"different fields both survive", []domain.Payload{patch(`{"speaker":"ann"}`, nil), patch(`{"reason":"because"}`, nil)}, "speaker", "ann", 3},
			{"the other field too", nil, "reason", "because", 3},
			{"one field: the last in log order wins", []domain.Payload{patch(`{"speaker":"bob"}`, nil), patch(`{"speaker":"cy"}`, nil)}, "speaker", "cy", 5},
			{"null removes a field", []domain.Payload{patch(`{"reason":null}`, nil)}, "reason", nil, 6},
			{"a default comes back", []domain.Payload{patch(`{"note_type":"quote"}`, nil), patch(`{"note_type":null}`, nil)}, "note_type", "note", 8},
			{"tags alone leave the content", []domain.Payload{patch("", &tags)}, "speaker", "cy", 9},
		} {
			if len(step.events) > 0 {
				l.append(memAlice, step.events...)
			}
			v, _ := l.view(memAlice, "n1")
			if got := field(step.field); got != step.want || v.Version != step.version {
				t.Errorf("%s: %s = %v at version %d, want %v at %d", step.name, step.field, got, v.Version, step.want, step.version)
			}
		}
		v, _ := l.view(memAlice, "n1")
		if fmt.Sprint(v.Tags) != "[x]" {
			t.Errorf("tags = %v", v.Tags)
		}
		a, _, _ := l.rm.Agent(ctx, memAlice.UserID, memAlice.AgentID)
		if a.StoredMemories != 1 || a.TextBytes != int64(len(v.Content)) {
			t.Errorf("agent counts %d memories of %d bytes, want 1 of %d", a.StoredMemories, a.TextBytes, len(v.Content))
		}

		// Logs written before MemoryPatched hold MemoryUpdated: it still
		// replaces the whole content.
		old, _ := json.Marshal(map[string]string{"content": "replaced"})
		l.append(memAlice, memory.MemoryUpdated{AgentRef: memAlice, MemoryID: "n1", Content: old, Tags: []string{}, TextHash: memHash("replaced"), UpdatedAt: memT0.Add(time.Hour)})
		if got, v := field("content"), func() memory.View { v, _ := l.view(memAlice, "n1"); return v }(); got != "replaced" || v.Version != 10 || len(v.Tags) != 0 {
			t.Errorf("after MemoryUpdated: content %v, version %d, tags %v", got, v.Version, v.Tags)
		}

		before := l.export()
		all := l.all
		if err := l.rm.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.projection().Apply(ctx, all); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, l.export()) {
			t.Fatalf("replay differs:\n%s\n---\n%s", before, l.export())
		}
	})

	// A processing pass on the agent's cognition stream marks the raw entries
	// it consumed processed in the memories read model; only the agent's own,
	// and not the agent stream's version (commands append to that stream at
	// it). An agent deleted and created again starts with nothing processed.
	t.Run("ProcessedByAPass", func(t *testing.T) {
		l := newMemLog(t, open(t))
		ctx := context.Background()
		rawCreated := func(ref memory.AgentRef, id string) memory.MemoryCreated {
			m := memNoteCreated(ref, id, "thought "+id, memT0)
			m.Type = memory.RawEntry
			return m
		}
		l.append(memAlice, memAgentCreated(memAlice, "m1", 4), rawCreated(memAlice, "r1"), rawCreated(memAlice, "r2"))
		l.append(memBob, memAgentCreated(memBob, "m1", 4), rawCreated(memBob, "b1"))
		version, err := l.rm.StreamVersion(ctx, memory.AgentStream(memAlice.UserID, memAlice.AgentID))
		if err != nil {
			t.Fatal(err)
		}
		pass := func(ref memory.AgentRef, ids ...string) {
			p := processing.PassRecorded{AgentRef: processing.AgentRef{UserID: ref.UserID, AgentID: ref.AgentID, AgentCreatedAt: memT0},
				Pass: processing.Pass{PassID: "p", Transition: processing.RawToNote, At: memT0}}
			for _, id := range ids {
				p.Consumed = append(p.Consumed, processing.Consumed{ID: id, Into: []string{}})
			}
			l.appendTo(processing.Stream(ref.UserID, ref.AgentID), p)
		}
		pass(memAlice, "r1", "b1")
		for _, c := range []struct {
			ref       memory.AgentRef
			id        string
			processed bool
		}{{memAlice, "r1", true}, {memAlice, "r2", false}, {memBob, "b1", false}} {
			if v, _ := l.view(c.ref, c.id); v.Processed != c.processed {
				t.Errorf("%s processed = %v, want %v", c.id, v.Processed, c.processed)
			}
		}
		if after, err := l.rm.StreamVersion(ctx, memory.AgentStream(memAlice.UserID, memAlice.AgentID)); err != nil || after != version {
			t.Errorf("agent stream version %d after the pass, want %d (%v)", after, version, err)
		}
		l.append(memAlice, memory.AgentDeleted{AgentRef: memAlice}, memAgentCreated(memAlice, "m1", 4), rawCreated(memAlice, "r1"))
		if v, _ := l.view(memAlice, "r1"); v.Processed {
			t.Error("a raw entry of the re-created agent is processed by the deleted agent's pass")
		}
	})

	// AgentsAfter pages through every user's agents in (user, agent) order:
	// no agent repeats or is skipped across a user boundary, and a deleted
	// agent is gone.
	t.Run("AgentsAfterPagesAcrossUsers", func(t *testing.T) {
		l := newMemLog(t, open(t))
		refs := []memory.AgentRef{
			{UserID: "user-a", AgentID: "a1"}, {UserID: "user-a", AgentID: "b2"}, {UserID: "user-a", AgentID: "c3"},
			{UserID: "user-b", AgentID: "a1"}, {UserID: "user-c", AgentID: "z9"},
		}
		for _, r := range refs {
			l.append(r, memAgentCreated(r, "m1", 4))
		}
		var got []memory.AgentRef
		var after memory.AgentRef
		for {
			page, err := l.rm.AgentsAfter(context.Background(), after, 2)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if len(page) < 2 {
				break
			}
			after = page[len(page)-1]
		}
		if !reflect.DeepEqual(got, refs) {
			t.Fatalf("pages: %v, want %v", got, refs)
		}
		l.append(refs[1], memory.AgentDeleted{AgentRef: refs[1]})
		page, err := l.rm.AgentsAfter(context.Background(), refs[0], 1)
		if err != nil || len(page) != 1 || page[0] != refs[2] {
			t.Errorf("after deleting %v: %v %v", refs[1], page, err)
		}
	})

	// The listing's weak filter and the stats' weak count against the
	// strength computed at read time, at the exact instant decay crosses 0.5,
	// for lazy decay on and off.
	t.Run("WeakFilter", func(t *testing.T) {
		l := newMemLog(t, open(t))
		ctx := context.Background()
		l.append(memAlice, memAgentCreated(memAlice, "m1", 4), memNoteCreated(memAlice, "n1", "a note", memT0))
		v, ok := l.view(memAlice, "n1")
		if !ok {
			t.Fatal("note missing")
		}
		weakAt := memory.WeakAt(v.Vitality)
		if weakAt.IsZero() || !weakAt.After(v.Vitality.Since) {
			t.Fatalf("weak at %v for %+v", weakAt, v.Vitality)
		}
		for _, tc := range []struct {
			name     string
			now      time.Time
			decay    bool
			tier     memory.Tier
			listed   bool
			weakStat int
		}{
			{"a day before", weakAt.Add(-24 * time.Hour), true, memory.TierFading, true, 0},
			{"at the edge: still 0.5", weakAt, true, memory.TierFading, true, 0},
			{"a second after", weakAt.Add(time.Second), true, memory.TierWeak, false, 1},
			{"lazy decay off", weakAt.Add(1000 * 24 * time.Hour), false, memory.TierStrong, true, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if !tc.decay {
					l.append(memAlice, agentsettings.SettingsChanged{AgentRef: memAlice, Settings: func() agentsettings.Settings {
						s := agentsettings.Defaults()
						s.LazyDecay = false
						return s
					}(), Changed: []string{"lazy_decay"}, ChangedAt: memT0})
				}
				v, _ := l.view(memAlice, "n1")
				v.ApplyStrength(tc.now)
				if v.Tier != tc.tier {
					t.Fatalf("tier %s (strength %v), want %s", v.Tier, v.Strength, tc.tier)
				}
				page, err := l.rm.ListMemories(ctx, memory.ListQuery{UserID: memAlice.UserID, AgentID: memAlice.AgentID, Now: tc.now})
				if err != nil {
					t.Fatal(err)
				}
				if listed := len(page.Memories) == 1; listed != tc.listed {
					t.Fatalf("listed without include_weak: %v, want %v", listed, tc.listed)
				}
				page, err = l.rm.ListMemories(ctx, memory.ListQuery{UserID: memAlice.UserID, AgentID: memAlice.AgentID, Now: tc.now, IncludeWeak: true})
				if err != nil || len(page.Memories) != 1 {
					t.Fatalf("include_weak lists %d, %v", len(page.Memories), err)
				}
				st, found, err := l.rm.AgentStats(ctx, memAlice.UserID, memAlice.AgentID, tc.now)
				if err != nil || !found || st.Weak != tc.weakStat {
					t.Fatalf("stats weak = %d (found %v, %v), want %d", st.Weak, found, err, tc.weakStat)
				}
			})
		}
		if _, found, err := l.rm.AgentStats(ctx, memBob.UserID, memAlice.AgentID, memT0); found || err != nil {
			t.Fatalf("another user's agent: found %v, %v", found, err)
		}
	})

	t.Run("ProcessedFilter", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, consumedSeed()...)
		for _, want := range []struct {
			processed bool
			ids       []string
		}{{true, []string{"m-4", "m-1"}}, {false, []string{"m-5", "m-2"}}} {
			page, err := s.ListMemories(ctx, memory.ListQuery{UserID: "u1", AgentID: "a1", Processed: &want.processed, IncludeWeak: true, Now: t0, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if ids := viewIDs(page.Memories); !slices.Equal(ids, want.ids) {
				t.Errorf("listing processed=%v = %v, want %v", want.processed, ids, want.ids)
			}
		}
	})

	t.Run("ListingFilters", func(t *testing.T) {
		l := newMemLog(t, open(t))
		raw := memNoteCreated(memAlice, "r1", "raw", memT0.Add(time.Second))
		raw.Type = memory.RawEntry
		l.append(memAlice, memAgentCreated(memAlice, "m1", 4), memNoteCreated(memAlice, "n1", "one", memT0), raw,
			memNoteCreated(memAlice, "n2", "two", memT0.Add(2*time.Second)),
			memory.MemoryForgotten{AgentRef: memAlice, MemoryID: "n2", ForgottenAt: memT0.Add(time.Hour)})
		other := memory.AgentRef{UserID: memAlice.UserID, AgentID: "other"}
		l.append(other, memAgentCreated(other, "m1", 4), memNoteCreated(other, "o1", "other", memT0.Add(3*time.Second)))
		for _, c := range []struct {
			name string
			q    memory.ListQuery
			want []string
		}{
			{"every agent of the user, newest first", memory.ListQuery{}, []string{"o1", "r1", "n1"}},
			{"one agent", memory.ListQuery{AgentID: memAlice.AgentID}, []string{"r1", "n1"}},
			{"with forgotten", memory.ListQuery{AgentID: memAlice.AgentID, IncludeForgotten: true}, []string{"n2", "r1", "n1"}},
			{"by type", memory.ListQuery{Types: []memory.Type{memory.RawEntry}}, []string{"r1"}},
			{"by types", memory.ListQuery{Types: []memory.Type{memory.RawEntry, memory.Note}, IncludeForgotten: true}, []string{"o1", "n2", "r1", "n1"}},
			{"limit above the maximum", memory.ListQuery{Limit: memory.MaxListLimit + 1}, []string{"o1", "r1", "n1"}},
		} {
			c.q.UserID, c.q.Now = memAlice.UserID, memT0
			page, err := l.rm.ListMemories(ctx, c.q)
			if ids := viewIDs(page.Memories); err != nil || !slices.Equal(ids, c.want) || page.NextCursor != "" {
				t.Errorf("%s: %v %q %v, want %v", c.name, ids, page.NextCursor, err, c.want)
			}
		}
		if n, err := l.rm.CountMemories(ctx, memAlice.UserID, memAlice.AgentID, []memory.Type{memory.Note}); err != nil || n != 1 {
			t.Errorf("CountMemories of the notes = %d, %v; want 1 (the forgotten one and the raw entry not counted)", n, err)
		}
		if v, err := l.rm.MemoryIDsAfter(ctx, memAlice.UserID, memAlice.AgentID, []memory.Type{memory.Note}, "", 10); err != nil || len(v) != 1 || v[0].ID != "n1" {
			t.Errorf("MemoryIDsAfter of the notes = %v, %v; want n1", viewIDs(v), err)
		}
	})

	// An agent's creation time identifies it in its cognition stream
	// (processing.AgentRef), so the read model keeps event times whole.
	t.Run("TimesKeepTheirNanoseconds", func(t *testing.T) {
		l := newMemLog(t, open(t))
		at := memT0.Add(123456789 * time.Nanosecond)
		created := memAgentCreated(memAlice, "m1", 4)
		created.CreatedAt = at
		l.append(memAlice, created, memNoteCreated(memAlice, "n1", "one", at),
			memory.MemoryForgotten{AgentRef: memAlice, MemoryID: "n1", ForgottenAt: at.Add(time.Nanosecond)})
		a, _, err := l.rm.Agent(ctx, memAlice.UserID, memAlice.AgentID)
		v, _ := l.view(memAlice, "n1")
		if err != nil || !a.CreatedAt.Equal(at) || !v.CreatedAt.Equal(at) || v.ForgottenAt == nil || !v.ForgottenAt.Equal(at.Add(time.Nanosecond)) {
			t.Fatalf("agent created %v, memory created %v forgotten %v (%v); want %v and a nanosecond later", a.CreatedAt, v.CreatedAt, v.ForgottenAt, err, at)
		}
	})

	t.Run("AgentsUsageSettingsAndStats", func(t *testing.T) {
		l := newMemLog(t, open(t))
		names := []string{"a1", "b2", "c3", "d4", "e5"}
		for i, name := range names {
			ref := memory.AgentRef{UserID: memAlice.UserID, AgentID: name}
			l.append(ref, memAgentCreated(ref, "m1", 4), memNoteCreated(ref, fmt.Sprintf("n%d", i), "text", memT0))
		}
		l.append(memBob, memAgentCreated(memBob, "m1", 4))
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			page, err := l.rm.ListAgents(ctx, memory.AgentListQuery{UserID: memAlice.UserID, Limit: 2, Cursor: cursor})
			if err != nil || pages > len(names) {
				t.Fatalf("ListAgents: %v after %d pages", err, pages)
			}
			for _, a := range page.Agents {
				if a.UserID != memAlice.UserID || a.MemoryCount != 1 || a.EmbeddingModel != "m1" || !a.CreatedAt.Equal(memT0) {
					t.Errorf("agent %+v", a)
				}
				got = append(got, a.AgentID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(got, names) {
			t.Errorf("agents paged = %v, want %v", got, names)
		}
		for _, bad := range []string{"%%%", "bm90IGFuIGFnZW50IQ"} {
			if _, err := l.rm.ListAgents(ctx, memory.AgentListQuery{UserID: memAlice.UserID, Cursor: bad}); !isInvalid(err) {
				t.Errorf("agent cursor %q: err = %v", bad, err)
			}
		}
		if page, err := l.rm.ListAgents(ctx, memory.AgentListQuery{UserID: memBob.UserID}); err != nil || len(page.Agents) != 1 || page.Agents[0].MemoryCount != 0 {
			t.Errorf("bob's agents = %+v, %v", page.Agents, err)
		}
		if ids, err := l.rm.AgentIDs(ctx, "nobody"); err != nil || ids == nil || len(ids) != 0 {
			t.Errorf("AgentIDs of a user without agents = %#v, %v; want an empty list", ids, err)
		}

		// Usage counts what the quotas count.
		l.append(memAlice, memAgentCreated(memAlice, "m1", 4), memNoteCreated(memAlice, "q1", "quota", memT0))
		u, err := l.rm.Usage(ctx, memAlice.UserID)
		a, _, _ := l.rm.Agent(ctx, memAlice.UserID, memAlice.AgentID)
		if err != nil || u.Agents != len(names)+1 || u.TextBytes < a.TextBytes || a.TextBytes == 0 {
			t.Errorf("usage = %+v, %v (agent %+v)", u, err, a)
		}

		// Settings: the defaults until changed, then what was set; none
		// for another user's agent.
		if v, found, err := l.rm.Settings(ctx, memAlice.UserID, memAlice.AgentID); err != nil || !found || v.UpdatedAt != nil || !reflect.DeepEqual(v.Settings, agentsettings.Defaults()) {
			t.Errorf("default settings = %+v %v %v", v, found, err)
		}
		changed := agentsettings.Defaults()
		changed.LazyDecay = false
		l.append(memAlice, agentsettings.SettingsChanged{AgentRef: memAlice, Settings: changed, Changed: []string{"lazy_decay"}, ChangedAt: memT0.Add(time.Minute)})
		if v, found, err := l.rm.Settings(ctx, memAlice.UserID, memAlice.AgentID); err != nil || !found || v.UpdatedAt == nil ||
			!v.UpdatedAt.Equal(memT0.Add(time.Minute)) || !reflect.DeepEqual(v.Settings, changed) {
			t.Errorf("changed settings = %+v %v %v", v, found, err)
		}
		// A settings event as an engram older than most settings wrote
		// it, read from the log: the settings it leaves out are the
		// defaults, on every store (the server's and a local stack's
		// fold, and a replay, decode it the same way).
		oldShape := l.record(t, memory.AgentStream(memAlice.UserID, memAlice.AgentID), agentsettings.SettingsChanged{AgentRef: memAlice, ChangedAt: memT0.Add(2 * time.Minute)})
		var payload map[string]json.RawMessage
		if err := json.Unmarshal(oldShape[0].Payload, &payload); err != nil {
			t.Fatal(err)
		}
		payload["settings"] = json.RawMessage(`{"stack_state":"active","lint_rules":{"min_length":5}}`)
		oldShape[0].Payload, _ = json.Marshal(payload)
		if err := l.projection().Apply(ctx, oldShape); err != nil {
			t.Fatal(err)
		}
		want := agentsettings.Defaults()
		want.StackState, want.LintRules.MinLength = agentsettings.Active, 5
		if v, _, err := l.rm.Settings(ctx, memAlice.UserID, memAlice.AgentID); err != nil || v.Settings != want {
			t.Errorf("settings of an old-shape event = %+v, %v; want %+v", v.Settings, err, want)
		}
		if _, found, err := l.rm.Settings(ctx, "nobody", memAlice.AgentID); found || err != nil {
			t.Errorf("settings of another user's agent: found %v, %v", found, err)
		}

		// Stats count by type, forgotten apart, raw entries by processing.
		raw := memNoteCreated(memAlice, "r1", "raw", memT0)
		raw.Type = memory.RawEntry
		done := memNoteCreated(memAlice, "r2", "done", memT0)
		done.Type, done.Content = memory.RawEntry, json.RawMessage(`{"content":"done","processed":true}`)
		l.append(memAlice, raw, done, memory.MemoryForgotten{AgentRef: memAlice, MemoryID: "q1", ForgottenAt: memT0})
		st, found, err := l.rm.AgentStats(ctx, memAlice.UserID, memAlice.AgentID, memT0)
		if err != nil || !found || st.Total != 3 || st.Forgotten != 1 || st.ByType[memory.Note] != 1 || st.ForgottenByType[memory.Note] != 1 ||
			st.ByType[memory.RawEntry] != 2 || st.Raw.Processed != 1 || st.Raw.Unprocessed != 1 || len(st.ByType) != len(memory.Types()) {
			t.Errorf("stats = %+v, %v %v", st, found, err)
		}
	})
}

func viewIDs(views []memory.View) []string {
	ids := []string{}
	for _, v := range views {
		ids = append(ids, v.ID)
	}
	return ids
}

func isInvalid(err error) bool {
	de, ok := domain.AsError(err)
	return ok && de.Kind == domain.KindInvalid
}
