package sqlite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

// memLog appends agent-stream events to a real event log and feeds them to
// the memories read model, as the projection engine would.
type memLog struct {
	t     *testing.T
	store *sqlite.EventStore
	rm    *sqlite.Memories
	fed   uint64
}

func newMemLog(t *testing.T) *memLog {
	db := openDB(t)
	return &memLog{t: t, store: sqlite.NewEventStore(db, 50*time.Millisecond), rm: sqlite.NewMemories(db)}
}

// append records payloads on the agent's stream and applies every new
// event to the read model.
func (l *memLog) append(ref memory.AgentRef, payloads ...domain.Payload) {
	l.t.Helper()
	ctx := context.Background()
	events := make([]domain.NewEvent, len(payloads))
	for i, p := range payloads {
		e, err := domain.MarshalEvent(p, domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}})
		if err != nil {
			l.t.Fatal(err)
		}
		events[i] = e
	}
	if _, err := l.store.Append(ctx, memory.AgentStream(ref.UserID, ref.AgentID), domain.ExpectAny, events); err != nil {
		l.t.Fatal(err)
	}
	l.feedAll()
}

func (l *memLog) feedAll() {
	l.t.Helper()
	batch, err := l.store.ReadAll(context.Background(), l.fed, 10000)
	if err != nil {
		l.t.Fatal(err)
	}
	if len(batch) == 0 {
		return
	}
	if err := projections.NewMemories(l.rm).Apply(context.Background(), batch); err != nil {
		l.t.Fatal(err)
	}
	l.fed = batch[len(batch)-1].Position
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
	memHash  = func(s string) string { return memory.TextHash(s) }
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

func TestMemoriesReadModelRules(t *testing.T) {
	l := newMemLog(t)
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
}

func TestMemoriesReadModelRedeliveryAndReplay(t *testing.T) {
	l := newMemLog(t)
	ctx := context.Background()
	l.append(memAlice, memAgentCreated(memAlice, "m1", 4))
	for i := range 20 {
		id := fmt.Sprintf("n%02d", i)
		l.append(memAlice, memNoteCreated(memAlice, id, id, memT0.Add(time.Duration(i%5)*time.Minute)), memEmbeddedEvent(memAlice, id, "m1", 4, id))
	}
	l.append(memAlice, memory.MemoryForgotten{AgentRef: memAlice, MemoryID: "n03", ForgottenAt: memT0}, memory.MemoryPurged{AgentRef: memAlice, MemoryID: "n04"})
	before := l.export()

	all, err := l.store.ReadAll(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if err := projections.NewMemories(l.rm).Apply(ctx, all); err != nil { // redelivered: a no-op
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
		if err := projections.NewMemories(l.rm).Apply(ctx, all[i:min(i+7, len(all))]); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(before, l.export()) {
		t.Fatalf("replay differs:\n%s\n---\n%s", before, l.export())
	}
	if pos, _ := l.rm.Checkpoint(ctx); pos != all[len(all)-1].Position {
		t.Errorf("checkpoint %d, want %d", pos, all[len(all)-1].Position)
	}
}

func TestMemoriesReadModelListing(t *testing.T) {
	l := newMemLog(t)
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
}

// TestMemoriesReadModelAppliesPatchesFieldByField appends patches as
// writers that all decided on the same state would: each one's fields
// apply to the memory as the log left it, so changes of different fields
// all survive, and of one field the last in log order wins.
func TestMemoriesReadModelAppliesPatchesFieldByField(t *testing.T) {
	l := newMemLog(t)
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
	all, err := l.store.ReadAll(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.rm.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if err := projections.NewMemories(l.rm).Apply(ctx, all); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, l.export()) {
		t.Fatalf("replay differs:\n%s\n---\n%s", before, l.export())
	}
}

// A processing pass on the agent's cognition stream marks the raw entries
// it consumed processed in the memories read model; only the agent's own,
// and not the agent stream's version (commands append to that stream at
// it). An agent deleted and created again starts with nothing processed.
func TestMemoriesReadModelProcessedByAPass(t *testing.T) {
	l := newMemLog(t)
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
		p := processing.PassRecorded{StackRef: processing.StackRef{UserID: ref.UserID, AgentID: ref.AgentID, AgentCreatedAt: memT0},
			PassID: "p", Transition: processing.RawToNote, At: memT0}
		for _, id := range ids {
			p.Consumed = append(p.Consumed, processing.Consumed{ID: id, Into: []string{}})
		}
		e, err := domain.MarshalEvent(p, domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.store.Append(ctx, processing.Stream(ref.UserID, ref.AgentID), domain.ExpectAny, []domain.NewEvent{e}); err != nil {
			t.Fatal(err)
		}
		l.feedAll()
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
}
