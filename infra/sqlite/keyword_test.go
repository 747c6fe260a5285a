package sqlite

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/projections/search"
)

// keywordRig is a keyword projection over a fresh database, fed directly.
type keywordRig struct {
	t   *testing.T
	kw  *Keyword
	pos uint64
}

func newKeywordRig(t *testing.T) *keywordRig {
	db, err := Open(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &keywordRig{t: t, kw: NewKeyword(db)}
}

func (r *keywordRig) apply(payloads ...domain.Payload) {
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
	if err := r.kw.Apply(context.Background(), evs); err != nil {
		r.t.Fatal(err)
	}
}

func (r *keywordRig) note(user, agent, id, text string, tags ...string) {
	content, _ := json.Marshal(memory.NoteContent{Content: text})
	r.apply(&memory.MemoryCreated{AgentRef: memory.AgentRef{UserID: user, AgentID: agent}, MemoryID: id, Type: memory.Note,
		Content: content, Tags: tags, CreatedAt: time.Unix(1700000000, 0)})
}

func (r *keywordRig) search(user, agent, text string, f search.Filter) []string {
	r.t.Helper()
	hits, err := r.kw.SearchKeyword(context.Background(), search.KeywordQuery{UserID: user, AgentID: agent, Text: text, Filter: f, Limit: 50})
	if err != nil {
		r.t.Fatalf("search %q: %v", text, err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
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
		r.search("u", "a", b.String(), search.Filter{})
	}
}

func TestKeywordScopeUpdateAndReset(t *testing.T) {
	r := newKeywordRig(t)
	u1a, u2a := memory.AgentRef{UserID: "u1", AgentID: "a"}, memory.AgentRef{UserID: "u2", AgentID: "a"}
	r.apply(&memory.AgentCreated{AgentRef: u1a}, &memory.AgentCreated{AgentRef: u2a})
	r.note("u1", "a", "m1", "alpha beta")
	r.note("u2", "a", "m2", "alpha gamma")
	r.note("u1", "ghost", "m3", "alpha in an agent that was never created")
	if got := r.search("u1", "a", "alpha", search.Filter{}); len(got) != 1 || got[0] != "m1" {
		t.Fatalf("u1 sees %v", got)
	}
	// An update of another agent's memory id is ignored; the owner's
	// replaces the text.
	r.apply(&memory.MemoryUpdated{AgentRef: u2a, MemoryID: "m1", Content: json.RawMessage(`{"content":"hijack"}`)})
	r.apply(&memory.MemoryUpdated{AgentRef: u1a, MemoryID: "m1", Content: json.RawMessage(`{"content":"delta"}`)})
	if got := r.search("u1", "a", "alpha", search.Filter{}); len(got) != 0 {
		t.Fatalf("old text still matches: %v", got)
	}
	if got := r.search("u1", "a", "delta hijack", search.Filter{}); len(got) != 1 {
		t.Fatalf("new text: %v", got)
	}
	r.apply(&memory.AgentDeleted{AgentRef: u1a})
	if got := r.search("u1", "a", "delta", search.Filter{}); len(got) != 0 {
		t.Fatalf("deleted agent still matches: %v", got)
	}
	if got := r.search("u2", "a", "alpha", search.Filter{}); len(got) != 1 {
		t.Fatalf("other user's agent lost its memory: %v", got)
	}
	if err := r.kw.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.search("u2", "a", "alpha", search.Filter{}); len(got) != 0 {
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
	dir := t.TempDir()
	db, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &keywordRig{t: t, kw: NewKeyword(db)}
	ref := memory.AgentRef{UserID: "u", AgentID: "a"}
	r.apply(&memory.AgentCreated{AgentRef: ref})
	content, _ := json.Marshal(memory.NoteContent{Content: "adopted a dog", Speaker: "Melanie"})
	r.apply(&memory.MemoryCreated{AgentRef: ref, MemoryID: "m1", Type: memory.Note, Content: content, Tags: []string{"Caroline"}, CreatedAt: time.Unix(1700000000, 0)})
	r.note("u", "a", "m2", "adopted a cat")
	for _, tc := range []struct {
		query string
		f     search.Filter
		want  []string
	}{
		{"caroline", search.Filter{}, []string{"m1"}},
		{"melanie dog", search.Filter{}, []string{"m1"}},
		{"What did Caroline adopt?", search.Filter{}, []string{"m1", "m2"}},
		{"adopted", search.Filter{Tags: []string{"caroline"}}, nil}, // the filter is exact: "Caroline" ≠ "caroline"
		{"adopted", search.Filter{Tags: []string{"Caroline"}}, []string{"m1"}},
	} {
		if got := r.search("u", "a", tc.query, tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%q %+v: %v, want %v", tc.query, tc.f, got, tc.want)
		}
	}
	// An update replaces the metadata with the new tags and content.
	r.apply(&memory.MemoryUpdated{AgentRef: ref, MemoryID: "m1", Content: json.RawMessage(`{"content":"adopted a dog","speaker":"Jon"}`), Tags: []string{"pets"}})
	if got := r.search("u", "a", "caroline melanie", search.Filter{}); len(got) != 0 {
		t.Fatalf("old metadata still matches: %v", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r = &keywordRig{t: t, kw: NewKeyword(db), pos: r.pos}
	if err := r.kw.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.search("u", "a", "jon pets", search.Filter{}); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("after reload: %v", got)
	}
}

// A database whose keyword projection was written before the metadata
// column existed is emptied by the migration, so the projection replays
// the log (and indexes metadata) at start.
func TestKeywordMetaMigrationReplays(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, stmt := range []string{
		`ALTER TABLE keyword_docs DROP COLUMN meta`,
		`DELETE FROM migrations WHERE name LIKE '%0008_keyword_meta.sql'`,
		`INSERT INTO keyword_agents (user_id, agent_id) VALUES ('u', 'a')`,
		`INSERT INTO keyword_docs (memory_id, user_id, agent_id, type, tags, created_ns, body) VALUES ('m1', 'u', 'a', 'note', '["x"]', 0, 'old')`,
		`INSERT INTO projection_checkpoints (name, position) VALUES ('keyword', 42)`,
	} {
		if _, err := db.write.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	db, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if pos, err := NewKeyword(db).Position(ctx); err != nil || pos != 0 {
		t.Fatalf("keyword position after the migration: %d %v, want 0 (replay)", pos, err)
	}
	var n int
	if err := db.write.QueryRowContext(ctx, `SELECT COUNT(*) FROM keyword_docs`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("keyword_docs rows after the migration: %d %v", n, err)
	}
}
