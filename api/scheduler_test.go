package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/llm"
	"github.com/engram-memory/engram/internal/workers"
	"github.com/engram-memory/engram/projections/query"
)

func (s *stack) scheduler(t testing.TB, concurrency int, ticks <-chan time.Time) *workers.Scheduler {
	t.Helper()
	sched, err := workers.NewScheduler(workers.SchedulerConfig{Pipeline: s.pipeline, Agents: s.memories, Interval: time.Hour, Concurrency: concurrency, Ticks: ticks, Logger: s.logger})
	if err != nil {
		t.Fatal(err)
	}
	return sched
}

// The scheduler runs the transitions whose triggers fire, by the injected
// clock: young raw entries below the quantity threshold wait; a day later
// the time trigger fires and they become suggestions. An idle sweep
// appends nothing; a stack in maintenance and a layer at its daily cap
// are left alone.
func TestSchedulerRunsDueTransitions(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	s.raws(t, bobKey, "bobs", goldenRaw...)
	s.settings(t, bobKey, "bobs", map[string]any{"stack_state": "maintenance"})
	s.raws(t, aliceKey, "capped", goldenRaw...)
	s.request(t, "PATCH", "/v1/agents/capped/processing", aliceKey, map[string]any{"layers": map[string]any{
		"raw_to_episode": map[string]any{"max_passes_per_day": 0}, "raw_to_note": map[string]any{"max_passes_per_day": 0}}}).must(t, http.StatusOK, nil)
	sched := s.scheduler(t, 2, nil)
	ctx := context.Background()

	// Nothing is due yet: the first sweep only records each stack's
	// anxiety level; the second appends nothing.
	if st := sched.Sweep(ctx); st.Agents != 3 || st.Passes != 0 || st.Maintenance != 1 || st.Errors != 0 {
		t.Fatalf("first sweep: %+v", st)
	}
	head := s.head(t)
	if st := sched.Sweep(ctx); st.Passes != 0 || s.head(t) != head {
		t.Fatalf("an idle sweep wrote: %+v, head %d → %d", st, head, s.head(t))
	}
	if len(s.suggestions(t, aliceKey, "claire", "")) != 0 {
		t.Fatal("suggestions before any trigger fired")
	}

	s.clock.Advance(25 * time.Hour)
	st := sched.Sweep(ctx)
	if st.Passes != 2 || st.Maintenance != 1 || st.Errors != 0 {
		t.Fatalf("sweep a day later: %+v", st)
	}
	if got := len(s.suggestions(t, aliceKey, "claire", "?status=pending")); got != 3 {
		t.Errorf("claire: %d pending suggestions, want 3", got)
	}
	if got := len(s.suggestions(t, bobKey, "bobs", "")); got != 0 {
		t.Errorf("a stack in maintenance was processed: %d suggestions", got)
	}
	var capped query.ProcessingView
	s.request(t, "GET", "/v1/agents/capped/processing", aliceKey, nil).must(t, http.StatusOK, &capped)
	if len(capped.Runs) != 0 || capped.Raw.Unprocessed != 4 {
		t.Errorf("a capped layer ran or recorded a skip: runs %d, raw %+v", len(capped.Runs), capped.Raw)
	}
	var view query.ProcessingView
	s.request(t, "GET", "/v1/agents/claire/processing", aliceKey, nil).must(t, http.StatusOK, &view)
	if len(view.Runs) != 2 || view.Runs[0].Forced {
		t.Errorf("claire's recorded runs: %+v", view.Runs)
	}
	// Processed sources are not processed again.
	head = s.head(t)
	if st := sched.Sweep(ctx); st.Passes != 0 || s.head(t) != head {
		t.Errorf("a sweep after processing: %+v", st)
	}
}

// slowChat answers "[]" after a delay and records how many requests it
// served at once.
type slowChat struct {
	delay                   time.Duration
	mu                      sync.Mutex
	inFlight, most, started int
	firstCall               chan struct{}
}

func (c *slowChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.inFlight++
	c.started++
	c.most = max(c.most, c.inFlight)
	if c.started == 1 {
		close(c.firstCall)
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
	}()
	time.Sleep(c.delay)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "test-chat",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "[]"}}}})
}

// Run sweeps at each tick with at most Concurrency agents at once, and
// stops on cancel without cutting a pass: the pass whose model call was
// under way is recorded, and no agent is started after the cancel.
func TestSchedulerConcurrencyAndShutdown(t *testing.T) {
	t.Parallel()
	chat := &slowChat{delay: 400 * time.Millisecond, firstCall: make(chan struct{})}
	srv := httptest.NewServer(chat)
	t.Cleanup(srv.Close)
	proc, err := llm.New(llm.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "test-chat", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, stackOptions{fixedAuth: true, processor: proc})
	agents := []string{"a1", "a2", "a3", "a4", "a5", "a6"}
	for _, a := range agents {
		s.raws(t, aliceKey, a, goldenRaw...)
	}
	s.clock.Advance(25 * time.Hour)

	// A whole sweep: every agent's two raw transitions, two agents at once.
	if st := s.scheduler(t, 2, nil).Sweep(context.Background()); st.Passes != 2*len(agents) || st.Errors != 0 {
		t.Fatalf("sweep: %+v", st)
	}
	if chat.most != 2 {
		t.Errorf("at most %d model calls at once, want 2 (the concurrency)", chat.most)
	}

	// Run, tick, and cancel while the first model call is under way.
	for _, a := range agents {
		s.raws(t, aliceKey, a, "Another day, another deploy; we learned to check the migrations first")
	}
	s.clock.Advance(25 * time.Hour)
	chat.mu.Lock()
	chat.started, chat.firstCall = 0, make(chan struct{})
	first := chat.firstCall
	chat.mu.Unlock()
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.scheduler(t, 1, ticks).Run(ctx) }()
	ticks <- time.Now()
	<-first
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not stop after cancel")
	}
	chat.mu.Lock()
	calls := chat.started
	chat.mu.Unlock()
	// One agent was under way (concurrency 1): its transitions finished
	// and were recorded; no other agent started.
	var view query.ProcessingView
	s.request(t, "GET", "/v1/agents/a1/processing", aliceKey, nil).must(t, http.StatusOK, &view)
	if view.Raw.Unprocessed != 0 || len(view.Runs) != 4 {
		t.Errorf("the agent under way at cancel: raw %+v, runs %d", view.Raw, len(view.Runs))
	}
	if calls != 2 {
		t.Errorf("%d model calls after cancel, want 2 (one agent's two raw transitions)", calls)
	}
	s.request(t, "GET", "/v1/agents/a2/processing", aliceKey, nil).must(t, http.StatusOK, &view)
	if view.Raw.Unprocessed != 1 {
		t.Errorf("an agent was started after cancel: raw %+v", view.Raw)
	}
}
