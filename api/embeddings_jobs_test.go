package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/internal/workers"
)

// stepUntilIdle steps the runner until it has nothing to do.
func (s *stack) stepUntilIdle() {
	s.t.Helper()
	for range 10000 {
		did, err := s.runner.Step(context.Background())
		if err != nil {
			s.t.Fatal(err)
		}
		if !did {
			return
		}
	}
	s.t.Fatal("the runner never ran out of work")
}

func (s *stack) step() {
	s.t.Helper()
	did, err := s.runner.Step(context.Background())
	if err != nil || !did {
		s.t.Fatalf("step: did %v, err %v", did, err)
	}
}

// agentModel is the model the agent is searched with, as the memories read
// model and the vector projection see it.
func (s *stack) agentModel(userID, agentID string) (readModel, vectors string) {
	s.t.Helper()
	a, ok, err := s.memories.Agent(context.Background(), userID, agentID)
	if err != nil || !ok {
		s.t.Fatalf("agent %s: %v %v", agentID, ok, err)
	}
	space, _ := s.vectors.AgentSpace(userID, agentID)
	return a.EmbeddingModel, space.Model
}

func (s *stack) vectorOf(model, text string) []float32 {
	s.t.Helper()
	return floats(s.must(http.StatusOK, "POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": text, "model": model}).data()["embedding"])
}

// searchTop runs POST /search for Alice's agent claire and returns the top
// hit's id.
func (s *stack) searchTop(query, mode string) string {
	s.t.Helper()
	d := s.must(http.StatusOK, "POST", "/v1/search", aliceKey, map[string]any{"agent_id": "claire", "query": query, "mode": mode, "limit": 1}).data()
	results, _ := d["results"].([]any)
	if len(results) == 0 {
		return ""
	}
	id, _ := results[0].(map[string]any)["id"].(string)
	return id
}

func (s *stack) countEvents(eventType string) int {
	s.t.Helper()
	n := 0
	events, err := s.store.ReadAll(context.Background(), 0, 1<<30)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, e := range events {
		if e.Type == eventType {
			n++
		}
	}
	return n
}

func TestBulkReembedLifecycle(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, runner: workers.RunnerConfig{BatchSize: 64}})
	ids := s.seed(alice, "claire", 149)
	text := "the user likes coffee in the morning"
	target, err := s.memCmds.Create(t.Context(), metaFor(alice), "claire", commandsBelief(text))
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, target.ID)
	oldQ, newQ := s.vectorOf("default", text), s.vectorOf(staticModel, text)

	r := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel})
	created := r.data()
	jobID, _ := created["job_id"].(string)
	if jobID == "" || created["status"] != "queued" || num(created["estimated_memories"]) != 150 || num(created["estimated_time_seconds"]) < 1 {
		t.Fatalf("created: %v", created)
	}
	if r.header.Get("Location") != "/v1/embeddings/jobs/"+jobID {
		t.Fatalf("Location %q", r.header.Get("Location"))
	}
	d := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	if d["status"] != "queued" || d["started_at"] != nil || d["completed_at"] != nil || num(d["memories_processed"]) != 0 ||
		d["agent_id"] != "claire" || d["model"] != staticModel || num(d["memories_total"]) != 150 {
		t.Fatalf("queued job: %v", d)
	}
	// One job per agent at a time.
	wantError(t, s.call("POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire"}), 409, "job_in_progress")

	s.step() // claims the job
	d = s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	if d["status"] != "running" || d["started_at"] == nil || d["completed_at"] != nil {
		t.Fatalf("started job: %v", d)
	}
	s.step() // first batch
	d = s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	if num(d["memories_processed"]) != 64 || d["status"] != "running" {
		t.Fatalf("after one batch: %v", d)
	}
	// Search still runs on the old vectors while the job runs.
	if rm, vx := s.agentModel(alice, "claire"); rm != local.BuiltinModelName || vx != local.BuiltinModelName {
		t.Fatalf("agent switched early: %s / %s", rm, vx)
	}
	if got := s.similar(aliceKey, map[string]any{"agent_id": "claire", "embedding": oldQ, "limit": 1}); len(got) != 1 || got[0]["id"] != target.ID {
		t.Fatalf("old-model search during the job: %v", got)
	}
	wantError(t, s.call("POST", "/v1/embeddings/similar", aliceKey, map[string]any{"agent_id": "claire", "embedding": newQ}), 400, "invalid_request")
	if top := s.searchTop(text, "vector"); top != target.ID {
		t.Fatalf("vector search during the job found %s", top)
	}

	s.stepUntilIdle()
	d = s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	if d["status"] != "completed" || num(d["memories_processed"]) != 150 || num(d["memories_total"]) != 150 || d["completed_at"] == nil || d["ended_at"] == nil {
		t.Fatalf("completed job: %v", d)
	}
	if events, distinct := s.jobEvents(jobID); events != 150 || distinct != 150 {
		t.Fatalf("%d MemoryEmbedded events for %d memories; want 150", events, distinct)
	}
	// After completion, search uses the new model, and only it.
	if rm, vx := s.agentModel(alice, "claire"); rm != staticModel || vx != staticModel {
		t.Fatalf("agent not switched: %s / %s", rm, vx)
	}
	if got := s.similar(aliceKey, map[string]any{"agent_id": "claire", "embedding": newQ, "limit": 1}); len(got) != 1 || got[0]["id"] != target.ID {
		t.Fatalf("new-model search: %v", got)
	}
	if top := s.searchTop(text, "vector"); top != target.ID {
		t.Fatalf("vector search after the switch found %s", top)
	}
	r = s.call("POST", "/v1/embeddings/similar", aliceKey, map[string]any{"agent_id": "claire", "embedding": oldQ})
	wantError(t, r, 400, "invalid_request")
	if r.details()["model"] != staticModel {
		t.Fatalf("dimension error names %v", r.details())
	}
	// Every memory has a vector in the new model; re-embedding one now
	// reports the new model as the previous one.
	for _, id := range ids {
		if v, _, _ := s.memories.Memory(context.Background(), alice, id); v.Embedding.Status != memory.StatusEmbedded || v.Embedding.Model != staticModel {
			t.Fatalf("memory %s after the switch: %+v", id, v.Embedding)
		}
	}
	d = s.must(http.StatusOK, "POST", "/v1/embeddings/reembed", aliceKey, map[string]any{"agent_id": "claire", "memory_type": "belief", "memory_id": target.ID}).data()
	if d["previous_model"] != staticModel || d["new_model"] != staticModel || num(d["dimensions"]) != 64 {
		t.Fatalf("reembed after the switch: %v", d)
	}
	if rate, ok := s.runner.Rate(staticModel); !ok || rate <= 0 {
		t.Fatalf("no measured pace for %s", staticModel)
	}
	// A finished job cannot be cancelled; a new job may start.
	wantError(t, s.call("POST", "/v1/embeddings/jobs/"+jobID+"/cancel", aliceKey, nil), 409, "job_finished")
	s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "types": []string{"notes"}})
}

func TestBulkReembedErrors(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	s.seed(alice, "claire", 1)
	for _, c := range []struct {
		body   map[string]any
		status int
		code   string
	}{
		{map[string]any{"agent_id": "claire", "model": "text-embedding-3-large"}, 400, "model_not_available"},
		{map[string]any{"agent_id": "claire", "types": []string{"drives"}}, 400, "invalid_request"},
		{map[string]any{"agent_id": "claire", "types": []string{"dreams"}}, 400, "invalid_request"},
		{map[string]any{"agent_id": "claire", "types": "notes"}, 400, "invalid_request"},
		{map[string]any{"types": []string{"notes"}}, 400, "invalid_request"},
		{map[string]any{"agent_id": "nobody"}, 404, "not_found"},
	} {
		wantError(t, s.call("POST", "/v1/embeddings/bulk-reembed", aliceKey, c.body), c.status, c.code)
	}
	wantError(t, s.call("POST", "/v1/embeddings/bulk-reembed", "", map[string]any{"agent_id": "claire"}), 401, "unauthorized")
	wantError(t, s.call("GET", "/v1/embeddings/jobs/0193aaaa-0000-7000-8000-000000000000", aliceKey, nil), 404, "not_found")
	wantError(t, s.call("POST", "/v1/embeddings/jobs/nope/cancel", aliceKey, nil), 404, "not_found")
	wantError(t, s.call("GET", "/v1/embeddings/jobs/nope", "", nil), 401, "unauthorized")
}

// countingKicker counts kicks of the embedding queue.
type countingKicker struct{ n atomic.Int32 }

func (k *countingKicker) Kick() { k.n.Add(1) }

func TestBulkReembedRunsInBackground(t *testing.T) {
	t.Parallel()
	queue := &countingKicker{}
	s := newStack(t, stackOptions{fixedAuth: true, runner: workers.RunnerConfig{BatchSize: 32, Queue: queue}})
	s.seed(alice, "claire", 100)
	// Refreshing vectors with the agent's own model needs no switch.
	jobID := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "types": []string{"notes", "beliefs"}}).data()["job_id"].(string)
	d := s.waitJob(aliceKey, jobID, statusIs("completed"))
	if num(d["memories_processed"]) != 100 || d["model"] != local.BuiltinModelName {
		t.Fatalf("refresh job: %v", d)
	}
	if n := s.countEvents(memory.AgentModelSwitched{}.EventType()); n != 0 || queue.n.Load() != 0 {
		t.Fatalf("%d model switches and %d queue kicks for a refresh", n, queue.n.Load())
	}
	// A switch in the background.
	jobID = s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)
	s.waitJob(aliceKey, jobID, statusIs("completed"))
	if rm, vx := s.agentModel(alice, "claire"); rm != staticModel || vx != staticModel {
		t.Fatalf("agent not switched: %s / %s", rm, vx)
	}
	if queue.n.Load() != 1 {
		t.Fatalf("the embedding queue was kicked %d times after the switch", queue.n.Load())
	}
	// Memories written after the switch are embedded with the new model.
	created, err := s.memCmds.Create(t.Context(), metaFor(alice), "claire", commandsNote("a note after the switch"))
	if err != nil {
		t.Fatal(err)
	}
	if created.Embedding.Model != staticModel || created.Embedding.Status != memory.StatusEmbedded {
		t.Fatalf("new memory: %+v", created.Embedding)
	}
}

func TestCancelJob(t *testing.T) {
	t.Parallel()
	// Cancel a queued job: the runner never starts it.
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, runner: workers.RunnerConfig{BatchSize: 10}})
	s.seed(alice, "claire", 40)
	jobID := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)
	d := s.must(http.StatusOK, "POST", "/v1/embeddings/jobs/"+jobID+"/cancel", aliceKey, nil).data()
	if d["status"] != "cancelled" || d["ended_at"] == nil || d["completed_at"] != nil {
		t.Fatalf("cancelled queued job: %v", d)
	}
	s.stepUntilIdle()
	if events, _ := s.jobEvents(jobID); events != 0 {
		t.Fatalf("a cancelled job embedded %d memories", events)
	}
	wantError(t, s.call("POST", "/v1/embeddings/jobs/"+jobID+"/cancel", aliceKey, nil), 409, "job_finished")

	// Cancel a running job between batches: it stops, and the agent keeps
	// its model.
	jobID = s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)
	s.step() // claim
	s.step() // batch 1
	s.step() // batch 2
	d = s.must(http.StatusOK, "POST", "/v1/embeddings/jobs/"+jobID+"/cancel", aliceKey, nil).data()
	if d["status"] != "cancelled" || num(d["memories_processed"]) != 20 {
		t.Fatalf("cancelled running job: %v", d)
	}
	s.stepUntilIdle()
	d = s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	if d["status"] != "cancelled" || num(d["memories_processed"]) != 20 {
		t.Fatalf("after more steps: %v", d)
	}
	if rm, vx := s.agentModel(alice, "claire"); rm != local.BuiltinModelName || vx != local.BuiltinModelName {
		t.Fatalf("cancelled job switched the agent: %s / %s", rm, vx)
	}
	if n := s.countEvents(memory.AgentModelSwitched{}.EventType()); n != 0 {
		t.Fatalf("%d model switches", n)
	}
	// A new job may follow the cancelled one.
	jobID = s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)

	// Once every memory is embedded the job is switching the agent: a
	// cancel is too late, and the job completes as if none came.
	for !s.jobFinishing(jobID) {
		s.step()
	}
	r := s.call("POST", "/v1/embeddings/jobs/"+jobID+"/cancel", aliceKey, nil)
	wantError(t, r, 409, "job_finishing")
	if !strings.Contains(r.errorMessage(), "can no longer be cancelled") {
		t.Fatalf("job_finishing message: %q", r.errorMessage())
	}
	s.stepUntilIdle()
	d = s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	if d["status"] != "completed" || num(d["memories_processed"]) != 40 {
		t.Fatalf("the job a late cancel met: %v", d)
	}
	if rm, vx := s.agentModel(alice, "claire"); rm != staticModel || vx != staticModel {
		t.Fatalf("the job a late cancel met did not switch the agent: %s / %s", rm, vx)
	}
}

// jobFinishing reports whether the job's stream records that it finishes
// (every memory done, the agent's switch next).
func (s *stack) jobFinishing(jobID string) bool {
	s.t.Helper()
	j, err := job.Read(context.Background(), s.store, jobID)
	if err != nil {
		s.t.Fatal(err)
	}
	return j.Finishing
}

func TestCancelWhileRunnerRuns(t *testing.T) {
	t.Parallel()
	// The runner runs on its own; a cancel arrives after its first batch.
	var s *stack
	var jobID atomic.Value
	cancelled := make(chan struct{})
	batches := atomic.Int32{}
	s = newStack(t, stackOptions{fixedAuth: true, runner: workers.RunnerConfig{BatchSize: 10, AfterBatch: func(id string, n int) {
		if batches.Add(1) == 1 {
			d := s.must(http.StatusOK, "POST", "/v1/embeddings/jobs/"+id+"/cancel", aliceKey, nil).data()
			if d["status"] != "cancelled" {
				t.Errorf("cancel: %v", d)
			}
			close(cancelled)
		}
	}}})
	s.seed(alice, "claire", 50)
	jobID.Store(s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"])
	<-cancelled
	s.stopRunner()
	d := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID.Load().(string), aliceKey, nil).data()
	if d["status"] != "cancelled" || num(d["memories_processed"]) != 10 || batches.Load() != 1 {
		t.Fatalf("job after cancel: %v, %d batches", d, batches.Load())
	}
	if rm, _ := s.agentModel(alice, "claire"); rm != local.BuiltinModelName {
		t.Fatalf("agent on %s", rm)
	}
}

func TestJobResumesAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stop func()
	batches := 0
	cfg := workers.RunnerConfig{ID: "node-1", BatchSize: 25, AfterBatch: func(string, int) {
		if batches++; batches == 3 {
			stop() // the process dies after its third batch
		}
	}}
	s := newStack(t, stackOptions{fixedAuth: true, dataDir: dir, noRun: true, runner: cfg})
	s.seed(alice, "claire", 110)
	jobID := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	stop = cancel
	if err := s.runner.Run(ctx); err != context.Canceled {
		t.Fatalf("run: %v", err)
	}
	d := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	if d["status"] != "running" || num(d["memories_processed"]) != 75 {
		t.Fatalf("before the restart: %v", d)
	}
	s.closeAll()

	// A new process over the same data directory resumes after the last
	// recorded batch.
	cfg.AfterBatch = nil
	s = newStack(t, stackOptions{fixedAuth: true, dataDir: dir, runner: cfg})
	d = s.waitJob(aliceKey, jobID, statusIs("completed"))
	if num(d["memories_processed"]) != 110 || num(d["memories_total"]) != 110 {
		t.Fatalf("after the restart: %v", d)
	}
	if events, distinct := s.jobEvents(jobID); events != 110 || distinct != 110 {
		t.Fatalf("%d MemoryEmbedded events for %d memories; want 110 each", events, distinct)
	}
	if rm, vx := s.agentModel(alice, "claire"); rm != staticModel || vx != staticModel {
		t.Fatalf("agent: %s / %s", rm, vx)
	}
}

func TestStaleJobIsTakenOver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newStack(t, stackOptions{fixedAuth: true, dataDir: dir, noRun: true, runner: workers.RunnerConfig{ID: "node-1", BatchSize: 20}})
	s.seed(alice, "claire", 50)
	jobID := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)
	s.step() // node-1 claims
	s.step() // and records one batch, then goes silent
	// Another node leaves a job alone while its holder is recent...
	other := workers.NewJobRunner(s.writer, s.jobs, s.memories, s.catalog, workers.RunnerConfig{ID: "node-2", BatchSize: 20})
	if did, err := other.Step(context.Background()); did || err != nil {
		t.Fatalf("node-2 worked on a live job: %v %v", did, err)
	}
	s.closeAll()
	// ...and takes it over once the holder has been idle past the lease.
	s = newStack(t, stackOptions{fixedAuth: true, dataDir: dir, runner: workers.RunnerConfig{ID: "node-2", BatchSize: 20, LeaseTimeout: time.Millisecond}})
	d := s.waitJob(aliceKey, jobID, statusIs("completed"))
	if num(d["memories_processed"]) != 50 {
		t.Fatalf("after takeover: %v", d)
	}
	if events, distinct := s.jobEvents(jobID); events != 50 || distinct != 50 {
		t.Fatalf("%d events for %d memories", events, distinct)
	}
	if n := s.countEvents("ReembedJobResumed"); n != 1 {
		t.Fatalf("%d takeovers", n)
	}
}

func TestJobFailsAfterRepeatedProviderErrors(t *testing.T) {
	t.Parallel()
	// The runner's clock is the test's: it steps past each retry backoff
	// instead of sleeping through it.
	clock := &testClock{}
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, runner: workers.RunnerConfig{BatchSize: 10, MaxAttempts: 3, Now: clock.Now}})
	s.seed(alice, "claire", 30)
	jobID := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)
	s.step() // claim
	s.step() // one good batch
	s.provider.down.Store(true)
	for range 3 {
		clock.Advance(time.Minute) // past the backoff
		s.step()
	}
	d := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	errs, _ := d["errors"].([]any)
	if d["status"] != "failed" || num(d["memories_processed"]) != 10 || len(errs) != 2 ||
		!strings.Contains(d["failure_reason"].(string), "3 failed attempts") || d["ended_at"] == nil {
		t.Fatalf("failed job: %v", d)
	}
	if rm, _ := s.agentModel(alice, "claire"); rm != local.BuiltinModelName {
		t.Fatalf("a failed job switched the agent to %s", rm)
	}
	// A transient error followed by success does not fail the job.
	s.provider.down.Store(false)
	jobID = s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)
	s.step()
	s.provider.down.Store(true)
	s.step()
	s.provider.down.Store(false)
	clock.Advance(time.Minute)
	s.stepUntilIdle()
	d = s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	if errs, _ := d["errors"].([]any); d["status"] != "completed" || len(errs) != 1 || num(d["memories_processed"]) != 30 {
		t.Fatalf("recovered job: %v", d)
	}
}

func TestDeletedAgentTakesItsJobs(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, runner: workers.RunnerConfig{BatchSize: 10}})
	s.seed(alice, "claire", 30)
	jobID := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)
	s.step()
	s.step()
	if err := s.memCmds.DeleteAgent(context.Background(), metaFor(alice), "claire"); err != nil {
		t.Fatal(err)
	}
	wantError(t, s.call("GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil), 404, "not_found")
	s.stepUntilIdle()
	if n := s.countEvents(memory.AgentModelSwitched{}.EventType()); n != 0 {
		t.Fatalf("a deleted agent was switched")
	}
}

// TestWritesDuringAJobGetNewVectorsAfterTheSwitch: a memory patched after
// the job embedded it keeps an old-model vector of its new text; after the
// switch the embedding queue gives it one in the new model.
func TestWritesDuringAJobGetNewVectorsAfterTheSwitch(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, runner: workers.RunnerConfig{BatchSize: 10}})
	ids := s.seed(alice, "claire", 30)
	jobID := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)
	s.step() // claim
	s.step() // ids[0:10]
	patched, err := s.memCmds.Patch(t.Context(), metaFor(alice), ids[0], commands.MemoryPatch{Content: []byte(`{"content":"the team learned to review code on monday"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if patched.Embedding.Model != local.BuiltinModelName || patched.Embedding.Status != memory.StatusEmbedded {
		t.Fatalf("patched during the job: %+v", patched.Embedding)
	}
	late, err := s.memCmds.Create(t.Context(), metaFor(alice), "claire", commandsNote("written while the job runs"))
	if err != nil {
		t.Fatal(err)
	}
	s.stepUntilIdle()
	if d := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data(); d["status"] != "completed" || num(d["memories_processed"]) != 31 {
		t.Fatalf("job: %v", d)
	}
	// The late memory was after the cursor: the job embedded it.
	if v, _, _ := s.memories.Memory(t.Context(), alice, late.ID); v.Embedding.Status != memory.StatusEmbedded || v.Embedding.Model != staticModel {
		t.Fatalf("late memory: %+v", v.Embedding)
	}
	// The patched one waits for the queue, which fills it in.
	if v, _, _ := s.memories.Memory(t.Context(), alice, ids[0]); v.Embedding.Status != memory.StatusPending {
		t.Fatalf("patched memory after the switch: %+v", v.Embedding)
	}
	queue, err := workers.NewEmbedQueue(workers.EmbedQueueConfig{Writer: s.writer, Reader: s.memories, Embedder: s.catalog})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := queue.Drain(t.Context()); err != nil || n != 1 {
		t.Fatalf("queue embedded %d: %v", n, err)
	}
	if v, _, _ := s.memories.Memory(t.Context(), alice, ids[0]); v.Embedding.Status != memory.StatusEmbedded || v.Embedding.Model != staticModel {
		t.Fatalf("patched memory after the queue: %+v", v.Embedding)
	}
	if top := s.searchTop("the team learned to review code on monday", "vector"); top != ids[0] {
		t.Fatalf("search for the patched text found %s", top)
	}
}

// TestRefusedMemoryIsSkipped: a memory whose indexed text the provider
// refuses (longer than the text limit) is skipped and listed in the job's
// errors; the rest of its batch is embedded and the job completes.
func TestRefusedMemoryIsSkipped(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, runner: workers.RunnerConfig{BatchSize: 10}})
	s.seed(alice, "claire", 12)
	long := strings.Repeat("word ", 4000) // 20,000 characters per field
	content, _ := json.Marshal(map[string]any{"objective": long, "outcome": long})
	huge, err := s.memCmds.Create(t.Context(), metaFor(alice), "claire", commands.MemoryInput{Type: "episode", Content: content})
	if err != nil {
		t.Fatal(err)
	}
	jobID := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)
	s.stepUntilIdle()
	d := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	errs, _ := d["errors"].([]any)
	if d["status"] != "completed" || num(d["memories_processed"]) != 12 || num(d["memories_total"]) != 13 || len(errs) != 1 {
		t.Fatalf("job: %v", d)
	}
	if e := errs[0].(map[string]any); e["memory_id"] != huge.ID || !strings.Contains(e["message"].(string), "32000") {
		t.Fatalf("error entry: %v", e)
	}
	if events, _ := s.jobEvents(jobID); events != 12 {
		t.Fatalf("%d vectors recorded", events)
	}
}

// TestBulkReembedStepsOverTheAppendLimit: on a KurrentDB whose
// MaxAppendSize (here 32 KiB) is less than one step's vectors (as 1 MiB is
// less than 128 vectors of 1536 dimensions), the job records each step in
// parts and completes with every memory's vector recorded exactly once.
// Then, on the same log, the writes promised whole are refused whole
// (writesOverTheAppendLimit).
func TestBulkReembedStepsOverTheAppendLimit(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, kurrentMaxAppend: 32 << 10, runner: workers.RunnerConfig{BatchSize: 128}})
	const n = 150
	for start := 0; start < n; start += 10 {
		in := make([]commands.MemoryInput, 10)
		for i := range in {
			in[i] = commandsNote(fmt.Sprintf("note %d: the team deployed release %d to the server", start+i, start+i))
		}
		if _, err := s.memCmds.CreateBatch(t.Context(), metaFor(alice), "claire", in); err != nil {
			t.Fatal(err)
		}
	}
	jobID, _ := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": staticModel}).data()["job_id"].(string)

	s.stepUntilIdle()
	d := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, aliceKey, nil).data()
	if d["status"] != "completed" || num(d["memories_processed"]) != n || num(d["memories_skipped"]) != 0 {
		t.Fatalf("job over the append limit: %v", d)
	}
	if events, distinct := s.jobEvents(jobID); events != n || distinct != n {
		t.Fatalf("%d MemoryEmbedded events for %d memories; want %d", events, distinct, n)
	}
	if rm, vx := s.agentModel(alice, "claire"); rm != staticModel || vx != staticModel {
		t.Fatalf("agent not switched: %s / %s", rm, vx)
	}
	writesOverTheAppendLimit(t, s, 32<<10)
}
