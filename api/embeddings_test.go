package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/embed/local"
)

func TestGenerateEmbedding(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	d := s.must(http.StatusOK, "POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": "deploy the server on friday"}).data()
	if d["model"] != local.BuiltinModelName || num(d["dimensions"]) != 384 || len(floats(d["embedding"])) != 384 || num(d["tokens_used"]) <= 0 {
		t.Fatalf("generate: %v", d)
	}
	d = s.must(http.StatusOK, "POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": "deploy the server", "model": "default"}).data()
	if d["model"] != local.BuiltinModelName {
		t.Fatalf("default model: %v", d["model"])
	}
	d = s.must(http.StatusOK, "POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": "deploy the server", "model": staticModel}).data()
	if d["model"] != staticModel || num(d["dimensions"]) != 64 || len(floats(d["embedding"])) != 64 {
		t.Fatalf("static model: %v", d)
	}

	wantError(t, s.call("POST", "/v1/embeddings/generate", "", map[string]any{"text": "x"}), 401, "unauthorized")
	wantError(t, s.call("POST", "/v1/embeddings/generate", "nope", map[string]any{"text": "x"}), 401, "unauthorized")
	r := s.call("POST", "/v1/embeddings/generate", aliceKey, map[string]any{})
	wantError(t, r, 400, "invalid_request")
	if r.details()["field"] != "text" {
		t.Fatalf("missing text names %v", r.details())
	}
	wantError(t, s.call("POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": ""}), 400, "invalid_request")
	wantError(t, s.call("POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": "x", "modle": "y"}), 400, "invalid_request")
	wantError(t, s.call("POST", "/v1/embeddings/generate", aliceKey, `{"text": 5}`), 400, "invalid_request")

	r = s.call("POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": strings.Repeat("é", 32001)})
	wantError(t, r, 400, "text_too_long")
	if num(r.details()["limit"]) != 32000 || r.details()["field"] != "text" || !strings.Contains(string(r.raw), "32000") {
		t.Fatalf("text limit: %s", r.raw)
	}
	s.must(http.StatusOK, "POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": strings.Repeat("é", 32000)})

	r = s.call("POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": "x", "model": "text-embedding-3-small"})
	wantError(t, r, 400, "model_not_available")
	avail, _ := r.details()["available_models"].([]any)
	if !slices.Contains(avail, any(local.BuiltinModelName)) || !slices.Contains(avail, any(staticModel)) || slices.Contains(avail, any("text-embedding-3-small")) {
		t.Fatalf("available models: %v", avail)
	}

	s.provider.down.Store(true)
	wantError(t, s.call("POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": "x"}), 503, "provider_unavailable")
}

func TestBatchEmbeddings(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	texts := []string{"coffee in the morning", "rollback the release", "python code review", "coffee in the morning"}
	d := s.must(http.StatusOK, "POST", "/v1/embeddings/batch", aliceKey, map[string]any{"texts": texts}).data()
	embs, _ := d["embeddings"].([]any)
	if len(embs) != len(texts) || d["model"] != local.BuiltinModelName || num(d["dimensions"]) != 384 || num(d["total_tokens_used"]) <= 0 {
		t.Fatalf("batch: %v", d)
	}
	// Same order as the input: each vector is the one generate gives for
	// that text.
	for i, text := range texts {
		one := s.must(http.StatusOK, "POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": text}).data()
		if !slices.Equal(floats(embs[i]), floats(one["embedding"])) {
			t.Fatalf("embeddings[%d] is not the vector of %q", i, text)
		}
	}
	if slices.Equal(floats(embs[0]), floats(embs[1])) || !slices.Equal(floats(embs[0]), floats(embs[3])) {
		t.Fatal("vectors do not follow their texts")
	}

	r := s.call("POST", "/v1/embeddings/batch", aliceKey, map[string]any{"texts": []string{}})
	wantError(t, r, 400, "invalid_request")
	wantError(t, s.call("POST", "/v1/embeddings/batch", aliceKey, map[string]any{}), 400, "invalid_request")
	wantError(t, s.call("POST", "/v1/embeddings/batch", aliceKey, `{"texts": ["a", 3]}`), 400, "invalid_request")

	many := make([]string, 2049)
	for i := range many {
		many[i] = "t"
	}
	r = s.call("POST", "/v1/embeddings/batch", aliceKey, map[string]any{"texts": many})
	wantError(t, r, 400, "batch_too_large")
	if num(r.details()["limit"]) != 2048 || !strings.Contains(string(r.raw), "2048") {
		t.Fatalf("batch limit: %s", r.raw)
	}
	s.must(http.StatusOK, "POST", "/v1/embeddings/batch", aliceKey, map[string]any{"texts": many[:2048]})

	r = s.call("POST", "/v1/embeddings/batch", aliceKey, map[string]any{"texts": []string{"a", "b", strings.Repeat("x", 32001)}})
	wantError(t, r, 400, "text_too_long")
	if num(r.details()["index"]) != 2 || r.details()["field"] != "texts" || !strings.Contains(string(r.raw), "32000") {
		t.Fatalf("too long item: %s", r.raw)
	}
	r = s.call("POST", "/v1/embeddings/batch", aliceKey, map[string]any{"texts": []string{"a", ""}})
	if r.status != 400 || num(r.details()["index"]) != 1 {
		t.Fatalf("empty item: %s", r.raw)
	}
	wantError(t, s.call("POST", "/v1/embeddings/batch", aliceKey, map[string]any{"texts": []string{"a"}, "model": "nope"}), 400, "model_not_available")
	wantError(t, s.call("POST", "/v1/embeddings/batch", "", map[string]any{"texts": []string{"a"}}), 401, "unauthorized")
	s.provider.down.Store(true)
	wantError(t, s.call("POST", "/v1/embeddings/batch", aliceKey, map[string]any{"texts": []string{"a"}}), 503, "provider_unavailable")
}

func TestModelsCatalogue(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	d := s.must(http.StatusOK, "GET", "/v1/embeddings/models", aliceKey, nil).data()
	models, _ := d["models"].([]any)
	byName := map[string]map[string]any{}
	defaults := 0
	for _, m := range models {
		mm := m.(map[string]any)
		byName[mm["name"].(string)] = mm
		for _, f := range []string{"dimensions", "quality", "speed", "cost", "provider", "available", "default"} {
			if _, ok := mm[f]; !ok {
				t.Fatalf("model %v lacks %s", mm["name"], f)
			}
		}
		if mm["default"] == true {
			defaults++
		}
	}
	if defaults != 1 || d["default_model"] != local.BuiltinModelName {
		t.Fatalf("defaults: %d, default_model %v", defaults, d["default_model"])
	}
	small := byName["text-embedding-3-small"]
	if small == nil || small["available"] != false || num(small["dimensions"]) != 1536 || small["provider"] != "openai" {
		t.Fatalf("text-embedding-3-small: %v", small)
	}
	if byName["text-embedding-3-large"] == nil || byName["text-embedding-ada-002"] == nil {
		t.Fatalf("catalogue misses OpenAI models: %v", byName)
	}
	builtin := byName[local.BuiltinModelName]
	if builtin["available"] != true || builtin["default"] != true || num(builtin["dimensions"]) != 384 || builtin["provider"] != "local" {
		t.Fatalf("built-in: %v", builtin)
	}
	if byName[staticModel]["available"] != true || num(byName[staticModel]["dimensions"]) != 64 {
		t.Fatalf("static: %v", byName[staticModel])
	}
	wantError(t, s.call("GET", "/v1/embeddings/models", "", nil), 401, "unauthorized")
}

func TestReembedMemory(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	ids := s.seed(alice, "claire", 3)
	d := s.must(http.StatusOK, "POST", "/v1/embeddings/reembed", aliceKey, map[string]any{
		"agent_id": "claire", "memory_type": "note", "memory_id": ids[0],
	}).data()
	if d["memory_type"] != "note" || d["memory_id"] != ids[0] || d["previous_model"] != local.BuiltinModelName ||
		d["new_model"] != local.BuiltinModelName || d["reembedded_at"] == nil {
		t.Fatalf("reembed: %v", d)
	}
	// The plural name is accepted too.
	s.must(http.StatusOK, "POST", "/v1/embeddings/reembed", aliceKey, map[string]any{"agent_id": "claire", "memory_type": "notes", "memory_id": ids[1]})

	// A memory written while the provider was down has no vector: its
	// re-embedding goes from none to the agent's model.
	s.provider.down.Store(true)
	created, err := s.memCmds.Create(t.Context(), metaFor(alice), "claire", commandsNote("written during an outage"))
	if err != nil {
		t.Fatal(err)
	}
	r := s.call("POST", "/v1/embeddings/reembed", aliceKey, map[string]any{"agent_id": "claire", "memory_type": "note", "memory_id": created.ID})
	wantError(t, r, 503, "provider_unavailable")
	s.provider.down.Store(false)
	d = s.must(http.StatusOK, "POST", "/v1/embeddings/reembed", aliceKey, map[string]any{"agent_id": "claire", "memory_type": "note", "memory_id": created.ID}).data()
	if d["previous_model"] != nil || d["new_model"] != local.BuiltinModelName {
		t.Fatalf("from pending: %v", d)
	}
	v, ok, err := s.memories.Memory(t.Context(), alice, created.ID)
	if err != nil || !ok || v.Embedding.Status != "embedded" {
		t.Fatalf("after reembed the memory is %+v (%v)", v.Embedding, err)
	}
	d = s.must(http.StatusOK, "POST", "/v1/embeddings/reembed", aliceKey, map[string]any{"agent_id": "claire", "memory_type": "note", "memory_id": created.ID}).data()
	if d["previous_model"] != local.BuiltinModelName {
		t.Fatalf("second reembed: %v", d)
	}

	for _, c := range []struct {
		body   map[string]any
		status int
		code   string
	}{
		{map[string]any{"agent_id": "claire", "memory_type": "belief", "memory_id": ids[0]}, 404, "not_found"},      // wrong type
		{map[string]any{"agent_id": "claire", "memory_type": "note", "memory_id": "nope"}, 404, "not_found"},        // no such memory
		{map[string]any{"agent_id": "other", "memory_type": "note", "memory_id": ids[0]}, 404, "not_found"},         // no such agent
		{map[string]any{"agent_id": "claire", "memory_type": "drive", "memory_id": ids[0]}, 400, "invalid_request"}, // not searchable
		{map[string]any{"agent_id": "claire", "memory_type": "thought", "memory_id": ids[0]}, 400, "invalid_request"},
		{map[string]any{"agent_id": "claire", "memory_type": "note"}, 400, "invalid_request"},
		{map[string]any{"memory_type": "note", "memory_id": ids[0]}, 400, "invalid_request"},
	} {
		wantError(t, s.call("POST", "/v1/embeddings/reembed", aliceKey, c.body), c.status, c.code)
	}
	if _, err := s.memCmds.Forget(t.Context(), metaFor(alice), ids[2], nil); err != nil {
		t.Fatal(err)
	}
	wantError(t, s.call("POST", "/v1/embeddings/reembed", aliceKey, map[string]any{"agent_id": "claire", "memory_type": "note", "memory_id": ids[2]}), 409, "memory_forgotten")
	wantError(t, s.call("POST", "/v1/embeddings/reembed", "", map[string]any{"agent_id": "claire", "memory_type": "note", "memory_id": ids[0]}), 401, "unauthorized")
}

func TestSimilarByVector(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	s.seed(alice, "claire", 5)
	belief, err := s.memCmds.Create(t.Context(), metaFor(alice), "claire", commandsBelief("alice prefers tea in the evening"))
	if err != nil {
		t.Fatal(err)
	}
	q := floats(s.must(http.StatusOK, "POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": "alice prefers tea in the evening"}).data()["embedding"])

	results := s.similar(aliceKey, map[string]any{"agent_id": "claire", "embedding": q})
	if len(results) != 6 {
		t.Fatalf("default limit and types: %d results", len(results))
	}
	top := results[0]
	content, _ := top["content"].(map[string]any)
	if top["id"] != belief.ID || top["type"] != "belief" || content["statement"] != "alice prefers tea in the evening" {
		t.Fatalf("top hit: %v", top)
	}
	if score := top["score"].(float64); score < 0.99 || score > 1 {
		t.Fatalf("identical text scores %v", score)
	}
	for i := 1; i < len(results); i++ {
		if results[i]["score"].(float64) > results[i-1]["score"].(float64) {
			t.Fatal("results are not ordered by score")
		}
	}
	if got := s.similar(aliceKey, map[string]any{"agent_id": "claire", "embedding": q, "limit": 2}); len(got) != 2 {
		t.Fatalf("limit 2: %d", len(got))
	}
	if got := s.similar(aliceKey, map[string]any{"agent_id": "claire", "embedding": q, "min_score": 0.99}); len(got) != 1 {
		t.Fatalf("min_score 0.99: %d", len(got))
	}
	if got := s.similar(aliceKey, map[string]any{"agent_id": "claire", "embedding": q, "types": []string{"notes"}}); len(got) != 5 || got[0]["type"] != "note" {
		t.Fatalf("types notes: %v", got)
	}
	if got := s.similar(aliceKey, map[string]any{"agent_id": "claire", "embedding": q, "types": []string{"belief"}}); len(got) != 1 {
		t.Fatalf("types belief: %v", got)
	}

	short := q[:64]
	r := s.call("POST", "/v1/embeddings/similar", aliceKey, map[string]any{"agent_id": "claire", "embedding": short})
	wantError(t, r, 400, "invalid_request")
	if num(r.details()["dimensions"]) != 64 || num(r.details()["expected_dimensions"]) != 384 || !strings.Contains(string(r.raw), "64") || !strings.Contains(string(r.raw), "384") {
		t.Fatalf("dimension error: %s", r.raw)
	}
	for _, body := range []map[string]any{
		{"agent_id": "claire", "embedding": q, "limit": 0},
		{"agent_id": "claire", "embedding": q, "limit": 101},
		{"agent_id": "claire", "embedding": q, "min_score": 1.5},
		{"agent_id": "claire", "embedding": q, "min_score": -0.1},
		{"agent_id": "claire", "embedding": q, "types": []string{"drives"}},
		{"agent_id": "claire", "embedding": q, "types": []string{"thoughts"}},
		{"agent_id": "claire"},
		{"agent_id": "claire", "embedding": make([]float32, 384)},
		{"embedding": q},
	} {
		wantError(t, s.call("POST", "/v1/embeddings/similar", aliceKey, body), 400, "invalid_request")
	}
	s.must(http.StatusOK, "POST", "/v1/embeddings/similar", aliceKey, map[string]any{"agent_id": "claire", "embedding": q, "limit": 100})
	wantError(t, s.call("POST", "/v1/embeddings/similar", aliceKey, map[string]any{"agent_id": "nobody", "embedding": q}), 404, "not_found")
	wantError(t, s.call("POST", "/v1/embeddings/similar", "", map[string]any{"agent_id": "claire", "embedding": q}), 401, "unauthorized")
}

// similar posts to /embeddings/similar and returns the results.
func (s *stack) similar(bearer string, body map[string]any) []map[string]any {
	s.t.Helper()
	d := s.must(http.StatusOK, "POST", "/v1/embeddings/similar", bearer, body).data()
	raw, _ := d["results"].([]any)
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i], _ = r.(map[string]any)
	}
	return out
}

func TestOtherUsersResourcesAreNotFound(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	ids := s.seed(alice, "claire", 3)
	s.seed(bob, "bobs-agent", 1)
	job := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire"}).data()["job_id"].(string)
	q := floats(s.must(http.StatusOK, "POST", "/v1/embeddings/generate", bobKey, map[string]any{"text": "x"}).data()["embedding"])

	// Bob names Alice's agent: it does not exist for him.
	wantError(t, s.call("POST", "/v1/embeddings/similar", bobKey, map[string]any{"agent_id": "claire", "embedding": q}), 404, "not_found")
	wantError(t, s.call("POST", "/v1/embeddings/reembed", bobKey, map[string]any{"agent_id": "claire", "memory_type": "note", "memory_id": ids[0]}), 404, "not_found")
	wantError(t, s.call("POST", "/v1/embeddings/bulk-reembed", bobKey, map[string]any{"agent_id": "claire"}), 404, "not_found")
	// Bob names his own agent and Alice's memory.
	wantError(t, s.call("POST", "/v1/embeddings/reembed", bobKey, map[string]any{"agent_id": "bobs-agent", "memory_type": "note", "memory_id": ids[0]}), 404, "not_found")
	// Alice's job.
	wantError(t, s.call("GET", "/v1/embeddings/jobs/"+job, bobKey, nil), 404, "not_found")
	wantError(t, s.call("POST", "/v1/embeddings/jobs/"+job+"/cancel", bobKey, nil), 404, "not_found")
	if got := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+job, aliceKey, nil).data()["status"]; got != "queued" {
		t.Fatalf("bob's attempts touched alice's job: %v", got)
	}
	// Same agent id under two users never mixes.
	s.seed(bob, "claire", 2)
	if got := s.similar(bobKey, map[string]any{"agent_id": "claire", "embedding": q}); len(got) != 2 {
		t.Fatalf("bob's claire sees %d memories", len(got))
	}
}

func commandsNote(text string) commandsInput {
	raw, _ := json.Marshal(map[string]any{"content": text})
	return commandsInput{Type: "note", Content: raw}
}

func commandsBelief(text string) commandsInput {
	raw, _ := json.Marshal(map[string]any{"statement": text})
	return commandsInput{Type: "belief", Content: raw}
}
