package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/query"
)

// The raw entries of the golden pipeline run, and what the rule-based
// extractor makes of them.
var goldenRaw = []string{
	"I think caching always helps latency",
	"Yesterday we deployed the billing service and it failed, then I learned to check migrations",
	"Reminder: the docs are at https://example.com/docs",
	"blue green red yellow purple",
}

type suggestionJSON struct {
	ID         string          `json:"id"`
	AgentID    string          `json:"agent_id"`
	Transition string          `json:"transition"`
	MemoryType string          `json:"memory_type"`
	Content    json.RawMessage `json:"content"`
	Confidence float64         `json:"confidence"`
	Sources    []string        `json:"sources"`
	Status     string          `json:"status"`
	ExpiresAt  time.Time       `json:"expires_at"`
	Reason     string          `json:"resolution_reason"`
	PromotedTo string          `json:"promoted_to"`
}

type passesJSON struct {
	Passes []processing.Pass `json:"passes"`
}

func (s *stack) raws(t testing.TB, bearer, agent string, texts ...string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, text := range texts {
		ids[text] = s.create(t, bearer, agent, "raw_entry", map[string]any{"content": text}).ID
	}
	return ids
}

func (s *stack) process(t testing.TB, bearer, agent string, body any) []processing.Pass {
	t.Helper()
	var out passesJSON
	s.request(t, "POST", "/v1/agents/"+agent+"/process", bearer, body).must(t, http.StatusOK, &out)
	return out.Passes
}

func (s *stack) suggestions(t testing.TB, bearer, agent, query string) []suggestionJSON {
	t.Helper()
	var out struct {
		Suggestions []suggestionJSON `json:"suggestions"`
	}
	s.request(t, "GET", "/v1/agents/"+agent+"/suggestions"+query, bearer, nil).must(t, http.StatusOK, &out)
	return out.Suggestions
}

func passSummary(passes []processing.Pass) string {
	var b strings.Builder
	for _, p := range passes {
		b.WriteString(string(p.Transition))
		if p.Skipped {
			b.WriteString(" skipped " + p.SkipReason)
		} else {
			b.WriteString(" sources=" + itoa(p.SourceCount) + " suggestions=" + itoa(len(p.Suggestions)) + " dedup=" + itoa(p.Deduplicated) + " errors=" + itoa(len(p.Errors)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

// A golden run of the whole pipeline with the rule-based extractor: the raw
// transitions propose, the identity transitions are blocked or have no
// sources, and everything lands as pending suggestions.
func TestProcessGoldenRunWithRules(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	ids := s.raws(t, aliceKey, "claire", goldenRaw...)

	// Four raws are below every trigger: nothing runs without force.
	passes := s.process(t, aliceKey, "claire", nil)
	if got := passSummary(passes); got != strings.Join([]string{
		"raw_to_episode skipped not_triggered", "raw_to_note skipped not_triggered",
		"episode_to_belief skipped no_sources", "episode_to_goal skipped no_sources", "episode_to_relationship skipped no_sources",
		"belief_to_value skipped no_sources", "episode_to_drive skipped no_sources", ""}, "\n") {
		t.Fatalf("unforced run:\n%s", got)
	}
	passes = s.process(t, aliceKey, "claire", map[string]any{"force": true})
	if got := passSummary(passes); got != strings.Join([]string{
		"raw_to_episode sources=4 suggestions=1 dedup=0 errors=0", "raw_to_note sources=4 suggestions=2 dedup=0 errors=0",
		"episode_to_belief skipped no_sources", "episode_to_goal skipped no_sources", "episode_to_relationship skipped no_sources",
		"belief_to_value skipped no_sources", "episode_to_drive skipped no_sources", ""}, "\n") {
		t.Fatalf("forced run:\n%s", got)
	}
	list := s.suggestions(t, aliceKey, "claire", "?status=pending")
	got := map[string]suggestionJSON{}
	for _, sg := range list {
		got[sg.MemoryType] = sg
	}
	if len(list) != 3 || got["belief"].Sources[0] != "raw_entry:"+ids[goldenRaw[0]] || got["episode"].Sources[0] != "raw_entry:"+ids[goldenRaw[1]] || got["note"].Sources[0] != "raw_entry:"+ids[goldenRaw[2]] {
		t.Fatalf("suggestions: %+v", list)
	}
	var belief map[string]any
	_ = json.Unmarshal(got["belief"].Content, &belief)
	if belief["statement"] != "caching always helps latency" || got["belief"].Confidence != 0.5957 || got["belief"].Transition != "raw_to_note" {
		t.Errorf("belief suggestion: %s conf %v", got["belief"].Content, got["belief"].Confidence)
	}
	if want := s.clock.Now().Add(168 * time.Hour); got["note"].ExpiresAt.Sub(want).Abs() > time.Minute {
		t.Errorf("expires_at %v, want about %v", got["note"].ExpiresAt, want)
	}

	// Every raw was consumed by both raw transitions; the run is recorded.
	var view query.ProcessingView
	s.request(t, "GET", "/v1/agents/claire/processing", aliceKey, nil).must(t, http.StatusOK, &view)
	if view.Raw.Processed != 4 || view.Raw.Unprocessed != 0 || len(view.Runs) != 14 || view.Processor.Model != processing.RulesModel || view.Processor.Inference {
		t.Fatalf("processing view: raw %+v runs %d processor %+v", view.Raw, len(view.Runs), view.Processor)
	}
	for _, e := range view.Raw.Entries {
		if e.ID == ids[goldenRaw[0]] && (len(e.ProcessedInto) != 1 || e.ProcessedInto[0] != "suggestion:"+got["belief"].ID) {
			t.Errorf("raw %s processed_into %v", e.ID, e.ProcessedInto)
		}
	}
	// Nothing left: a second forced run has no sources.
	passes = s.process(t, aliceKey, "claire", map[string]any{"force": true, "transition": "raw_to_note"})
	if len(passes) != 1 || passes[0].SkipReason != processing.SkipNoSources {
		t.Errorf("second run: %s", passSummary(passes))
	}
}

// The pass records a process or exhaust request answers with, and the
// processing view's runs, leave out the stored event's agent reference:
// the caller's own user id and the agent's creation time (which only the
// folds use to tell a deleted agent's events from its successor's).
func TestPassRecordsLeaveOutTheAgentReference(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	answers := map[string][]byte{
		"process": s.request(t, "POST", "/v1/agents/claire/process", aliceKey, map[string]any{"force": true}).must(t, http.StatusOK, nil).raw,
		"exhaust": s.request(t, "POST", "/v1/agents/claire/process/exhaust", aliceKey, map[string]any{"max_cycles": 1}).must(t, http.StatusOK, nil).raw,
		"view":    s.request(t, "GET", "/v1/agents/claire/processing", aliceKey, nil).must(t, http.StatusOK, nil).raw,
	}
	for name, raw := range answers {
		var passes int
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if _, ok := v["pass_id"]; ok {
					passes++
					for _, leaked := range []string{"user_id", "agent_created_at"} {
						if _, ok := v[leaked]; ok {
							t.Errorf("%s: a pass carries %s: %v", name, leaked, v)
						}
					}
				}
				for _, e := range v {
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		var body any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatal(err)
		}
		if walk(body); passes == 0 {
			t.Errorf("%s: no pass in %s", name, raw)
		}
	}
}

// With the rule-based extractor, identity transitions never run: a
// forced episode_to_belief is blocked, and values never come without a
// model.
func TestRulesNeverRunIdentityTransitions(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	for i := range 6 {
		s.create(t, aliceKey, "claire", "episode", map[string]any{"objective": "deploy " + itoa(i), "outcome": "worked", "emotional_arousal": 0.9})
		s.create(t, aliceKey, "claire", "belief", map[string]any{"statement": "belief number " + itoa(i)})
	}
	passes := s.process(t, aliceKey, "claire", map[string]any{"force": true})
	for _, p := range passes[2:] {
		if !p.Skipped || p.SkipReason != processing.SkipNeedsInference || !p.InferenceBlocked {
			t.Errorf("%s: %+v", p.Transition, p)
		}
	}
	if n := len(s.suggestions(t, aliceKey, "claire", "")); n != 0 {
		t.Errorf("%d suggestions", n)
	}
}

func TestSuggestionLifecycle(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	ids := s.raws(t, aliceKey, "claire", goldenRaw...)
	s.process(t, aliceKey, "claire", map[string]any{"force": true})
	// An active stack enforces provenance: a belief written directly may
	// not cite a raw entry, a promoted suggestion may.
	if _, err := s.memCmds.PatchSettings(context.Background(), metaFor(alice), "claire", json.RawMessage(`{"stack_state":"active"}`)); err != nil {
		t.Fatal(err)
	}
	wantError(t, s.request(t, "POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "claire", "type": "belief",
		"content": map[string]any{"statement": "caching always helps latency"}, "derived_from": []string{"raw:" + ids[goldenRaw[0]]}}),
		http.StatusBadRequest, "provenance_violation")
	byType := map[string]suggestionJSON{}
	for _, sg := range s.suggestions(t, aliceKey, "claire", "") {
		byType[sg.MemoryType] = sg
	}

	// Accept the belief as is: a belief derived from the raw entry.
	var acc struct {
		Suggestion suggestionJSON `json:"suggestion"`
		Memory     memCreated     `json:"memory"`
	}
	s.request(t, "POST", "/v1/suggestions/"+byType["belief"].ID+"/accept", aliceKey, nil).must(t, http.StatusOK, &acc)
	if acc.Suggestion.Status != "promoted" || acc.Suggestion.PromotedTo != "belief:"+acc.Memory.ID || acc.Memory.Type != "belief" {
		t.Fatalf("accept: %+v", acc)
	}
	m := s.get(t, aliceKey, acc.Memory.ID)
	if strings.Join(m.DerivedFrom, ",") != "raw_entry:"+ids[goldenRaw[0]] || !strings.Contains(string(m.Content), `"statement":"caching always helps latency"`) || !strings.Contains(string(m.Content), `"source_type":"processing"`) {
		t.Errorf("memory: derived %v content %s", m.DerivedFrom, m.Content)
	}
	var view query.ProcessingView
	s.request(t, "GET", "/v1/agents/claire/processing", aliceKey, nil).must(t, http.StatusOK, &view)
	for _, e := range view.Raw.Entries {
		if e.ID == ids[goldenRaw[0]] && strings.Join(e.ProcessedInto, ",") != "belief:"+acc.Memory.ID {
			t.Errorf("raw processed_into after accept: %v", e.ProcessedInto)
		}
	}
	// Accepting twice, or rejecting or dismissing what was accepted, conflicts.
	wantError(t, s.request(t, "POST", "/v1/suggestions/"+byType["belief"].ID+"/accept", aliceKey, nil), http.StatusConflict, "suggestion_not_pending")
	wantError(t, s.request(t, "POST", "/v1/suggestions/"+byType["belief"].ID+"/reject", aliceKey, nil), http.StatusConflict, "suggestion_not_pending")
	wantError(t, s.request(t, "POST", "/v1/suggestions/"+byType["belief"].ID+"/dismiss", aliceKey, nil), http.StatusConflict, "suggestion_not_pending")

	// Accept with overrides: modified, with the overridden field and tags.
	s.request(t, "POST", "/v1/suggestions/"+byType["episode"].ID+"/accept", aliceKey,
		map[string]any{"content": map[string]any{"outcome": "rolled back", "outcome_type": "failure"}, "tags": []string{"billing"}}).must(t, http.StatusOK, &acc)
	if acc.Suggestion.Status != "modified" {
		t.Errorf("status with overrides: %s", acc.Suggestion.Status)
	}
	ep := s.get(t, aliceKey, acc.Memory.ID)
	if !strings.Contains(string(ep.Content), `"outcome":"rolled back"`) || strings.Join(ep.Tags, ",") != "auto-suggested,billing" {
		t.Errorf("episode: %s tags %v", ep.Content, ep.Tags)
	}
	// An override that breaks the content is the memory's validation error; the suggestion stays pending.
	r := s.request(t, "POST", "/v1/suggestions/"+byType["note"].ID+"/accept", aliceKey, map[string]any{"content": map[string]any{"note_type": "nonsense"}})
	wantError(t, r, http.StatusBadRequest, "invalid_request")
	wantError(t, s.request(t, "POST", "/v1/suggestions/"+byType["note"].ID+"/accept", aliceKey, map[string]any{"content": "text"}), http.StatusBadRequest, "invalid_request")

	// Dismiss with a reason; a too long reason is refused first.
	wantError(t, s.request(t, "POST", "/v1/suggestions/"+byType["note"].ID+"/dismiss", aliceKey, map[string]any{"reason": strings.Repeat("x", 1001)}), http.StatusBadRequest, "invalid_request")
	var sg suggestionJSON
	s.request(t, "POST", "/v1/suggestions/"+byType["note"].ID+"/dismiss", aliceKey, map[string]any{"reason": "already documented"}).must(t, http.StatusOK, &sg)
	if sg.Status != "dismissed" || sg.Reason != "already documented" {
		t.Errorf("dismissed: %+v", sg)
	}
	for status, want := range map[string]int{"pending": 0, "promoted": 1, "modified": 1, "dismissed": 1, "rejected": 0, "": 3} {
		q := ""
		if status != "" {
			q = "?status=" + status
		}
		if n := len(s.suggestions(t, aliceKey, "claire", q)); n != want {
			t.Errorf("status %q: %d suggestions, want %d", status, n, want)
		}
	}
}

func TestSuggestionRejectAndExpiry(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	s.request(t, "PATCH", "/v1/agents/claire/processing", aliceKey, map[string]any{"suggestion_expiry_hours": 2}).must(t, http.StatusOK, nil)
	s.process(t, aliceKey, "claire", map[string]any{"force": true})
	list := s.suggestions(t, aliceKey, "claire", "")
	var sg suggestionJSON
	s.request(t, "POST", "/v1/suggestions/"+list[0].ID+"/reject", aliceKey, nil).must(t, http.StatusOK, &sg)
	if sg.Status != "rejected" {
		t.Fatalf("rejected: %+v", sg)
	}
	head := s.head(t)
	// One second before the expiry the others are pending; at it, expired,
	// before anything is written.
	s.clock.Advance(2*time.Hour - time.Minute)
	if n := len(s.suggestions(t, aliceKey, "claire", "?status=pending")); n != 2 {
		t.Fatalf("pending before expiry: %d", n)
	}
	s.clock.Advance(time.Minute)
	if n := len(s.suggestions(t, aliceKey, "claire", "?status=pending")); n != 0 {
		t.Errorf("pending at expiry: %d", n)
	}
	expired := s.suggestions(t, aliceKey, "claire", "?status=expired")
	if len(expired) != 2 || expired[0].Status != "expired" {
		t.Fatalf("expired: %+v", expired)
	}
	if s.head(t) != head {
		t.Error("reading expired suggestions wrote to the log")
	}
	wantError(t, s.request(t, "POST", "/v1/suggestions/"+expired[0].ID+"/accept", aliceKey, nil), http.StatusConflict, "suggestion_not_pending")
	// The next pass records the expiry.
	s.process(t, aliceKey, "claire", nil)
	s.request(t, "GET", "/v1/suggestions/"+expired[0].ID, aliceKey, nil).must(t, http.StatusOK, &sg)
	if sg.Status != "expired" || sg.Reason != "auto-expired after 2h" {
		t.Errorf("recorded expiry: %+v", sg)
	}
}

func (s *stack) head(t testing.TB) uint64 {
	t.Helper()
	h, err := s.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestProcessingConfigPatch(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	var view query.ProcessingView
	s.request(t, "PATCH", "/v1/agents/claire/processing", aliceKey, map[string]any{
		"layers": map[string]any{"raw_to_note": map[string]any{"quantity_threshold": 4, "batch_size": 2}, "raw_to_episode": map[string]any{"enabled": false}},
	}).must(t, http.StatusOK, &view)
	if l := view.Config.Layers[processing.RawToNote]; l.QuantityThreshold != 4 || l.BatchSize != 2 || l.TimeThresholdHours != 24 {
		t.Fatalf("raw_to_note: %+v", l)
	}
	// A layer sent as null is absent: it stays as it is (docs/api.md#absent-values).
	s.request(t, "PATCH", "/v1/agents/claire/processing", aliceKey, map[string]any{
		"layers": map[string]any{"raw_to_note": nil, "raw_to_episode": nil},
	}).must(t, http.StatusOK, &view)
	if l := view.Config.Layers[processing.RawToNote]; l.QuantityThreshold != 4 || l.BatchSize != 2 || view.Config.Layers[processing.RawToEpisode].Enabled {
		t.Fatalf("layers after a patch of null layers: raw_to_note %+v, raw_to_episode %+v", l, view.Config.Layers[processing.RawToEpisode])
	}
	// Four raws now reach raw_to_note's threshold: it runs unforced, on a
	// batch of two (the oldest); raw_to_episode is disabled.
	passes := s.process(t, aliceKey, "claire", nil)
	if passes[0].SkipReason != processing.SkipDisabled || passes[1].Skipped || passes[1].SourceCount != 2 || !strings.Contains(passSummary(passes[1:2]), "suggestions=1") {
		t.Fatalf("passes:\n%s", passSummary(passes))
	}
	// A daily cap of 0 blocks even a forced pass.
	s.request(t, "PATCH", "/v1/agents/claire/processing", aliceKey, map[string]any{"layers": map[string]any{"raw_to_note": map[string]any{"max_passes_per_day": 0}}}).must(t, http.StatusOK, nil)
	passes = s.process(t, aliceKey, "claire", map[string]any{"force": true, "transition": "raw_to_note"})
	if passes[0].SkipReason != processing.SkipDailyCap {
		t.Errorf("capped: %s", passSummary(passes))
	}
	// Another stack of the same user keeps its defaults.
	s.raws(t, aliceKey, "other", "x is always y")
	s.request(t, "GET", "/v1/agents/other/processing", aliceKey, nil).must(t, http.StatusOK, &view)
	if view.Config.Layers[processing.RawToNote].BatchSize != 10 || !view.Config.Layers[processing.RawToEpisode].Enabled {
		t.Errorf("config leaked to another stack: %+v", view.Config.Layers[processing.RawToNote])
	}
}

func TestPipelineBadInput(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw[0])
	cases := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"unknown transition", "POST", "/v1/agents/claire/process", map[string]any{"transition": "raw_to_value"}, 400, "transition"},
		{"unknown process field", "POST", "/v1/agents/claire/process", map[string]any{"forced": true}, 400, ""},
		{"process body not JSON", "POST", "/v1/agents/claire/process", "{", 400, ""},
		{"batch too large", "PATCH", "/v1/agents/claire/processing", map[string]any{"layers": map[string]any{"raw_to_note": map[string]any{"batch_size": 101}}}, 400, "layers.raw_to_note.batch_size"},
		{"unknown layer field", "PATCH", "/v1/agents/claire/processing", map[string]any{"layers": map[string]any{"raw_to_note": map[string]any{"batch": 1}}}, 400, ""},
		{"unknown layer", "PATCH", "/v1/agents/claire/processing", map[string]any{"layers": map[string]any{"raw_to_nothing": map[string]any{}}}, 400, "layers"},
		{"expiry 0", "PATCH", "/v1/agents/claire/processing", map[string]any{"suggestion_expiry_hours": 0}, 400, "suggestion_expiry_hours"},
		{"bad status", "GET", "/v1/agents/claire/suggestions?status=open", nil, 400, "status"},
		{"limit 0", "GET", "/v1/agents/claire/suggestions?limit=0", nil, 400, "limit"},
		{"limit too large", "GET", "/v1/agents/claire/suggestions?limit=501", nil, 400, "limit"},
		{"missing agent", "GET", "/v1/agents/nobody/processing", nil, 404, ""},
		{"missing suggestion", "GET", "/v1/suggestions/0193-none", nil, 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.request(t, c.method, c.path, aliceKey, c.body)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.raw)
			}
			if c.field != "" {
				r.invalid(t, c.field)
			}
		})
	}
	// The failed writes left the configuration as it was.
	var view query.ProcessingView
	s.request(t, "GET", "/v1/agents/claire/processing", aliceKey, nil).must(t, http.StatusOK, &view)
	if view.Config.Layers[processing.RawToNote].BatchSize != 10 || len(view.Runs) != 0 {
		t.Errorf("state changed by bad input: %+v, %d runs", view.Config.Layers[processing.RawToNote], len(view.Runs))
	}
}

// Another user's agent or suggestion is not found on every endpoint.
func TestPipelineTenantIsolation(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	s.process(t, aliceKey, "claire", map[string]any{"force": true})
	sid := s.suggestions(t, aliceKey, "claire", "")[0].ID
	s.raws(t, bobKey, "bobs", "bob's own raw entry")
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/agents/claire/process"},
		{"GET", "/v1/agents/claire/processing"},
		{"PATCH", "/v1/agents/claire/processing"},
		{"GET", "/v1/agents/claire/suggestions"},
		{"GET", "/v1/agents/claire/anxiety"},
		{"GET", "/v1/agents/claire/raw"},
		{"GET", "/v1/suggestions/" + sid},
		{"POST", "/v1/suggestions/" + sid + "/accept"},
		{"POST", "/v1/suggestions/" + sid + "/reject"},
		{"POST", "/v1/suggestions/" + sid + "/dismiss"},
	} {
		var body any
		if c.method != "GET" {
			body = map[string]any{}
		}
		wantError(t, s.request(t, c.method, c.path, bobKey, body), http.StatusNotFound, "not_found")
		wantError(t, s.request(t, c.method, c.path, "", body), http.StatusUnauthorized, "unauthorized")
	}
	if sg := s.suggestions(t, aliceKey, "claire", "?status=pending"); len(sg) != 3 {
		t.Errorf("bob changed alice's suggestions: %d pending", len(sg))
	}
}

// A full tour of the GET endpoints writes nothing: the log's head and the
// read models' exports are unchanged.
func TestPipelineReadsNeverWrite(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	s.process(t, aliceKey, "claire", map[string]any{"force": true})
	sid := s.suggestions(t, aliceKey, "claire", "")[0].ID
	head, mems, sugg := s.head(t), s.export(t), s.exportSuggestions(t)
	s.clock.Advance(400 * time.Hour) // past every expiry, and raw aging
	for _, path := range []string{"/v1/agents/claire/processing", "/v1/agents/claire/suggestions", "/v1/agents/claire/suggestions?status=expired",
		"/v1/suggestions/" + sid, "/v1/agents/claire/anxiety", "/v1/agents/claire/raw?processed=false"} {
		s.request(t, "GET", path, aliceKey, nil).must(t, http.StatusOK, nil)
	}
	if s.head(t) != head || !bytes.Equal(s.export(t), mems) || !bytes.Equal(s.exportSuggestions(t), sugg) {
		t.Error("GET endpoints wrote")
	}
}

func (s *stack) exportSuggestions(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.suggest.Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Rebuilding the suggestions read model from the log gives the state the
// incremental projection built.
func TestSuggestionsReplayEquivalence(t *testing.T) {
	t.Parallel()
	onEachReadModelBackend(t, stackOptions{fixedAuth: true}, func(t *testing.T, s *stack) {
		s.raws(t, aliceKey, "claire", goldenRaw...)
		s.raws(t, aliceKey, "gone", goldenRaw...)
		s.process(t, aliceKey, "claire", map[string]any{"force": true})
		s.process(t, aliceKey, "gone", map[string]any{"force": true})
		list := s.suggestions(t, aliceKey, "claire", "")
		s.request(t, "POST", "/v1/suggestions/"+list[0].ID+"/accept", aliceKey, nil).must(t, http.StatusOK, nil)
		s.request(t, "POST", "/v1/suggestions/"+list[1].ID+"/reject", aliceKey, map[string]any{"reason": "no"}).must(t, http.StatusOK, nil)
		s.request(t, "DELETE", "/v1/agents/gone", aliceKey, nil).must(t, http.StatusOK, nil)
		before := s.exportSuggestions(t)
		if !strings.Contains(string(before), "promoted") || strings.Contains(string(before), `"agent_id":"gone"`) {
			t.Fatalf("export before replay:\n%s", before)
		}
		ctx := context.Background()
		s.stopEngine()
		if err := s.suggest.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if len(s.exportSuggestions(t)) != 0 {
			t.Fatal("export after reset is not empty")
		}
		if err := s.engine.Rebuild(ctx, projections.SuggestionsProjectionName); err != nil {
			t.Fatal(err)
		}
		s.stopEngine = runInBackground(s.engine.Run)
		if after := s.exportSuggestions(t); !bytes.Equal(before, after) {
			t.Errorf("replay differs:\nbefore %s\nafter  %s", before, after)
		}
		// A new agent of the deleted one's name starts with a clean state.
		s.raws(t, aliceKey, "gone", "x")
		var view query.ProcessingView
		s.request(t, "GET", "/v1/agents/gone/processing", aliceKey, nil).must(t, http.StatusOK, &view)
		if len(view.Runs) != 0 || view.Raw.Processed != 0 || len(s.suggestions(t, aliceKey, "gone", "")) != 0 {
			t.Errorf("recreated agent inherits: %d runs, %+v", len(view.Runs), view.Raw)
		}
	})
}

// Concurrent accepts of one suggestion create one memory: one succeeds,
// the others conflict.
func TestConcurrentAcceptCreatesOneMemory(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	s.process(t, aliceKey, "claire", map[string]any{"force": true})
	sid := s.suggestions(t, aliceKey, "claire", "?status=pending")[0].ID
	const n = 8
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- s.request(t, "POST", "/v1/suggestions/"+sid+"/accept", aliceKey, nil).status
		}()
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for st := range statuses {
		count[st]++
	}
	if count[http.StatusOK] != 1 || count[http.StatusConflict] != n-1 {
		t.Errorf("statuses: %v", count)
	}
	if got, want := len(s.listAll(t, aliceKey, "agent_id=claire", 100)), len(goldenRaw)+1; got != want {
		t.Errorf("%d memories, want %d (the raws and one accepted)", got, want)
	}
}

func TestRawEntriesByProcessedState(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	ids := s.raws(t, aliceKey, "claire", goldenRaw...)
	s.request(t, "PATCH", "/v1/agents/claire/processing", aliceKey, map[string]any{"layers": map[string]any{"raw_to_note": map[string]any{"batch_size": 2}, "raw_to_episode": map[string]any{"enabled": false}}}).must(t, http.StatusOK, nil)
	s.process(t, aliceKey, "claire", map[string]any{"force": true, "transition": "raw_to_note"}) // the two oldest
	type rawJSON struct {
		ID            string   `json:"id"`
		Type          string   `json:"type"`
		Processed     bool     `json:"processed"`
		ProcessedInto []string `json:"processed_into"`
	}
	list := func(query string) []rawJSON {
		var out struct {
			Raw []rawJSON `json:"raw_entries"`
		}
		s.request(t, "GET", "/v1/agents/claire/raw"+query, aliceKey, nil).must(t, http.StatusOK, &out)
		return out.Raw
	}
	all, done, open := list(""), list("?processed=true"), list("?processed=false&limit=1")
	if len(all) != 4 || len(done) != 2 || len(open) != 1 {
		t.Fatalf("all %d, processed %d, unprocessed (limit 1) %d", len(all), len(done), len(open))
	}
	if done[1].ID != ids[goldenRaw[0]] || len(done[1].ProcessedInto) != 1 || !strings.HasPrefix(done[1].ProcessedInto[0], "suggestion:") || done[1].Type != "raw_entry" {
		t.Errorf("oldest raw: %+v", done[1])
	}
	if open[0].ID != ids[goldenRaw[3]] || open[0].Processed {
		t.Errorf("newest unprocessed: %+v", open[0])
	}
	wantError(t, s.request(t, "GET", "/v1/agents/claire/raw?processed=maybe", aliceKey, nil), http.StatusBadRequest, "invalid_request")
	wantError(t, s.request(t, "GET", "/v1/agents/claire/raw?limit=501", aliceKey, nil), http.StatusBadRequest, "invalid_request")
	wantError(t, s.request(t, "GET", "/v1/agents/claire/raw", bobKey, nil), http.StatusNotFound, "not_found")
}

// node is a second server's commands over the stack's event store and read
// models: its own memory commands and pipeline, so no in-process lock is
// shared with the stack's.
func (s *stack) node(t *testing.T) *commands.Pipeline {
	t.Helper()
	mem, err := commands.NewMemories(commands.MemoriesConfig{
		Writer: s.writer, Reader: s.memories, Embedder: s.catalog, DefaultModel: s.catalog.DefaultModel(), Queue: s.queue,
		Logger: s.logger, Now: s.clock.Now, EmbedTimeout: harnessVisibilityTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := commands.NewPipeline(commands.PipelineConfig{
		Writer: s.writer, Memories: s.memories, Suggestions: s.suggest, Creator: mem,
		Processor: processing.NewRuleExtractor(), States: processing.NewSnapshots(s.store), Now: s.clock.Now, Logger: s.logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Accepting one suggestion on several nodes at once (independent command
// instances over one event store, no lock in common) creates exactly one
// memory; every other accept is a suggestion_not_pending conflict. The
// accept is one append of the memory's events carrying the promotion, so
// no crash can separate the memory from its promotion.
func TestAcceptAcrossNodesCreatesOneMemory(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	s.process(t, aliceKey, "claire", map[string]any{"force": true})
	pending := s.suggestions(t, aliceKey, "claire", "?status=pending")
	if len(pending) < 2 {
		t.Fatalf("want two pending suggestions, have %d", len(pending))
	}
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorKey, ID: "key-alice", UserID: alice}}
	ctx := context.Background()
	for _, sg := range pending[:2] {
		nodes := []*commands.Pipeline{s.node(t), s.node(t), s.node(t), s.node(t)}
		type outcome struct {
			acc commands.Accepted
			err error
		}
		outcomes := make(chan outcome, len(nodes))
		head, err := s.store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, n := range nodes {
			wg.Go(func() {
				acc, err := n.Accept(ctx, meta, sg.ID, commands.AcceptOverrides{})
				outcomes <- outcome{acc, err}
			})
		}
		wg.Wait()
		close(outcomes)
		var made []commands.Accepted
		for o := range outcomes {
			switch {
			case o.err == nil:
				made = append(made, o.acc)
			case domain.ErrorKind(o.err) != domain.KindConflict || !strings.Contains(o.err.Error(), "suggestion_not_pending") && !strings.Contains(o.err.Error(), "accepted already"):
				t.Errorf("a losing accept failed with %v, want a suggestion_not_pending conflict", o.err)
			}
		}
		if len(made) != 1 {
			t.Fatalf("%d accepts succeeded, want exactly 1", len(made))
		}
		want := commands.PromotedMemoryID(sg.ID)
		if made[0].Memory.ID != want || made[0].Suggestion.Status != processing.Promoted || made[0].Suggestion.PromotedTo != sg.MemoryType+":"+want {
			t.Fatalf("accepted: %+v, want memory %s promoted", made[0], want)
		}
		// Everything the accepts wrote is one append to the agent's
		// stream: the memory's creation carrying the promotion (and its
		// vector); nothing on the cognition stream.
		events, err := s.store.ReadAll(ctx, head, 100)
		if err != nil {
			t.Fatal(err)
		}
		var created []memory.MemoryCreated
		for _, e := range events {
			if e.Stream != memory.AgentStream(alice, "claire") {
				t.Errorf("accept wrote %s to stream %s", e.Type, e.Stream)
			}
			if e.Type == (memory.MemoryCreated{}).EventType() {
				var c memory.MemoryCreated
				if err := e.Decode(&c); err != nil {
					t.Fatal(err)
				}
				created = append(created, c)
			}
		}
		if len(created) != 1 || created[0].MemoryID != want || created[0].Promotes == nil || created[0].Promotes.SuggestionID != sg.ID {
			t.Fatalf("creations recorded: %+v", created)
		}
	}
	if got, want := len(s.listAll(t, aliceKey, "agent_id=claire", 100)), len(goldenRaw)+2; got != want {
		t.Errorf("%d memories, want %d (the raws and the two accepted)", got, want)
	}
	// Rejecting an accepted suggestion conflicts too; the processing view
	// shows the raw entry made into the memory, not the suggestion.
	wantError(t, s.request(t, "POST", "/v1/suggestions/"+pending[0].ID+"/reject", aliceKey, nil), http.StatusConflict, "suggestion_not_pending")
}

// A raw entry has one processed state: consumed by a processing pass, or
// marked processed by the client (content processed: true), which no pass
// takes then. The stats, the raw listing's filter and the processing view
// count the same entries.
func TestStatsAndRawListingAgreeOnProcessed(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.raws(t, aliceKey, "claire", goldenRaw...)
	byClient := s.create(t, aliceKey, "claire", "raw_entry", map[string]any{"content": "sorted out by hand", "processed": true}).ID
	forgotten := s.create(t, aliceKey, "claire", "raw_entry", map[string]any{"content": "never mind", "processed": true}).ID
	s.request(t, "DELETE", "/v1/memories/"+forgotten, aliceKey, nil).must(t, http.StatusOK, nil)
	s.request(t, "PATCH", "/v1/agents/claire/processing", aliceKey, map[string]any{"layers": map[string]any{"raw_to_note": map[string]any{"batch_size": 2}, "raw_to_episode": map[string]any{"enabled": false}}}).must(t, http.StatusOK, nil)
	passes := s.process(t, aliceKey, "claire", map[string]any{"force": true, "transition": "raw_to_note"}) // the two oldest
	for _, c := range passes[0].Consumed {
		if c.ID == byClient {
			t.Fatalf("a pass took the raw entry the client processed: %+v", passes[0])
		}
	}
	type rawJSON struct {
		ID            string   `json:"id"`
		Processed     bool     `json:"processed"`
		ProcessedInto []string `json:"processed_into"`
	}
	list := func(query string) []rawJSON {
		var out struct {
			Raw []rawJSON `json:"raw_entries"`
		}
		s.request(t, "GET", "/v1/agents/claire/raw"+query, aliceKey, nil).must(t, http.StatusOK, &out)
		return out.Raw
	}
	var st memory.Stats
	s.request(t, "GET", "/v1/agents/claire/stats", aliceKey, nil).must(t, http.StatusOK, &st)
	var view query.ProcessingView
	s.request(t, "GET", "/v1/agents/claire/processing", aliceKey, nil).must(t, http.StatusOK, &view)
	done, open := list("?processed=true"), list("?processed=false")
	if st.Raw.Processed != 3 || len(done) != 3 || view.Raw.Processed != 3 || st.Raw.Unprocessed != 2 || len(open) != 2 || view.Raw.Unprocessed != 2 {
		t.Fatalf("processed: stats %d, listing %d, processing view %d; unprocessed: stats %d, listing %d, processing view %d; want 3 and 2 everywhere",
			st.Raw.Processed, len(done), view.Raw.Processed, st.Raw.Unprocessed, len(open), view.Raw.Unprocessed)
	}
	if done[0].ID != byClient || !done[0].Processed || len(done[0].ProcessedInto) != 0 || len(done[2].ProcessedInto) != 1 {
		t.Fatalf("processed entries: %+v", done)
	}
	for _, e := range open {
		if e.Processed {
			t.Fatalf("the unprocessed listing holds a processed entry: %+v", e)
		}
	}
}
