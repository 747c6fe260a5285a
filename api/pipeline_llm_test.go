package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/llm"
	"github.com/engram-memory/engram/projections/query"
)

// scriptedChat is an OpenAI-compatible chat endpoint on loopback whose
// answer a test sets: answer gets the source ids of the prompt.
type scriptedChat struct {
	mu     sync.Mutex
	answer func(ids []string) string
	delay  time.Duration
	calls  int
}

var promptIDs = regexp.MustCompile(`(?m)^\[([^\]]+)\]`)

func (c *scriptedChat) set(delay time.Duration, answer func(ids []string) string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delay, c.answer = delay, answer
}

func (c *scriptedChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var ids []string
	for _, m := range promptIDs.FindAllStringSubmatch(req.Messages[1].Content, -1) {
		ids = append(ids, m[1])
	}
	c.mu.Lock()
	c.calls++
	delay, answer := c.delay, c.answer
	c.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "test-chat",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer(ids)}}}})
}

func newChatStack(t *testing.T) (*stack, *scriptedChat) {
	chat := &scriptedChat{}
	srv := httptest.NewServer(chat)
	t.Cleanup(srv.Close)
	proc, err := llm.New(llm.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "test-chat", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return newStack(t, stackOptions{fixedAuth: true, processor: proc}), chat
}

func quoted(ids []string) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

func (s *stack) unprocessed(t testing.TB, agent string, tr processing.Transition) int {
	t.Helper()
	var view query.ProcessingView
	s.request(t, "GET", "/v1/agents/"+agent+"/processing", aliceKey, nil).must(t, http.StatusOK, &view)
	for _, trig := range view.Triggers {
		if trig.Transition == tr {
			return trig.Unprocessed
		}
	}
	t.Fatalf("no trigger for %s", tr)
	return 0
}

// Golden runs of episode_to_belief with a chat model over HTTP: valid
// answers become suggestions (gated), malformed answers and timeouts are
// recorded errors that leave the sources for the next pass, and a
// proposal already pending is deduplicated.
func TestProcessWithChatModel(t *testing.T) {
	// Not parallel: it bounds a wall-clock time, which tests beside it on
	// the same two cores would stretch (docs/testing.md#keeping-the-suite-fast).
	s, chat := newChatStack(t)
	for i := range 4 {
		s.create(t, aliceKey, "claire", "episode", map[string]any{"objective": "deploy " + itoa(i), "outcome": "migration missing", "lessons": []string{}})
	}
	belief := func(ids []string) string {
		return `[{"content":{"statement":"Deploys fail without migrations","belief_type":"causal"},"confidence":0.8,"source_ids":` + quoted(ids[:3]) + `}`
	}
	run := func() processing.Pass {
		t.Helper()
		passes := s.process(t, aliceKey, "claire", map[string]any{"force": true, "transition": "episode_to_belief"})
		if len(passes) != 1 || passes[0].Skipped || passes[0].Model != "test-chat" {
			t.Fatalf("passes: %+v", passes)
		}
		return passes[0]
	}

	// Malformed JSON: an error, no suggestion, sources left.
	chat.set(0, func([]string) string { return `[{"content": {"statement": "Deploys fail` })
	p := run()
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0], "malformed processor output") || len(p.Suggestions) != 0 || len(p.Consumed) != 0 {
		t.Fatalf("malformed: %+v", p)
	}
	// Timeout: an error, and the request still answers.
	chat.set(2*time.Second, func(ids []string) string { return belief(ids) + "]" })
	start := time.Now()
	p = run()
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0], "chat model unavailable") || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("timeout: %+v after %v", p, time.Since(start))
	}
	if n := s.unprocessed(t, "claire", processing.EpisodeToBelief); n != 4 {
		t.Fatalf("after failures %d unprocessed, want 4", n)
	}
	// One valid item, one broken: the valid one is proposed, the sources stay.
	chat.set(0, func(ids []string) string { return belief(ids) + `,{"content":{},"source_ids":["x"]}]` })
	p = run()
	if len(p.Suggestions) != 1 || len(p.Errors) != 1 || len(p.Consumed) != 0 {
		t.Fatalf("partial: %+v", p)
	}
	// The same answer again: the pending proposal is deduplicated; an item
	// below the promotion gate (2 sources) is held; the sources are consumed.
	chat.set(0, func(ids []string) string {
		return belief(ids) + `,{"content":{"statement":"Rollbacks are cheap"},"confidence":0.9,"source_ids":` + quoted(ids[:2]) + `}]`
	})
	p = run()
	if len(p.Suggestions) != 0 || p.Deduplicated != 1 || p.GateBlocked != 1 || len(p.GateDetails) != 1 || len(p.Consumed) != 4 || len(p.Errors) != 0 {
		t.Fatalf("dedup and gate: %+v", p)
	}
	if n := s.unprocessed(t, "claire", processing.EpisodeToBelief); n != 0 {
		t.Errorf("after a clean pass %d unprocessed", n)
	}
	// Other transitions still see the episodes: consumption is per transition.
	if n := s.unprocessed(t, "claire", processing.EpisodeToGoal); n != 4 {
		t.Errorf("episode_to_goal sees %d", n)
	}
	if sg := s.suggestions(t, aliceKey, "claire", "?status=pending"); len(sg) != 1 || len(sg[0].Sources) != 3 || !strings.HasPrefix(sg[0].Sources[0], "episode:") {
		t.Errorf("suggestions: %+v", sg)
	}
}

// With a model, values come from beliefs; auto-promote writes them as
// memories derived from the beliefs, with no suggestion.
func TestChatAutoPromotesValues(t *testing.T) {
	t.Parallel()
	s, chat := newChatStack(t)
	var beliefIDs []string
	for i := range 5 {
		beliefIDs = append(beliefIDs, s.create(t, aliceKey, "claire", "belief", map[string]any{"statement": "tests matter " + itoa(i)}).ID)
	}
	chat.set(0, func(ids []string) string {
		return `[{"content":{"name":"quality","statement":"Ship tested code","priority":80},"source_ids":` + quoted(ids) + `},` +
			`{"content":{"name":"noise","statement":"Value: ship the","priority":10},"source_ids":` + quoted(ids) + `}]`
	})
	// The default gates want protected beliefs: the value is held.
	p := s.process(t, aliceKey, "claire", map[string]any{"force": true, "transition": "belief_to_value"})[0]
	if p.GateBlocked != 2 || len(p.Suggestions) != 0 || len(p.Consumed) != 0 {
		t.Fatalf("unprotected beliefs: %+v", p)
	}
	for _, id := range beliefIDs {
		if _, err := s.memCmds.Protect(context.Background(), metaFor(alice), id, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.request(t, "PATCH", "/v1/agents/claire/processing", aliceKey, map[string]any{"auto_promote": true}).must(t, http.StatusOK, nil)
	p = s.process(t, aliceKey, "claire", map[string]any{"force": true, "transition": "belief_to_value"})[0]
	if len(p.Created) != 1 || len(p.Suggestions) != 1 || !strings.HasPrefix(p.Created[0], "value:") || !p.AutoPromote {
		t.Fatalf("pass: %+v", p)
	}
	// The value that fails the lint rules waits as a suggestion instead.
	if sg := s.suggestions(t, aliceKey, "claire", "?status=pending"); len(sg) != 1 || !strings.HasPrefix(sg[0].Reason, "lint_failed: ") {
		t.Errorf("lint redirect: %+v", sg)
	}
	v := s.get(t, aliceKey, strings.TrimPrefix(p.Created[0], "value:"))
	if len(v.DerivedFrom) != 5 || !strings.Contains(string(v.Content), `"source_type":"processing"`) {
		t.Errorf("value: %+v %s", v.DerivedFrom, v.Content)
	}
	for _, id := range beliefIDs {
		if !strings.Contains(strings.Join(v.DerivedFrom, ","), "belief:"+id) {
			t.Errorf("value not derived from belief %s: %v", id, v.DerivedFrom)
		}
	}
}
