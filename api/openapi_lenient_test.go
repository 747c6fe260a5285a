package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain/memory"
	"github.com/google/uuid"
)

// spellingsOf are names the server takes for a memory type
// (memory.ParseType): its singular, plural and short forms, in turn as
// written, in capitals, capitalised and between spaces (the letter case
// and the spaces are checked by every type in turn, not by every name, to
// keep the requests few).
func spellingsOf(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = [...]string{n, strings.ToUpper(n), strings.ToUpper(n[:1]) + n[1:], " " + n + "\t"}[(len(n)+i)%4]
	}
	return out
}

// typeSpellings are the spellings of each memory type, by type (docs/api.md#memory-type-names).
var typeSpellings = map[memory.Type][]string{
	memory.Episode:      spellingsOf("episode", "episodes"),
	memory.Belief:       spellingsOf("belief", "beliefs"),
	memory.Note:         spellingsOf("note", "notes"),
	memory.Value:        spellingsOf("value", "agent_values", "values", "agent_value"),
	memory.Goal:         spellingsOf("goal", "goals"),
	memory.Playbook:     spellingsOf("playbook", "playbooks"),
	memory.RawEntry:     spellingsOf("raw_entry", "raw_entries", "raw"),
	memory.Relationship: spellingsOf("relationship", "relationships"),
	memory.Drive:        spellingsOf("drive", "drives"),
}

// minimalContent is the least content a memory of each type takes.
var minimalContent = map[memory.Type]map[string]any{
	memory.Episode:      {"objective": "ship", "outcome": "shipped"},
	memory.Belief:       {"statement": "tests catch drift"},
	memory.Note:         {"content": "the document follows the server"},
	memory.Value:        {"name": "care", "statement": "be careful"},
	memory.Goal:         {"title": "agree"},
	memory.Playbook:     {"name": "release", "description": "tag and push"},
	memory.RawEntry:     {"content": "said something"},
	memory.Relationship: {"entity_name": "ada", "relationship_type": "colleague"},
	memory.Drive:        {"drive_type": "curiosity"},
}

// TestTheDocumentAcceptsWhatTheServerAccepts sends each request the
// server accepts in a spelling the document might not: every spelling of
// every memory type wherever a type is taken (create, batch, sync push,
// derived_from, search and similarity filters, re-embed), and "" or null
// for each optional enum field, which the server takes as absent. The
// harness validates each request the server answers with a success
// against the document, so a document stricter than the server fails
// here, before a client generated from it refuses what the server takes.
func TestTheDocumentAcceptsWhatTheServerAccepts(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	const agent = "spellings"
	raw := s.create(t, aliceKey, agent, "raw_entry", minimalContent[memory.RawEntry])
	note := s.create(t, aliceKey, agent, "note", minimalContent[memory.Note])
	const processed = "processed"
	s.create(t, aliceKey, processed, "note", minimalContent[memory.Note])

	var items []map[string]any
	var pushed []any
	for _, typ := range memory.Types() {
		for _, spelling := range typeSpellings[typ] {
			items = append(items, map[string]any{"type": spelling, "content": minimalContent[typ]})
			pushed = append(pushed, syncEvent("MemoryCreated", map[string]any{"memory_id": uuid.NewString(), "type": spelling, "content": minimalContent[typ]}))
		}
	}
	var searchable, refs []string
	for _, typ := range memory.SearchableTypes() {
		searchable = append(searchable, typeSpellings[typ]...)
	}
	for _, spelling := range typeSpellings[memory.RawEntry] {
		refs = append(refs, spelling+":"+raw.ID)
	}
	dims := raw.Embedding.Dimensions
	embedding := make([]float32, dims)
	embedding[0] = 1

	type call struct {
		name, method, path string
		body               any
		status             int
	}
	calls := []call{
		{"every spelling of every type on create", "POST", "/v1/memories/batch", map[string]any{"agent_id": agent, "memories": items}, http.StatusCreated},
		{"every spelling of every type on sync push", "POST", "/v1/sync/events", map[string]any{"agent_id": agent, "events": pushed}, http.StatusOK},
		{"every spelling of raw in derived_from", "POST", "/v1/memories", map[string]any{"agent_id": agent, "type": "note", "content": minimalContent[memory.Note], "derived_from": refs}, http.StatusCreated},
		{"every searchable spelling in search's types", "POST", "/v1/search", map[string]any{"agent_id": agent, "query": "shipped", "types": searchable}, http.StatusOK},
		{"every searchable spelling in similar's types", "POST", "/v1/embeddings/similar", map[string]any{"agent_id": agent, "embedding": embedding, "types": searchable}, http.StatusOK},
		{"search's mode empty", "POST", "/v1/search", map[string]any{"agent_id": agent, "query": "shipped", "mode": ""}, http.StatusOK},
		{"search's mode null", "POST", "/v1/search", map[string]any{"agent_id": agent, "query": "shipped", "mode": nil}, http.StatusOK},
		{"encoding_format empty", "POST", "/v1/embeddings", map[string]any{"input": "x", "model": "default", "encoding_format": ""}, http.StatusOK},
		{"encoding_format null", "POST", "/v1/embeddings", map[string]any{"input": "x", "model": "default", "encoding_format": nil}, http.StatusOK},
		{"provenance's direction empty", "GET", "/v1/memories/" + note.ID + "/provenance?direction=", nil, http.StatusOK},
		{"suggestions' status empty", "GET", "/v1/agents/" + agent + "/suggestions?status=", nil, http.StatusOK},
		// A processing pass over one note, not over the memories above.
		{"process's transition empty", "POST", "/v1/agents/" + processed + "/process", map[string]any{"transition": ""}, http.StatusOK},
		{"process's transition null", "POST", "/v1/agents/" + processed + "/process", map[string]any{"transition": nil}, http.StatusOK},
	}
	// Integral numbers written with a fraction or an exponent, integers to
	// JSON Schema, wherever an integer is taken: a body's field, a memory's
	// content, a setting, a pushed event's payload.
	integral := func(literal string) json.Number { return json.Number(literal) }
	calls = append(calls,
		call{"search's limit 10.0", "POST", "/v1/search", map[string]any{"agent_id": agent, "query": "shipped", "limit": integral("10.0")}, http.StatusOK},
		call{"similar's limit 3e0", "POST", "/v1/embeddings/similar", map[string]any{"agent_id": agent, "embedding": embedding, "limit": integral("3e0")}, http.StatusOK},
		call{"a value's priority 62.0", "POST", "/v1/memories", map[string]any{"agent_id": agent, "type": "value", "content": map[string]any{"name": "care", "statement": "be careful", "priority": integral("62.0")}}, http.StatusCreated},
		call{"a lint rule's lengths 1.0e1 and 2000.0", "PATCH", "/v1/agents/" + agent + "/settings", map[string]any{"lint_rules": map[string]any{"min_length": integral("1.0e1"), "max_length": integral("2000.0")}}, http.StatusOK},
		call{"the suggestions' expiry 48.0 hours", "PATCH", "/v1/agents/" + processed + "/processing", map[string]any{"suggestion_expiry_hours": integral("48.0")}, http.StatusOK},
		call{"a layer's quantity threshold 287.0", "PATCH", "/v1/agents/" + processed + "/processing", map[string]any{"layers": map[string]any{"episode_to_goal": map[string]any{"quantity_threshold": integral("287.0")}}}, http.StatusOK},
		call{"a pushed agent's dimensions 384.0", "POST", "/v1/sync/events", map[string]any{"agent_id": agent, "events": []any{syncEvent("AgentCreated", map[string]any{"embedding_model": "engram-hash-384", "dimensions": integral("384.0")})}}, http.StatusOK},
	)
	// null for an optional body field and an empty optional query
	// parameter are absent (docs/api.md#absent-values).
	calls = append(calls,
		call{"search's tags, types, limit and times null", "POST", "/v1/search", map[string]any{"agent_id": agent, "query": "shipped", "tags": nil, "types": nil, "limit": nil, "created_after": nil}, http.StatusOK},
		call{"a memory's tags, created_at and derived_from null", "POST", "/v1/memories", map[string]any{"agent_id": agent, "type": "note", "content": minimalContent[memory.Note], "tags": nil, "created_at": nil, "derived_from": nil}, http.StatusCreated},
		call{"a patch's content null", "PATCH", "/v1/memories/" + note.ID, map[string]any{"content": nil, "tags": []string{"patched"}}, http.StatusOK},
		call{"weaken's reason and by null", "POST", "/v1/memories/" + note.ID + "/weaken", map[string]any{"reason": nil, "by": nil}, http.StatusOK},
		call{"the processing's layers null", "PATCH", "/v1/agents/" + processed + "/processing", map[string]any{"layers": nil, "auto_promote": nil}, http.StatusOK},
		call{"a processing layer null", "PATCH", "/v1/agents/" + processed + "/processing", map[string]any{"layers": map[string]any{"raw_to_note": nil}}, http.StatusOK},
		call{"a setting null", "PATCH", "/v1/agents/" + agent + "/settings", map[string]any{"lint_rules": map[string]any{"min_length": nil}, "lazy_decay": nil}, http.StatusOK},
		call{"a memory's created_at empty", "POST", "/v1/memories", map[string]any{"agent_id": agent, "type": "note", "content": minimalContent[memory.Note], "created_at": ""}, http.StatusCreated},
		call{"a batch item's created_at empty", "POST", "/v1/memories/batch", map[string]any{"agent_id": agent, "memories": []any{map[string]any{"type": "note", "content": minimalContent[memory.Note], "created_at": ""}}}, http.StatusCreated},
		call{"the list's limit empty", "GET", "/v1/memories?agent_id=" + agent + "&limit=&include_forgotten=", nil, http.StatusOK},
		call{"the agents' limit empty", "GET", "/v1/agents?limit=&cursor=", nil, http.StatusOK},
	)
	for _, spelling := range typeSpellings[memory.Note] {
		calls = append(calls, call{"re-embed of " + spelling, "POST", "/v1/embeddings/reembed", map[string]any{"agent_id": agent, "memory_type": spelling, "memory_id": note.ID}, http.StatusOK})
	}
	// The optional enum fields of content, each empty and null.
	optional := map[memory.Type][]string{
		memory.Episode:      {"outcome_type", "source_type"},
		memory.Belief:       {"belief_type", "scope"},
		memory.Note:         {"note_type"},
		memory.Goal:         {"goal_type", "priority", "status"},
		memory.RawEntry:     {"source"},
		memory.Relationship: {"source_type"},
	}
	for _, typ := range memory.Types() {
		for _, field := range optional[typ] {
			for _, absent := range []any{"", nil} {
				content := map[string]any{field: absent}
				for k, v := range minimalContent[typ] {
					content[k] = v
				}
				calls = append(calls, call{fmt.Sprintf("%s's %s %#v", typ, field, absent), "POST", "/v1/memories", map[string]any{"agent_id": agent, "type": string(typ), "content": content}, http.StatusCreated})
			}
		}
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			s.request(t, c.method, c.path, aliceKey, c.body).must(t, c.status, nil)
		})
	}
	// A number that is not integral stays refused, naming its field.
	for _, c := range []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"search's limit 2.5", "POST", "/v1/search", map[string]any{"agent_id": agent, "query": "shipped", "limit": integral("2.5")}, "limit"},
		{"a value's priority 62.5", "POST", "/v1/memories", map[string]any{"agent_id": agent, "type": "value", "content": map[string]any{"name": "care", "statement": "be careful", "priority": integral("6.25e1")}}, "content.priority"},
		{"a lint rule's length 10.5", "PATCH", "/v1/agents/" + agent + "/settings", map[string]any{"lint_rules": map[string]any{"min_length": integral("10.5")}}, "lint_rules"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.request(t, c.method, c.path, aliceKey, c.body)
			if r.status != http.StatusBadRequest || r.errorCode() != "invalid_request" || r.details()["field"] != c.field {
				t.Errorf("status %d, want 400 invalid_request naming %s: %s", r.status, c.field, r.raw)
			}
		})
	}
	t.Run("export's format empty", func(t *testing.T) {
		req, err := http.NewRequest("GET", s.srv.URL+"/v1/agents/"+agent+"/export?format=", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		res, err := s.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", res.StatusCode, body)
		}
	})
}
