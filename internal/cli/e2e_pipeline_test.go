package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/engram-memory/engram/internal/testserver"
)

// The real binary with --chat-model runs processing against an
// OpenAI-compatible chat endpoint (here a fake on loopback, reached with
// the embeddings' base URL and key settings); the suggestion it proposes
// is accepted, and after a restart the processing state and suggestions
// are as before.
func TestProcessingWithChatModelEndToEnd(t *testing.T) {
	t.Parallel()
	ids := regexp.MustCompile(`(?m)^\[([^\]]+)\]`)
	var sawKey atomic.Bool
	chat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawKey.Store(r.Header.Get("Authorization") == "Bearer sk-e2e")
		var req struct {
			Model    string                     `json:"model"`
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var cited []string
		for _, m := range ids.FindAllStringSubmatch(req.Messages[1].Content, -1) {
			cited = append(cited, m[1])
		}
		src, _ := json.Marshal(cited)
		answer := `[{"content":{"statement":"Deploys need their migrations first","belief_type":"causal"},"confidence":0.8,"source_ids":` + string(src) + `}]`
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer}}}})
	}))
	defer chat.Close()

	dataDir := t.TempDir()
	args := []string{"--chat-model", "test-chat", "--openai-base-url", chat.URL + "/v1"}
	env := []string{"OPENAI_API_KEY=sk-e2e"}
	p := startServer(t, dataDir, env, args...)
	key := testserver.Register(t, p.BaseURL, dataDir, "pipeline@example.com")
	for _, objective := range []string{"deploy api", "deploy web", "deploy worker"} {
		if status, err := call(t, "POST", p.BaseURL+"/v1/memories", key, map[string]any{"agent_id": "ops", "type": "episode",
			"content": map[string]any{"objective": objective, "outcome": "failed: migration missing"}}, nil); err != nil || status != 201 {
			t.Fatalf("create: %d %v", status, err)
		}
	}
	var run struct {
		Passes []struct {
			Skipped     bool     `json:"skipped"`
			Model       string   `json:"model"`
			Suggestions []string `json:"suggestions"`
			Errors      []string `json:"errors"`
		} `json:"passes"`
	}
	if _, err := call(t, "POST", p.BaseURL+"/v1/agents/ops/process", key, map[string]any{"force": true, "transition": "episode_to_belief"}, &run); err != nil {
		t.Fatal(err)
	}
	if len(run.Passes) != 1 || run.Passes[0].Skipped || run.Passes[0].Model != "test-chat" || len(run.Passes[0].Suggestions) != 1 || !sawKey.Load() {
		t.Fatalf("pass: %+v (key sent: %v)", run.Passes, sawKey.Load())
	}
	sid := run.Passes[0].Suggestions[0]
	var acc struct {
		Memory struct{ Type, ID string } `json:"memory"`
	}
	if _, err := call(t, "POST", p.BaseURL+"/v1/suggestions/"+sid+"/accept", key, nil, &acc); err != nil || acc.Memory.Type != "belief" {
		t.Fatalf("accept: %+v %v", acc, err)
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	p = startServer(t, dataDir, env, args...)
	var sg struct {
		Status     string `json:"status"`
		PromotedTo string `json:"promoted_to"`
	}
	if _, err := call(t, "GET", p.BaseURL+"/v1/suggestions/"+sid, key, nil, &sg); err != nil || sg.Status != "promoted" || sg.PromotedTo != "belief:"+acc.Memory.ID {
		t.Fatalf("after restart: %+v %v", sg, err)
	}
	var view struct {
		Runs []json.RawMessage `json:"runs"`
	}
	if _, err := call(t, "GET", p.BaseURL+"/v1/agents/ops/processing", key, nil, &view); err != nil || len(view.Runs) != 1 {
		t.Fatalf("processing after restart: %d runs, %v", len(view.Runs), err)
	}
	var rep struct {
		OverallLevel string `json:"overall_level"`
	}
	if _, err := call(t, "GET", p.BaseURL+"/v1/agents/ops/anxiety", key, nil, &rep); err != nil || !strings.Contains("Calm Aware Elevated High Critical", rep.OverallLevel) || rep.OverallLevel == "" {
		t.Fatalf("anxiety: %+v %v", rep, err)
	}
}
