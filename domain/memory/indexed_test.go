package memory

import (
	"encoding/json"
	"testing"
	"time"
)

func TestIndexedTextPerType(t *testing.T) {
	tests := []struct {
		typ     Type
		content string
		want    string
	}{
		{Episode, `{"objective":"ship v1","outcome":"shipped late","lessons":["plan buffers"," ","test early"],"outcome_type":"partial"}`, "ship v1\nshipped late\nplan buffers\ntest early"},
		{Belief, `{"statement":"tests catch regressions","belief_type":"causal"}`, "tests catch regressions"},
		{Note, `{"content":"remember the milk","speaker":"Ada","reason":"shopping"}`, "remember the milk"},
		{Value, `{"name":"honesty","statement":"say what is true","priority":90}`, "honesty\nsay what is true"},
		{Goal, `{"title":"learn Go","description":"finish the tour"}`, "learn Go\nfinish the tour"},
		{Goal, `{"title":"learn Go"}`, "learn Go"},
		{Playbook, `{"name":"deploy","description":"ship it","steps":[{"action":"build","details":"make"},{"action":"push"}],"trigger_conditions":["release"]}`, "deploy\nship it\nbuild\nmake\npush"},
		{RawEntry, `{"content":"raw blob","source":"cli"}`, "raw blob"},
		{Relationship, `{"entity_name":"Ada","relationship_type":"colleague","notes":"met at work","entity_type":"person"}`, "Ada\nmet at work"},
		{Drive, `{"drive_type":"curiosity","focus_areas":["math"]}`, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			content, err := NormalizeContent(tt.typ, json.RawMessage(tt.content))
			if err != nil {
				t.Fatal(err)
			}
			got, err := IndexedText(tt.typ, content)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("IndexedText = %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := IndexedText(Type("diary"), json.RawMessage(`{}`)); err == nil {
		t.Error("IndexedText of an unknown type succeeded")
	}
}

func TestIndexedMetadataPerType(t *testing.T) {
	tests := []struct {
		typ     Type
		content string
		tags    []string
		want    string
	}{
		{Note, `{"content":"remember the milk","speaker":"Ada","note_type":"fact"}`, []string{"shopping", " "}, "shopping\nAda"},
		{Note, `{"content":"no speaker"}`, nil, ""},
		{Relationship, `{"entity_name":"Ada Lovelace","relationship_type":"colleague","entity_type":"person","notes":"met at work"}`, []string{"work"}, "work\nAda Lovelace\nperson\ncolleague"},
		{RawEntry, `{"content":"raw blob","source":"cli"}`, []string{"Caroline"}, "Caroline"},
		{Episode, `{"objective":"ship v1","outcome":"late","outcome_type":"partial"}`, []string{"release"}, "release"},
		{Goal, `{"title":"learn Go","goal_type":"task","status":"active"}`, nil, ""},
		{Drive, `{"drive_type":"curiosity","focus_areas":["math"]}`, []string{"x"}, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			content, err := NormalizeContent(tt.typ, json.RawMessage(tt.content))
			if err != nil {
				t.Fatal(err)
			}
			got, err := IndexedMetadata(tt.typ, content, tt.tags)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("IndexedMetadata = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTextHash(t *testing.T) {
	a, b := TextHash("hello"), TextHash("hello ")
	if a == b || len(a) != 32 || a != TextHash("hello") {
		t.Errorf("TextHash: %q %q", a, b)
	}
}

func TestParseType(t *testing.T) {
	tests := []struct {
		name string
		want Type
		ok   bool
	}{
		{"episodes", Episode, true}, {"episode", Episode, true}, {"Episodes", Episode, true},
		{"beliefs", Belief, true}, {"belief", Belief, true},
		{"notes", Note, true}, {"note", Note, true},
		{"agent_values", Value, true}, {"value", Value, true}, {"values", Value, true}, {"agent_value", Value, true},
		{"goals", Goal, true}, {"goal", Goal, true},
		{"playbooks", Playbook, true}, {"playbook", Playbook, true},
		{"raw_entries", RawEntry, true}, {"raw_entry", RawEntry, true}, {"raw", RawEntry, true}, {"RAW", RawEntry, true},
		{"relationships", Relationship, true}, {"relationship", Relationship, true},
		{"drives", Drive, true}, {" drive ", Drive, true},
		{"diary", "", false}, {"", "", false}, {"raws", "", false},
	}
	for _, tt := range tests {
		got, ok := ParseType(tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseType(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	for _, typ := range Types() {
		if back, ok := ParseType(typ.Plural()); !ok || back != typ {
			t.Errorf("plural %q of %q does not parse back", typ.Plural(), typ)
		}
	}
	if Drive.Searchable() || !Episode.Searchable() || len(SearchableTypes()) != 8 || len(Types()) != 9 {
		t.Error("searchable types are wrong")
	}
}

func TestParseTypeFilter(t *testing.T) {
	got, err := ParseTypeFilter("types", []string{"notes", "episode", "note"})
	if err != nil || len(got) != 2 || got[0] != Episode || got[1] != Note {
		t.Errorf("ParseTypeFilter = %v, %v", got, err)
	}
	if got, err := ParseTypeFilter("types", nil); got != nil || err != nil {
		t.Errorf("empty filter = %v, %v; want nil (all)", got, err)
	}
	_, err = ParseTypeFilter("types", []string{"notes", "diaries"})
	assertInvalidField(t, err, "types")
}

// Derive is IndexedText, IndexedMetadata and InitialVitality from one
// parse: the same values for every type, and no values (ok false) for
// content that does not decode as its type, where the three functions
// each answer on their own (a text error, metadata or vitality anyway).
func TestDeriveIsTheThreeFunctions(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		typ     Type
		content string
		tags    []string
		ok      bool
	}{
		{Episode, `{"objective":"ship v1","outcome":"late","lessons":["plan"],"outcome_type":"partial","strength":0.4}`, []string{"release"}, true},
		{Belief, `{"statement":"tests catch regressions","belief_type":"causal","is_protected":true}`, nil, true},
		{Note, `{"content":"remember the milk","speaker":"Ada","note_type":"fact"}`, []string{"shopping", " "}, true},
		{Note, `{"content":"floored","strength":0.001}`, nil, true},
		{Value, `{"name":"honesty","statement":"say what is true","priority":90,"is_protected":false}`, nil, true},
		{Goal, `{"title":"learn Go","description":"finish the tour","goal_type":"aspiration"}`, []string{"x"}, true},
		{Playbook, `{"name":"deploy","steps":[{"action":"build","details":"make"},{"action":"push"}]}`, nil, true},
		{RawEntry, `{"content":"raw blob","source":"cli"}`, []string{"Caroline"}, true},
		{Relationship, `{"entity_name":"Ada","relationship_type":"colleague","entity_type":"person","notes":"met at work"}`, []string{"work"}, true},
		{Drive, `{"drive_type":"curiosity","focus_areas":["math"],"strength":0.9}`, []string{"x"}, true},
		{Note, `{"content":5,"strength":0.3}`, []string{"t"}, false},
		{Goal, `{"title":"t","goal_type":7,"strength":0.6}`, nil, false},
		{Episode, `{"objective":"x","strength":"high"}`, nil, false},
		{Drive, `{"drive_type":["x"]}`, nil, false},
		{Type("unknown"), `{"content":"x"}`, []string{"t"}, false},
		{Note, `not json`, nil, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ)+" "+tt.content, func(t *testing.T) {
			content := json.RawMessage(tt.content)
			d, ok := Derive(tt.typ, content, tt.tags, at)
			if ok != tt.ok {
				t.Fatalf("Derive ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				if d != (Derived{}) {
					t.Fatalf("Derive = %+v with ok false, want nothing", d)
				}
				return
			}
			text, err := IndexedText(tt.typ, content)
			if err != nil {
				t.Fatal(err)
			}
			meta, err := IndexedMetadata(tt.typ, content, tt.tags)
			if err != nil {
				t.Fatal(err)
			}
			want := Derived{Text: text, Metadata: meta, Vitality: InitialVitality(tt.typ, content, at)}
			if d != want {
				t.Fatalf("Derive = %+v, want %+v", d, want)
			}
		})
	}
}

// BenchmarkDerive compares what a created memory costs the read models
// that derive from its content: the three functions (a parse each) and
// Derive (one parse for all).
func BenchmarkDerive(b *testing.B) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	content := json.RawMessage(`{"content":"the deploy pipeline needs a manual approval step before friday releases","note_type":"fact","speaker":"Ada","is_protected":false,"strength":0.8}`)
	tags := []string{"deploy", "release"}
	b.Run("three-functions", func(b *testing.B) {
		for b.Loop() {
			if _, err := IndexedText(Note, content); err != nil {
				b.Fatal(err)
			}
			if _, err := IndexedMetadata(Note, content, tags); err != nil {
				b.Fatal(err)
			}
			_ = InitialVitality(Note, content, at)
		}
	})
	b.Run("derive", func(b *testing.B) {
		for b.Loop() {
			if _, ok := Derive(Note, content, tags, at); !ok {
				b.Fatal("not derived")
			}
		}
	})
}
