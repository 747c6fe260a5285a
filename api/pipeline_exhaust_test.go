package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/llm"
	"github.com/engram-memory/engram/projections/query"
)

func (s *stack) exhaust(t testing.TB, bearer, agent string, body any) commands.ExhaustResult {
	t.Helper()
	var out commands.ExhaustResult
	s.request(t, "POST", "/v1/agents/"+agent+"/process/exhaust", bearer, body).must(t, http.StatusOK, &out)
	return out
}

// cycleTrace is one line per cycle: "intensity sources/promotions/suggestions/errors".
func cycleTrace(r commands.ExhaustResult) string {
	var b strings.Builder
	for _, c := range r.Cycles {
		fmt.Fprintf(&b, "%d %s %d/%d/%d/%d", c.Cycle, c.Intensity, c.Sources, c.Promotions, c.Suggestions, c.Errors)
		if c.InferenceBlocked {
			b.WriteString(" inference_blocked")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Golden exhaust runs with the rule-based extractor. Auto-promote (the
// default) writes the raw entries' memories in the first light cycle,
// light converges after two empty cycles, and medium ends the run: its
// episode transitions have a source but no model (inference_unavailable).
// Without auto-promote nothing becomes an episode, so every intensity
// converges in turn.
func TestExhaustGoldenWithRules(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	head := s.head(t)
	r := s.exhaust(t, aliceKey, "claire", nil)
	if got, want := cycleTrace(r), "1 light 8/3/0/0\n2 light 0/0/0/0\n3 light 0/0/0/0\n4 medium 0/0/0/0 inference_blocked\n"; got != want {
		t.Fatalf("cycles:\n%swant\n%s", got, want)
	}
	if r.CyclesCompleted != 4 || r.TotalPromotions != 3 || !r.Converged || r.ConvergenceReason != processing.ReasonInferenceUnavailable || !r.AutoPromote {
		t.Fatalf("result: %+v", r)
	}
	if got := s.listAll(t, aliceKey, "agent_id=claire&type=episode", 100); len(got) != 1 {
		t.Errorf("auto-promoted episodes: %d", len(got))
	}
	// Every pass is recorded as an event, like a process request's.
	var view query.ProcessingView
	s.request(t, "GET", "/v1/agents/claire/processing", aliceKey, nil).must(t, http.StatusOK, &view)
	if len(view.Runs) != 2+2+2+6 || s.head(t) <= head {
		t.Errorf("recorded runs: %d", len(view.Runs))
	}
	if cfg := view.Config; cfg.AutoPromote {
		t.Error("exhaust's auto_promote changed the stored configuration")
	}

	s.raws(t, aliceKey, "bea", goldenRaw...)
	r = s.exhaust(t, aliceKey, "bea", map[string]any{"auto_promote": false})
	want := "1 light 8/0/3/0\n2 light 0/0/0/0\n3 light 0/0/0/0\n4 medium 0/0/0/0\n5 medium 0/0/0/0\n6 heavy 0/0/0/0\n7 heavy 0/0/0/0\n"
	if got := cycleTrace(r); got != want || r.TotalSuggestions != 3 || r.TotalPromotions != 0 || !r.Converged || r.ConvergenceReason != processing.ReasonConverged {
		t.Fatalf("no auto-promote: %+v\n%s", r, cycleTrace(r))
	}
	if sg := s.suggestions(t, aliceKey, "bea", "?status=pending"); len(sg) != 3 {
		t.Errorf("pending suggestions: %d", len(sg))
	}

	// The cycle budget ends a run before it converges.
	s.raws(t, aliceKey, "cy", goldenRaw...)
	r = s.exhaust(t, aliceKey, "cy", map[string]any{"max_cycles": 2, "auto_promote": false})
	if r.CyclesCompleted != 2 || r.Converged || r.ConvergenceReason != processing.ReasonMaxCycles {
		t.Errorf("max_cycles 2: %+v", r)
	}
}

// transitionChat is an OpenAI-compatible chat endpoint that answers by
// the transition its system prompt names ("…episodes into beliefs…").
type transitionChat struct {
	mu      sync.Mutex
	answers map[string][]string // target type → answers, the last repeats
}

var promptTarget = regexp.MustCompile(`into (\w+?)s for`)

func (c *transitionChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	target := promptTarget.FindStringSubmatch(req.Messages[0].Content)
	var ids []string
	for _, m := range promptIDs.FindAllStringSubmatch(req.Messages[1].Content, -1) {
		ids = append(ids, m[1])
	}
	answer := "[]"
	c.mu.Lock()
	if target != nil && len(c.answers[target[1]]) > 0 {
		list := c.answers[target[1]]
		answer = list[0]
		if len(list) > 1 {
			c.answers[target[1]] = list[1:]
		}
	}
	c.mu.Unlock()
	answer = strings.ReplaceAll(answer, "$IDS3", quoted(ids[:min(3, len(ids))]))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "test-chat",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer}}}})
}

// An exhaust run with a chat model over HTTP: a malformed answer is an
// error-only cycle (it resets the convergence count and leaves the
// sources), the retry promotes a belief, heavy offers that belief to
// belief_to_value, and two empty heavy cycles converge.
func TestExhaustWithChatModel(t *testing.T) {
	t.Parallel()
	chat := &transitionChat{answers: map[string][]string{
		"belief": {`[{"content":{"statement":"Deploys fail without migrations"`, // malformed
			`[{"content":{"statement":"Deploys fail without migrations","belief_type":"causal"},"confidence":0.8,"source_ids":$IDS3}]`,
			`[]`},
	}}
	srv := httptest.NewServer(chat)
	t.Cleanup(srv.Close)
	proc, err := llm.New(llm.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "test-chat", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, stackOptions{fixedAuth: true, processor: proc})
	for i := range 4 {
		s.create(t, aliceKey, "claire", "episode", map[string]any{"objective": "deploy " + itoa(i), "outcome": "migration missing"})
	}
	r := s.exhaust(t, aliceKey, "claire", nil)
	want := "1 light 0/0/0/0\n2 light 0/0/0/0\n" +
		"3 medium 16/0/0/1\n" + // belief malformed; goal, relationship, drive answer [] and consume
		"4 medium 4/1/0/0\n" + // belief retried: promoted
		"5 medium 0/0/0/0\n6 medium 0/0/0/0\n" +
		"7 heavy 1/0/0/0\n" + // belief_to_value: the new belief, answered []
		"8 heavy 0/0/0/0\n"
	if got := cycleTrace(r); got != want {
		t.Fatalf("cycles:\n%swant\n%s", got, want)
	}
	if r.TotalPromotions != 1 || !r.Converged || r.ConvergenceReason != processing.ReasonConverged {
		t.Errorf("result: %+v", r)
	}
	if beliefs := s.listAll(t, aliceKey, "agent_id=claire&type=belief", 100); len(beliefs) != 1 {
		t.Errorf("beliefs: %d", len(beliefs))
	}
}

func TestExhaustBadInputAndIsolation(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"max_cycles": 0}, "max_cycles"},
		{map[string]any{"max_cycles": -1}, "max_cycles"},
		{map[string]any{"max_cycles": 101}, "max_cycles"},
		{map[string]any{"max_cycles": "3"}, ""},
		{map[string]any{"cycles": 3}, ""},
		{`{"max_cycles": 3`, ""},
	} {
		r := s.request(t, "POST", "/v1/agents/claire/process/exhaust", aliceKey, c.body)
		wantError(t, r, http.StatusBadRequest, "invalid_request")
		if c.field != "" && !strings.Contains(string(r.raw), c.field) {
			t.Errorf("%v: error does not name %s: %s", c.body, c.field, r.raw)
		}
	}
	head := s.head(t)
	wantError(t, s.request(t, "POST", "/v1/agents/claire/process/exhaust", bobKey, nil), http.StatusNotFound, "not_found")
	wantError(t, s.request(t, "POST", "/v1/agents/nobody/process/exhaust", aliceKey, nil), http.StatusNotFound, "not_found")
	wantError(t, s.request(t, "POST", "/v1/agents/claire/process/exhaust", "", nil), http.StatusUnauthorized, "unauthorized")
	if s.head(t) != head {
		t.Error("a refused exhaust wrote")
	}
}

// refuser is the event log with the appends to one stream refused, once
// armed, after the first few: storage that fills up in the middle of a
// run, say.
type refuser struct {
	domain.EventStore

	mu     sync.Mutex
	stream string
	let    int   // appends still let through
	err    error // the refusal after them
}

func (f *refuser) arm(stream string, let int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stream, f.let, f.err = stream, let, err
}

func (f *refuser) refuse(streams ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stream == "" || !slices.Contains(streams, f.stream) {
		return nil
	}
	if f.let > 0 {
		f.let--
		return nil
	}
	return f.err
}

func (f *refuser) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	if err := f.refuse(stream); err != nil {
		return domain.AppendResult{}, err
	}
	return f.EventStore.Append(ctx, stream, expected, events)
}

func (f *refuser) AppendStreams(ctx context.Context, parts []domain.StreamAppend) ([]domain.AppendResult, error) {
	streams := make([]string, len(parts))
	for i, p := range parts {
		streams[i] = p.Stream
	}
	if err := f.refuse(streams...); err != nil {
		return nil, err
	}
	return f.EventStore.AppendStreams(ctx, parts)
}

// An exhaust run whose cycle after the first fails answers with what it
// stored — 200, the cycles done, converged false, convergence_reason
// cycle_failed and the failing cycle's error in the failure envelope's
// shape (an internal error as the envelope shows one: no detail) — not
// an error that would say it stored nothing. A first cycle that fails
// stored nothing, and the run answers its error.
func TestExhaustAnswersTheCyclesStoredBeforeACycleFailed(t *testing.T) {
	t.Parallel()
	log := &refuser{}
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, appends: func(l domain.EventStore) domain.EventStore {
		log.EventStore = l
		return log
	}})
	full := domain.Errorf(domain.KindStorageFull, "the server's storage is full, so nothing of this request was stored; send it again once space is freed (GET /readyz says when)")
	full.Err = domain.ErrStorageFull
	for _, c := range []struct {
		name string
		// stored is how many cycles append before the refusal.
		stored int
		err    error
		// code and message are the failure's.
		code, message string
	}{
		{"storage full in the first cycle", 0, full, "storage_full", "storage is full"},
		{"storage full in the second cycle", 1, full, "storage_full", "storage is full"},
		{"an internal error in the third cycle", 2, errors.New("sqlite: disk I/O error on /srv/engram/engram.db"), "internal", "internal error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent := fmt.Sprintf("failing-%d", c.stored)
			s.raws(t, aliceKey, agent, goldenRaw...)
			log.arm(processing.Stream(alice, agent), c.stored, c.err)
			defer log.arm("", 0, nil)
			got := s.request(t, "POST", "/v1/agents/"+agent+"/process/exhaust", aliceKey, map[string]any{"max_cycles": 5})
			if c.stored == 0 {
				wantError(t, got, http.StatusInsufficientStorage, c.code)
				if held := s.promoted(t, agent); held != 0 {
					t.Fatalf("the refused run left %d memories", held)
				}
				return
			}
			var out struct {
				commands.ExhaustResult
				Error *struct {
					Code      string         `json:"code"`
					Message   string         `json:"message"`
					RequestID string         `json:"request_id"`
					Details   map[string]any `json:"details"`
				} `json:"error"`
			}
			got.must(t, http.StatusOK, &out)
			if out.CyclesCompleted != c.stored || len(out.Cycles) != c.stored || out.Converged || out.ConvergenceReason != processing.ReasonCycleFailed {
				t.Fatalf("exhaust answered %s; want its %d stored cycles, not converged, reason cycle_failed", got.raw, c.stored)
			}
			if out.Error == nil || out.Error.Code != c.code || !strings.Contains(out.Error.Message, c.message) || out.Error.RequestID == "" {
				t.Fatalf("exhaust answered %s; want the failure %s (%q) with the request id", got.raw, c.code, c.message)
			}
			if strings.Contains(string(got.raw), "disk I/O") {
				t.Fatalf("an internal error's detail reached the client: %s", got.raw)
			}
			if held := s.promoted(t, agent); out.TotalPromotions == 0 || held != out.TotalPromotions {
				t.Fatalf("the run promoted %d memories; the agent holds %d", out.TotalPromotions, held)
			}
		})
	}
}
