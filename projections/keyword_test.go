package projections_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/infra/textindex"
	"github.com/engram-memory/engram/projections"
)

// keywordRig is the keyword projection over a fresh database and the
// embedded keyword index, fed directly.
type keywordRig struct {
	t     *testing.T
	kw    *projections.Keyword
	index domain.KeywordIndex
	pos   uint64
}

func newKeywordRig(t *testing.T) *keywordRig {
	db, err := sqlite.Open(context.Background(), sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return newKeywordRigOn(t, db)
}

func newKeywordRigOn(t *testing.T, db *sqlite.DB) *keywordRig {
	index := textindex.NewPort(textindex.Options{}, 0)
	return &keywordRig{t: t, kw: projections.NewKeyword(sqlite.NewKeywordStore(db), index, true, nil), index: index}
}

func (r *keywordRig) events(payloads ...domain.Payload) []domain.Event {
	r.t.Helper()
	var evs []domain.Event
	for _, p := range payloads {
		raw, err := json.Marshal(p)
		if err != nil {
			r.t.Fatal(err)
		}
		r.pos++
		evs = append(evs, domain.Event{Position: r.pos, Type: p.EventType(), Payload: raw})
	}
	return evs
}

func (r *keywordRig) apply(payloads ...domain.Payload) {
	r.t.Helper()
	if err := r.kw.Apply(context.Background(), r.events(payloads...)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *keywordRig) note(user, agent, id, text string, tags ...string) {
	content, _ := json.Marshal(memory.NoteContent{Content: text})
	r.apply(&memory.MemoryCreated{AgentRef: memory.AgentRef{UserID: user, AgentID: agent}, MemoryID: id, Type: memory.Note,
		Content: content, Tags: tags, CreatedAt: time.Unix(1700000000, 0)})
}

func (r *keywordRig) search(user, agent, text string, f domain.IndexFilter) []string {
	r.t.Helper()
	if r.index == nil {
		r.t.Fatal("rig without an index handle")
	}
	hits, err := r.index.SearchKeyword(context.Background(), domain.KeywordQuery{
		Scope: domain.IndexScope{UserID: user, AgentID: agent}, Text: text, Filter: f, Limit: 50,
	})
	if err != nil {
		r.t.Fatalf("search %q: %v", text, err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.MemoryID)
	}
	return out
}

// Random user text, full of query-syntax characters, never fails a query.
func TestKeywordRandomQueriesNeverFail(t *testing.T) {
	r := newKeywordRig(t)
	r.apply(&memory.AgentCreated{AgentRef: memory.AgentRef{UserID: "u", AgentID: "a"}})
	r.note("u", "a", "m1", `tower "near" (old) - 5* : NEAR`)
	alphabet := []rune(`"'*()[]{}:^+-,.;!?~ \	NEAR AND OR NOT body tower 0123 éü🙂` + "\x00\x1f")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		r.search("u", "a", b.String(), domain.IndexFilter{})
	}
}

func TestKeywordScopeUpdateAndReset(t *testing.T) {
	r := newKeywordRig(t)
	u1a, u2a := memory.AgentRef{UserID: "u1", AgentID: "a"}, memory.AgentRef{UserID: "u2", AgentID: "a"}
	r.apply(&memory.AgentCreated{AgentRef: u1a}, &memory.AgentCreated{AgentRef: u2a})
	r.note("u1", "a", "m1", "alpha beta")
	r.note("u2", "a", "m2", "alpha gamma")
	r.note("u1", "ghost", "m3", "alpha in an agent that was never created")
	if got := r.search("u1", "a", "alpha", domain.IndexFilter{}); len(got) != 1 || got[0] != "m1" {
		t.Fatalf("u1 sees %v", got)
	}
	// An update of another agent's memory id is ignored; the owner's
	// replaces the text.
	r.apply(&memory.MemoryUpdated{AgentRef: u2a, MemoryID: "m1", Content: json.RawMessage(`{"content":"hijack"}`)})
	r.apply(&memory.MemoryUpdated{AgentRef: u1a, MemoryID: "m1", Content: json.RawMessage(`{"content":"delta"}`)})
	if got := r.search("u1", "a", "alpha", domain.IndexFilter{}); len(got) != 0 {
		t.Fatalf("old text still matches: %v", got)
	}
	if got := r.search("u1", "a", "delta hijack", domain.IndexFilter{}); len(got) != 1 {
		t.Fatalf("new text: %v", got)
	}
	r.apply(&memory.AgentDeleted{AgentRef: u1a})
	if got := r.search("u1", "a", "delta", domain.IndexFilter{}); len(got) != 0 {
		t.Fatalf("deleted agent still matches: %v", got)
	}
	if got := r.search("u2", "a", "alpha", domain.IndexFilter{}); len(got) != 1 {
		t.Fatalf("other user's agent lost its memory: %v", got)
	}
	if err := r.kw.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.search("u2", "a", "alpha", domain.IndexFilter{}); len(got) != 0 {
		t.Fatalf("reset left %v", got)
	}
	if pos, err := r.kw.Position(context.Background()); err != nil || pos != 0 {
		t.Fatalf("position after reset: %d %v", pos, err)
	}
}

// Tags and a note's speaker are searchable (the metadata field), after an
// update and after a restart reloads the index from SQLite; the tag filter
// stays exact.
func TestKeywordMetadataIsSearchable(t *testing.T) {
	dir := sqlitetest.Dir(t)
	db, err := sqlite.Open(context.Background(), dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := newKeywordRigOn(t, db)
	ref := memory.AgentRef{UserID: "u", AgentID: "a"}
	r.apply(&memory.AgentCreated{AgentRef: ref})
	content, _ := json.Marshal(memory.NoteContent{Content: "adopted a dog", Speaker: "Melanie"})
	r.apply(&memory.MemoryCreated{AgentRef: ref, MemoryID: "m1", Type: memory.Note, Content: content, Tags: []string{"Caroline"}, CreatedAt: time.Unix(1700000000, 0)})
	r.note("u", "a", "m2", "adopted a cat")
	for _, tc := range []struct {
		query string
		f     domain.IndexFilter
		want  []string
	}{
		{"caroline", domain.IndexFilter{}, []string{"m1"}},
		{"melanie dog", domain.IndexFilter{}, []string{"m1"}},
		{"What did Caroline adopt?", domain.IndexFilter{}, []string{"m1", "m2"}},
		{"adopted", domain.IndexFilter{Tags: []string{"caroline"}}, nil}, // the filter is exact: "Caroline" ≠ "caroline"
		{"adopted", domain.IndexFilter{Tags: []string{"Caroline"}}, []string{"m1"}},
	} {
		if got := r.search("u", "a", tc.query, tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%q %+v: %v, want %v", tc.query, tc.f, got, tc.want)
		}
	}
	// An update replaces the metadata with the new tags and content.
	r.apply(&memory.MemoryUpdated{AgentRef: ref, MemoryID: "m1", Content: json.RawMessage(`{"content":"adopted a dog","speaker":"Jon"}`), Tags: []string{"pets"}})
	if got := r.search("u", "a", "caroline melanie", domain.IndexFilter{}); len(got) != 0 {
		t.Fatalf("old metadata still matches: %v", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = sqlite.Open(context.Background(), dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pos := r.pos
	r = newKeywordRigOn(t, db)
	r.pos = pos
	if err := r.kw.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.search("u", "a", "jon pets", domain.IndexFilter{}); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("after reload: %v", got)
	}
}

// flakyKeywordIndex is the embedded keyword index with writes that fail
// while down is set, as a remote index's would during an outage.
type flakyKeywordIndex struct {
	domain.KeywordIndex
	down bool
}

var errOutage = fmt.Errorf("test outage: %w", domain.ErrIndexUnavailable)

func (f *flakyKeywordIndex) UpsertDocuments(ctx context.Context, docs ...domain.KeywordDocument) error {
	if f.down {
		return errOutage
	}
	return f.KeywordIndex.UpsertDocuments(ctx, docs...)
}

func (f *flakyKeywordIndex) DeleteMemory(ctx context.Context, scope domain.IndexScope, id string) error {
	if f.down {
		return errOutage
	}
	return f.KeywordIndex.DeleteMemory(ctx, scope, id)
}

// An index write that fails fails the batch and leaves the checkpoint
// (and the projection's state) behind, so the batch is applied again once
// the index is back; applying it again is harmless.
func TestKeywordIndexOutageLeavesCheckpointBehind(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	flaky := &flakyKeywordIndex{KeywordIndex: textindex.NewPort(textindex.Options{}, 0)}
	r := &keywordRig{t: t, kw: projections.NewKeyword(sqlite.NewKeywordStore(db), flaky, false, nil), index: flaky}
	ref := memory.AgentRef{UserID: "u", AgentID: "a"}
	r.apply(&memory.AgentCreated{AgentRef: ref})
	r.note("u", "a", "m1", "lighthouse keeper")
	batch := r.events(
		&memory.MemoryCreated{AgentRef: ref, MemoryID: "m2", Type: memory.Note, Content: json.RawMessage(`{"content":"lighthouse lamp"}`), CreatedAt: time.Unix(1700000000, 0)},
		&memory.MemoryForgotten{AgentRef: ref, MemoryID: "m1"},
	)
	flaky.down = true
	if err := r.kw.Apply(ctx, batch); !errors.Is(err, domain.ErrIndexUnavailable) {
		t.Fatalf("apply during the outage: %v, want ErrIndexUnavailable", err)
	}
	if pos, err := r.kw.Position(ctx); err != nil || pos != 2 {
		t.Fatalf("checkpoint after the failed batch: %d %v, want 2 (before the batch)", pos, err)
	}
	flaky.down = false
	for range 2 { // redelivered, then delivered once more
		if err := r.kw.Apply(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.search("u", "a", "lighthouse", domain.IndexFilter{}); !slices.Equal(got, []string{"m2"}) {
		t.Fatalf("after the outage: %v, want [m2]", got)
	}
	if pos, err := r.kw.Position(ctx); err != nil || pos != 4 {
		t.Fatalf("checkpoint after redelivery: %d %v, want 4", pos, err)
	}
}
