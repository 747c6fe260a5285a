package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/embed/local"
)

func TestMemCreateEachType(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "types@example.com")
	tests := []struct {
		typ      string // as sent: plural or singular
		want     memory.Type
		content  map[string]any
		defaults map[string]any // visible in GET
		status   string
	}{
		{"episodes", memory.Episode, map[string]any{"objective": "ship v1", "outcome": "shipped"},
			map[string]any{"lessons": []any{}, "emotional_valence": 0.0, "confidence": 0.8, "strength": 1.0}, memory.StatusEmbedded},
		{"belief", memory.Belief, map[string]any{"statement": "tests catch bugs"},
			map[string]any{"belief_type": "fact", "confidence": 0.8, "scope": "world"}, memory.StatusEmbedded},
		{"notes", memory.Note, map[string]any{"content": "buy milk"},
			map[string]any{"note_type": "note"}, memory.StatusEmbedded},
		{"agent_values", memory.Value, map[string]any{"name": "honesty", "statement": "say what is true"},
			map[string]any{"priority": 50.0, "is_protected": true}, memory.StatusEmbedded},
		{"goal", memory.Goal, map[string]any{"title": "learn Go"},
			map[string]any{"goal_type": "task", "priority": "medium", "status": "active"}, memory.StatusEmbedded},
		{"playbooks", memory.Playbook, map[string]any{"name": "deploy", "description": "ship it", "steps": []any{map[string]any{"action": "build"}}},
			map[string]any{"trigger_conditions": []any{}, "failure_modes": []any{}}, memory.StatusEmbedded},
		{"raw_entries", memory.RawEntry, map[string]any{"content": "blob"},
			map[string]any{"source": "sdk", "processed": false}, memory.StatusEmbedded},
		{"relationship", memory.Relationship, map[string]any{"entity_name": "Ada", "relationship_type": "colleague"},
			map[string]any{"sentiment": 0.0}, memory.StatusEmbedded},
		{"drives", memory.Drive, map[string]any{"drive_type": "curiosity"},
			map[string]any{"intensity": 0.5, "focus_areas": []any{}}, memory.StatusNotIndexed},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			c := s.create(t, key, "claire", tt.typ, tt.content)
			if c.Type != string(tt.want) {
				t.Errorf("type = %q, want singular %q", c.Type, tt.want)
			}
			if id, err := uuid.Parse(c.ID); err != nil || id.Version() != 7 {
				t.Errorf("id %q is not a UUIDv7", c.ID)
			}
			if c.Embedding.Status != tt.status || c.Embedding.Model != local.BuiltinModelName || c.Embedding.Dimensions != 384 {
				t.Errorf("embedding = %+v, want %s with %s/384", c.Embedding, tt.status, local.BuiltinModelName)
			}
			if time.Since(c.CreatedAt) > time.Minute || c.CreatedAt.Location() != time.UTC {
				t.Errorf("created_at = %v", c.CreatedAt)
			}
			v := s.get(t, key, c.ID)
			if v.Type != tt.want || v.AgentID != "claire" || v.Forgotten || v.Embedding.Status != tt.status || !v.CreatedAt.Equal(c.CreatedAt) {
				t.Errorf("GET = %+v", v)
			}
			var content map[string]any
			if err := json.Unmarshal(v.Content, &content); err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.content {
				if fmt.Sprint(content[k]) != fmt.Sprint(want) {
					t.Errorf("content.%s = %v, want %v", k, content[k], want)
				}
			}
			for k, want := range tt.defaults {
				if fmt.Sprint(content[k]) != fmt.Sprint(want) {
					t.Errorf("default content.%s = %v, want %v", k, content[k], want)
				}
			}
		})
	}
	var agents struct{ Agents []memory.AgentView }
	s.request(t, "GET", "/v1/agents", key, nil).must(t, http.StatusOK, &agents)
	if len(agents.Agents) != 1 || agents.Agents[0].AgentID != "claire" || agents.Agents[0].MemoryCount != len(tests) ||
		agents.Agents[0].EmbeddingModel != local.BuiltinModelName || agents.Agents[0].Dimensions != 384 {
		t.Errorf("agents = %+v", agents.Agents)
	}
}

func TestMemCreateOptionalFields(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "optional@example.com")
	src := s.create(t, key, "a", "episode", map[string]any{"objective": "o", "outcome": "x"})
	var c memCreated
	s.request(t, "POST", "/v1/memories", key, map[string]any{
		"agent_id": "a", "type": "note", "content": map[string]any{"content": "derived"},
		"tags": []string{" work ", "ideas", "work"}, "created_at": "2024-03-01T10:00:00+02:00",
		"derived_from": []string{"episodes:" + src.ID},
	}).must(t, http.StatusCreated, &c)
	v := s.get(t, key, c.ID)
	if !v.CreatedAt.Equal(time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC)) || fmt.Sprint(v.Tags) != "[work ideas]" ||
		fmt.Sprint(v.DerivedFrom) != "[episode:"+src.ID+"]" {
		t.Errorf("view = %+v", v)
	}
}

func TestMemCreateValidation(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "invalid@example.com")
	future := time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)
	soon := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	tests := []struct {
		name  string
		body  map[string]any
		field string // "" for success
	}{
		{"missing required field", map[string]any{"type": "episodes", "content": map[string]any{"objective": "o"}}, "content.outcome"},
		{"out of range", map[string]any{"type": "episode", "content": map[string]any{"objective": "o", "outcome": "x", "emotional_valence": 3}}, "content.emotional_valence"},
		{"priority out of range", map[string]any{"type": "agent_values", "content": map[string]any{"name": "n", "statement": "s", "priority": 0}}, "content.priority"},
		{"bad enum", map[string]any{"type": "goals", "content": map[string]any{"title": "t", "status": "done"}}, "content.status"},
		{"bad source enum", map[string]any{"type": "raw_entry", "content": map[string]any{"content": "c", "source": "fax"}}, "content.source"},
		{"unknown content field", map[string]any{"type": "note", "content": map[string]any{"content": "c", "colour": "red"}}, "content.colour"},
		{"wrong content type", map[string]any{"type": "note", "content": map[string]any{"content": 5}}, "content.content"},
		{"missing content", map[string]any{"type": "note"}, "content"},
		{"missing type", map[string]any{"content": map[string]any{"content": "c"}}, "type"},
		{"unknown type", map[string]any{"type": "diaries", "content": map[string]any{"content": "c"}}, "type"},
		{"unknown top-level field", map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "colour": "red"}, "colour"},
		{"bad agent id", map[string]any{"agent_id": "no spaces", "type": "note", "content": map[string]any{"content": "c"}}, "agent_id"},
		{"missing agent id", map[string]any{"agent_id": "", "type": "note", "content": map[string]any{"content": "c"}}, "agent_id"},
		{"bad tag", map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "tags": []string{"ok", ""}}, "tags"},
		{"created_at not RFC 3339", map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "created_at": "yesterday"}, "created_at"},
		{"created_at in the future", map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "created_at": future}, "created_at"},
		{"created_at within the skew", map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "created_at": soon}, ""},
		{"malformed derived_from", map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "derived_from": []string{"nonsense"}}, "derived_from"},
		{"too many derived_from", map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "derived_from": make([]string, memory.MaxListItems+1)}, "derived_from"},
		{"too many tags", map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "tags": make([]string, memory.MaxTags+1)}, "tags"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := tt.body["agent_id"]; !ok {
				tt.body["agent_id"] = "v"
			}
			r := s.request(t, "POST", "/v1/memories", key, tt.body)
			if tt.field == "" {
				r.must(t, http.StatusCreated, nil)
				return
			}
			r.invalid(t, tt.field)
			if !strings.Contains(r.errorMessage(), strings.TrimPrefix(tt.field, "content.")) {
				t.Errorf("message %q does not name %s", r.errorMessage(), tt.field)
			}
		})
	}
	s.request(t, "POST", "/v1/memories", "", map[string]any{}).must(t, http.StatusUnauthorized, nil)
	s.request(t, "POST", "/v1/memories", key, []byte(`{"agent_id":`)).must(t, http.StatusBadRequest, nil)
}

func TestMemBatch(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "batch@example.com")

	t.Run("1000 in order with one provider call", func(t *testing.T) {
		items := make([]map[string]any, memory.MaxBatch)
		for i := range items {
			items[i] = map[string]any{"type": "notes", "content": map[string]any{"content": fmt.Sprintf("note number %d", i)}}
			if i%100 == 0 {
				items[i] = map[string]any{"type": "drive", "content": map[string]any{"drive_type": fmt.Sprintf("drive %d", i)}}
			}
		}
		calls := s.provider.calls.Load()
		var res struct{ Memories []memCreated }
		s.request(t, "POST", "/v1/memories/batch", key, map[string]any{"agent_id": "bulk", "memories": items}).must(t, http.StatusCreated, &res)
		if got := s.provider.calls.Load() - calls; got != 1 {
			t.Errorf("%d provider calls for one batch, want 1", got)
		}
		if len(res.Memories) != len(items) {
			t.Fatalf("%d results for %d items", len(res.Memories), len(items))
		}
		stored := map[string]memory.View{}
		for _, v := range s.listAll(t, key, "agent_id=bulk", 1000) {
			stored[v.ID] = v
		}
		for i, c := range res.Memories {
			v, ok := stored[c.ID]
			want := fmt.Sprintf("note number %d", i)
			if i%100 == 0 {
				want = fmt.Sprintf("drive %d", i)
			}
			if !ok || !strings.Contains(string(v.Content), want) {
				t.Fatalf("result %d (%s) is not input %d: %s", i, c.ID, i, v.Content)
			}
			if wantType := map[bool]string{true: "drive", false: "note"}[i%100 == 0]; c.Type != wantType {
				t.Errorf("result %d type %q, want %q", i, c.Type, wantType)
			}
		}
	})

	t.Run("1001 is refused naming the limit", func(t *testing.T) {
		items := make([]map[string]any, memory.MaxBatch+1)
		for i := range items {
			items[i] = map[string]any{"type": "note", "content": map[string]any{"content": "x"}}
		}
		r := s.request(t, "POST", "/v1/memories/batch", key, map[string]any{"agent_id": "over", "memories": items}).invalid(t, "memories")
		if r.details()["limit"] != float64(memory.MaxBatch) || !strings.Contains(r.errorMessage(), "1000") {
			t.Errorf("error does not name the limit: %s", r.raw)
		}
	})

	t.Run("one invalid item writes nothing", func(t *testing.T) {
		items := []map[string]any{
			{"type": "note", "content": map[string]any{"content": "fine"}},
			{"type": "belief", "content": map[string]any{"statement": "fine"}},
			{"type": "goal", "content": map[string]any{"title": "fine"}},
			{"type": "belief", "content": map[string]any{"belief_type": "fact"}},
			{"type": "note", "content": map[string]any{"content": "fine"}},
		}
		r := s.request(t, "POST", "/v1/memories/batch", key, map[string]any{"agent_id": "allornothing", "memories": items}).
			invalid(t, "memories[3].content.statement")
		if r.details()["index"] != float64(3) {
			t.Errorf("details.index = %v, want 3", r.details()["index"])
		}
		if got := s.listAll(t, key, "agent_id=allornothing&include_forgotten=true", 100); len(got) != 0 {
			t.Errorf("%d memories written by a failed batch", len(got))
		}
		var agents struct{ Agents []memory.AgentView }
		s.request(t, "GET", "/v1/agents", key, nil).must(t, http.StatusOK, &agents)
		for _, a := range agents.Agents {
			if a.AgentID == "allornothing" {
				t.Error("a failed batch created its agent")
			}
		}
	})

	t.Run("item errors name the item", func(t *testing.T) {
		ok := map[string]any{"type": "note", "content": map[string]any{"content": "fine"}}
		tests := []struct {
			item  any
			field string
		}{
			{map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "bogus": 1}, "memories[1].bogus"},
			{map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "tags": "one"}, "memories[1].tags"},
			{"not an object", "memories[1]"},
			{map[string]any{"type": "note", "content": map[string]any{"content": "c"}, "created_at": "soon"}, "memories[1].created_at"},
			{map[string]any{"type": "nope", "content": map[string]any{}}, "memories[1].type"},
		}
		for _, tt := range tests {
			r := s.request(t, "POST", "/v1/memories/batch", key, map[string]any{"agent_id": "named", "memories": []any{ok, tt.item}}).invalid(t, tt.field)
			if r.details()["index"] != float64(1) {
				t.Errorf("%s: details.index = %v", tt.field, r.details()["index"])
			}
		}
		s.request(t, "POST", "/v1/memories/batch", key, map[string]any{"agent_id": "named", "memories": []any{}}).invalid(t, "memories")
		s.request(t, "POST", "/v1/memories/batch", key, map[string]any{"memories": []any{ok}}).invalid(t, "agent_id")
	})
}

func TestMemDerivedFrom(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "refs@example.com")
	_, other := s.user(t, "refs-other@example.com")
	ep := s.create(t, key, "a", "episode", map[string]any{"objective": "o", "outcome": "x"})
	inOtherAgent := s.create(t, key, "b", "episode", map[string]any{"objective": "o", "outcome": "x"})
	ofOtherUser := s.create(t, other, "a", "episode", map[string]any{"objective": "o", "outcome": "x"})
	note := map[string]any{"content": "derived"}
	post := func(refs ...string) response {
		return s.request(t, "POST", "/v1/memories", key, map[string]any{"agent_id": "a", "type": "note", "content": note, "derived_from": refs})
	}
	post("episode:"+ep.ID).must(t, http.StatusCreated, nil)
	for name, ref := range map[string]string{
		"missing":       "episode:" + uuid.Must(uuid.NewV7()).String(),
		"other agent":   "episode:" + inOtherAgent.ID,
		"other user":    "episode:" + ofOtherUser.ID,
		"type mismatch": "belief:" + ep.ID,
	} {
		r := post("episode:"+ep.ID, ref).invalid(t, "derived_from")
		if r.details()["index"] != float64(1) {
			t.Errorf("%s: details.index = %v, want 1", name, r.details()["index"])
		}
	}
	r := s.request(t, "POST", "/v1/memories/batch", key, map[string]any{"agent_id": "a", "memories": []any{
		map[string]any{"type": "note", "content": note, "derived_from": []string{"episode:" + ep.ID}},
		map[string]any{"type": "note", "content": note, "derived_from": []string{"episode:" + inOtherAgent.ID}},
	}}).invalid(t, "memories[1].derived_from")
	if r.details()["index"] != float64(1) || r.details()["field_index"] != float64(0) {
		t.Errorf("details = %v", r.details())
	}
}
