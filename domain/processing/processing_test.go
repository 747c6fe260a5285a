package processing_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

func ptr[T any](v T) *T { return &v }

func TestDefaultConfigFollowsTheDigest(t *testing.T) {
	c := processing.DefaultConfig()
	if c.SuggestionExpiryHours != 168 || c.AutoPromote {
		t.Errorf("stack defaults: %+v", c)
	}
	want := map[processing.Transition][2]int{ // quantity, batch
		processing.RawToEpisode: {10, 10}, processing.RawToNote: {10, 10},
		processing.EpisodeToBelief: {5, 10}, processing.EpisodeToGoal: {5, 10},
		processing.EpisodeToRelationship: {3, 5}, processing.BeliefToValue: {5, 10}, processing.EpisodeToDrive: {5, 10},
	}
	for tr, w := range want {
		l := c.Layers[tr]
		if l.QuantityThreshold != w[0] || l.BatchSize != w[1] || !l.Enabled || l.ValenceThreshold != 3 || l.TimeThresholdHours != 24 || l.MaxPassesPerDay != 10 {
			t.Errorf("%s: %+v", tr, l)
		}
	}
}

func TestConfigPatchValidation(t *testing.T) {
	cases := []struct {
		name  string
		patch processing.ConfigPatch
		field string // "" = accepted
	}{
		{"expiry 1", processing.ConfigPatch{SuggestionExpiryHours: ptr(1)}, ""},
		{"expiry 0", processing.ConfigPatch{SuggestionExpiryHours: ptr(0)}, "suggestion_expiry_hours"},
		{"expiry over a year", processing.ConfigPatch{SuggestionExpiryHours: ptr(24*365 + 1)}, "suggestion_expiry_hours"},
		{"unknown transition", processing.ConfigPatch{Layers: map[string]processing.LayerPatch{"raw_to_value": {}}}, "layers"},
		{"batch 0", processing.ConfigPatch{Layers: map[string]processing.LayerPatch{"raw_to_note": {BatchSize: ptr(0)}}}, "layers.raw_to_note.batch_size"},
		{"batch 101", processing.ConfigPatch{Layers: map[string]processing.LayerPatch{"raw_to_note": {BatchSize: ptr(101)}}}, "layers.raw_to_note.batch_size"},
		{"batch 100", processing.ConfigPatch{Layers: map[string]processing.LayerPatch{"raw_to_note": {BatchSize: ptr(100)}}}, ""},
		{"cap 0 blocks and is allowed", processing.ConfigPatch{Layers: map[string]processing.LayerPatch{"raw_to_note": {MaxPassesPerDay: ptr(0)}}}, ""},
		{"cap negative", processing.ConfigPatch{Layers: map[string]processing.LayerPatch{"raw_to_note": {MaxPassesPerDay: ptr(-1)}}}, "layers.raw_to_note.max_passes_per_day"},
		{"quantity 0", processing.ConfigPatch{Layers: map[string]processing.LayerPatch{"episode_to_goal": {QuantityThreshold: ptr(0)}}}, "layers.episode_to_goal.quantity_threshold"},
		{"valence negative", processing.ConfigPatch{Layers: map[string]processing.LayerPatch{"episode_to_goal": {ValenceThreshold: ptr(-0.1)}}}, "layers.episode_to_goal.valence_threshold"},
		{"time 0 turns the time trigger off", processing.ConfigPatch{Layers: map[string]processing.LayerPatch{"episode_to_goal": {TimeThresholdHours: ptr(0.0)}}}, ""},
		{"model too long", processing.ConfigPatch{Layers: map[string]processing.LayerPatch{"episode_to_goal": {Model: ptr(strings.Repeat("m", 201))}}}, "layers.episode_to_goal.model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := processing.DefaultConfig()
			_, err := base.Apply(c.patch)
			if c.field == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			de, ok := domain.AsError(err)
			if !ok || de.Kind != domain.KindInvalid || de.Details["field"] != c.field {
				t.Fatalf("err = %v, want invalid %s", err, c.field)
			}
		})
	}
}

func TestConfigPatchLeavesTheOriginalAlone(t *testing.T) {
	base := processing.DefaultConfig()
	got, err := base.Apply(processing.ConfigPatch{AutoPromote: ptr(true), Layers: map[string]processing.LayerPatch{"raw_to_note": {Enabled: ptr(false), BatchSize: ptr(3)}}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.AutoPromote || got.Layers[processing.RawToNote].Enabled || got.Layers[processing.RawToNote].BatchSize != 3 || got.Layers[processing.RawToNote].QuantityThreshold != 10 {
		t.Errorf("patched: %+v", got)
	}
	if !base.Layers[processing.RawToNote].Enabled || base.AutoPromote {
		t.Errorf("original changed: %+v", base)
	}
}

func TestTriggers(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	src := func(n int, age time.Duration, arousal float64) []processing.Source {
		var out []processing.Source
		for range n {
			out = append(out, processing.Source{CreatedAt: now.Add(-age), Arousal: arousal})
		}
		return out
	}
	layer := processing.DefaultLayer(processing.EpisodeToBelief) // quantity 5, valence 3, time 24h
	noTime := layer
	noTime.TimeThresholdHours = 0
	cases := []struct {
		name  string
		t     processing.Transition
		l     processing.LayerConfig
		srcs  []processing.Source
		fires bool
		why   string
	}{
		{"nothing to do", processing.EpisodeToBelief, layer, nil, false, "no unprocessed"},
		{"quantity one short", processing.EpisodeToBelief, layer, src(4, time.Hour, 0), false, "below"},
		{"quantity reached", processing.EpisodeToBelief, layer, src(5, time.Hour, 0), true, "quantity"},
		{"arousal sum reached", processing.EpisodeToBelief, layer, src(3, time.Hour, 1.0), true, "valence"},
		{"arousal just short", processing.EpisodeToBelief, layer, src(3, time.Hour, 0.99), false, "below"},
		{"arousal ignored for raw", processing.RawToEpisode, processing.DefaultLayer(processing.RawToEpisode), src(3, time.Hour, 1.0), false, "below"},
		{"age reached", processing.EpisodeToBelief, layer, src(1, 24*time.Hour, 0), true, "time"},
		{"age just short", processing.EpisodeToBelief, layer, src(1, 24*time.Hour-time.Second, 0), false, "below"},
		{"time trigger off", processing.EpisodeToBelief, noTime, src(1, 1000*time.Hour, 0), false, "below"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := processing.Trigger(c.t, c.l, c.srcs, now)
			if st.Fires != c.fires || !strings.Contains(st.Reason, c.why) {
				t.Errorf("fires=%v reason=%q, want %v containing %q", st.Fires, st.Reason, c.fires, c.why)
			}
		})
	}
}

func TestPassGates(t *testing.T) {
	llm := processing.ProcessorInfo{Model: "gpt-x", Inference: true}
	rules := processing.ProcessorInfo{Model: processing.RulesModel}
	on := processing.DefaultLayer(processing.RawToEpisode)
	off := on
	off.Enabled = false
	wantsOther := on
	wantsOther.Model = "other"
	wantsRules := on
	wantsRules.Model = processing.RulesModel
	capZero := on
	capZero.MaxPassesPerDay = 0
	cases := []struct {
		name   string
		t      processing.Transition
		l      processing.LayerConfig
		p      processing.ProcessorInfo
		passes int
		want   string
	}{
		{"raw with rules", processing.RawToEpisode, on, rules, 0, ""},
		{"raw with a model", processing.RawToNote, on, llm, 0, ""},
		{"disabled", processing.RawToEpisode, off, llm, 0, processing.SkipDisabled},
		{"model mismatch", processing.RawToEpisode, wantsOther, llm, 0, processing.SkipModelMismatch},
		{"model pinned to rules", processing.RawToEpisode, wantsRules, rules, 0, ""},
		{"daily cap reached", processing.RawToEpisode, on, llm, 10, processing.SkipDailyCap},
		{"daily cap one left", processing.RawToEpisode, on, llm, 9, ""},
		{"cap 0 blocks", processing.RawToEpisode, capZero, llm, 0, processing.SkipDailyCap},
		{"values never without a model", processing.BeliefToValue, processing.DefaultLayer(processing.BeliefToValue), rules, 0, processing.SkipNeedsInference},
		{"beliefs need a model", processing.EpisodeToBelief, processing.DefaultLayer(processing.EpisodeToBelief), rules, 0, processing.SkipNeedsInference},
		{"values with a model", processing.BeliefToValue, processing.DefaultLayer(processing.BeliefToValue), llm, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, _ := processing.PassGate(c.t, c.l, c.p, c.passes); got != c.want {
				t.Errorf("gate = %q, want %q", got, c.want)
			}
		})
	}
}

func TestItemGates(t *testing.T) {
	protected := map[string]bool{"a": true, "b": true, "c": true, "d": true, "e": true}
	item := func(conf float64, n int) processing.Item {
		it := processing.Item{Confidence: conf}
		for i := range n {
			it.Sources = append(it.Sources, string(rune('a'+i)))
		}
		return it
	}
	cases := []struct {
		name    string
		t       processing.Transition
		it      processing.Item
		blocked bool
	}{
		{"belief ok", processing.EpisodeToBelief, item(0.6, 3), false},
		{"belief 2 sources", processing.EpisodeToBelief, item(0.9, 2), true},
		{"belief low confidence", processing.EpisodeToBelief, item(0.59, 3), true},
		{"value 5 beliefs", processing.BeliefToValue, item(0.7, 5), false},
		{"value 4 beliefs", processing.BeliefToValue, item(0.7, 4), true},
		{"value citing an unprotected belief", processing.BeliefToValue, item(0.7, 6), true},
		{"goal has no gate", processing.EpisodeToGoal, item(0.1, 1), false},
	}
	for _, c := range cases {
		if got := processing.ItemGate(c.t, c.it, processing.DefaultGates(), protected) != ""; got != c.blocked {
			t.Errorf("%s: blocked=%v, want %v", c.name, got, c.blocked)
		}
	}
}

func TestParseModelOutput(t *testing.T) {
	batch := []processing.Source{{ID: "e1"}, {ID: "e2"}, {ID: "e3"}}
	cases := []struct {
		name   string
		answer string
		items  int
		errs   int
	}{
		{"valid array", `[{"content":{"statement":"Tests catch regressions early"},"confidence":0.8,"source_ids":["e1","e2","e3"]}]`, 1, 0},
		{"fenced", "```json\n[{\"content\":{\"statement\":\"Tests catch regressions\"},\"source_ids\":[\"e1\"]}]\n```", 1, 0},
		{"empty array", `[]`, 0, 0},
		{"not JSON", `Sure! Here are some beliefs:`, 0, 1},
		{"object not array", `{"content":{}}`, 0, 1},
		{"unknown item field", `[{"content":{"statement":"x is y"},"source_ids":["e1"],"extra":1}]`, 0, 1},
		{"trailing garbage", `[] []`, 0, 1},
		{"missing required content field", `[{"content":{"confidence":0.5},"source_ids":["e1"]}]`, 0, 1},
		{"source outside the batch", `[{"content":{"statement":"x is y"},"source_ids":["zz"]}]`, 0, 1},
		{"no sources", `[{"content":{"statement":"x is y"},"source_ids":[]}]`, 0, 1},
		{"confidence out of range", `[{"content":{"statement":"x is y"},"confidence":1.5,"source_ids":["e1"]}]`, 0, 1},
		{"one good one bad", `[{"content":{"statement":"x is y"},"source_ids":["e1"]},{"content":{},"source_ids":["e1"]}]`, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			items, errs := processing.ParseModelOutput(processing.EpisodeToBelief, c.answer, batch)
			if len(items) != c.items || len(errs) != c.errs {
				t.Fatalf("items=%d errs=%v, want %d/%d", len(items), errs, c.items, c.errs)
			}
			for _, err := range errs {
				if !errors.Is(err, processing.ErrMalformedOutput) {
					t.Errorf("error %v does not wrap ErrMalformedOutput", err)
				}
			}
			for _, it := range items {
				if it.Type != memory.Belief {
					t.Errorf("item type %s", it.Type)
				}
			}
		})
	}
}

func TestFingerprintIgnoresConfidenceAndSourceOrder(t *testing.T) {
	a := processing.Item{Type: memory.Belief, Content: json.RawMessage(`{"statement":"s","confidence":0.8}`), Confidence: 0.8, Sources: []string{"b", "a"}}
	b := processing.Item{Type: memory.Belief, Content: json.RawMessage(`{"confidence":0.8,"statement":"s"}`), Confidence: 0.6, Sources: []string{"a", "b"}}
	c := processing.Item{Type: memory.Belief, Content: json.RawMessage(`{"statement":"s","confidence":0.8}`), Sources: []string{"a"}}
	if processing.Fingerprint(a) != processing.Fingerprint(b) {
		t.Error("same proposal, different fingerprints")
	}
	if processing.Fingerprint(a) == processing.Fingerprint(c) {
		t.Error("different sources, same fingerprint")
	}
}

// Building the extractor compiles none of its patterns: every local
// command that reads builds it to name the processing view's model, and
// most never classify anything.
func TestRuleExtractorCompilesItsPatternsAtFirstUse(t *testing.T) {
	if allocs := testing.AllocsPerRun(5, func() { processing.NewRuleExtractor() }); allocs > 5 {
		t.Errorf("NewRuleExtractor: %.0f allocations, want at most 5 (no pattern compiled)", allocs)
	}
	if typ, _ := processing.NewRuleExtractor().Classify("Reminder: the docs are at https://example.com/docs"); typ != memory.Note {
		t.Errorf("first classification: %q, want note", typ)
	}
}

func TestRuleExtractorGolden(t *testing.T) {
	r := processing.NewRuleExtractor()
	batch := []processing.Source{
		{ID: "r1", Text: "I think caching always helps latency"},
		{ID: "r2", Text: "Yesterday we deployed the billing service and it failed, then I learned to check migrations"},
		{ID: "r3", Text: "Reminder: the docs are at https://example.com/docs"},
		{ID: "r4", Text: "ok"},
		{ID: "r5", Text: "blue green red yellow purple"},
	}
	cases := []struct {
		t    processing.Transition
		want []string // "type|source|content"
	}{
		{processing.RawToEpisode, []string{
			`episode|r2|{"objective":"Yesterday we deployed the billing service and it failed, then I learned to check migrations","outcome":"not recorded (extracted by rules)","outcome_type":"unknown","lessons":[],"emotional_valence":0,"emotional_arousal":0,"confidence":0.8,"strength":1,"is_protected":false,"source_type":"processing"}`,
		}},
		{processing.RawToNote, []string{
			`belief|r1|{"statement":"caching always helps latency","belief_type":"fact","scope":"world","confidence":0.5957,"strength":1,"is_protected":false,"source_type":"processing"}`,
			`note|r3|{"content":"Reminder: the docs are at https://example.com/docs","note_type":"note","confidence":0.8,"strength":1,"is_protected":false,"source_type":"processing"}`,
		}},
	}
	for _, c := range cases {
		items := r.Extract(c.t, batch)
		var got []string
		for _, it := range items {
			got = append(got, string(it.Type)+"|"+strings.Join(it.Sources, ",")+"|"+string(it.Content))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %s\nwant %s", c.t, strings.Join(got, "\n     "), strings.Join(c.want, "\n     "))
		}
	}
}

func TestSuggestionLifecycle(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ev := func(v uint64, p domain.Payload) domain.Event {
		raw, _ := json.Marshal(p)
		return domain.Event{Version: v, Type: p.EventType(), Payload: raw}
	}
	ref := processing.AgentRef{UserID: "u", AgentID: "a"}
	events := []domain.Event{
		ev(0, processing.PassRecorded{AgentRef: ref, Pass: processing.Pass{Transition: processing.RawToNote, At: now, Consumed: []processing.Consumed{{ID: "r1", Into: []string{"suggestion:s1"}}}}}),
		ev(1, processing.SuggestionCreated{AgentRef: ref, SuggestionID: "s1", Sources: []string{"raw_entry:r1"}, Fingerprint: "f1", CreatedAt: now, ExpiresAt: now.Add(168 * time.Hour)}),
		ev(2, processing.SuggestionCreated{AgentRef: ref, SuggestionID: "s2", Fingerprint: "f2", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}),
	}
	st, err := processing.Fold(events, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != 2 || st.PassesOn(processing.RawToNote, now) != 1 || !st.Consumed(processing.RawToNote, "r1") || st.Consumed(processing.RawToEpisode, "r1") {
		t.Fatalf("folded state: %+v", st)
	}
	if done, into := st.Processed("r1"); !done || strings.Join(into, ",") != "suggestion:s1" {
		t.Errorf("r1 processed=%v into=%v", done, into)
	}
	// s2 expires at now+1h exactly.
	if got := st.Suggestions["s2"].StatusAt(now.Add(time.Hour - time.Nanosecond)); got != processing.Pending {
		t.Errorf("before expiry: %s", got)
	}
	if got := st.Suggestions["s2"].StatusAt(now.Add(time.Hour)); got != processing.Expired {
		t.Errorf("at expiry: %s", got)
	}
	if fp := st.PendingFingerprints(now.Add(2 * time.Hour)); len(fp) != 1 || fp["f1"] != "s1" {
		t.Errorf("pending fingerprints: %v", fp)
	}
	if due := st.DueToExpire(now.Add(2 * time.Hour)); strings.Join(due, ",") != "s2" {
		t.Errorf("due to expire: %v", due)
	}
	if _, err := st.Resolve("s2", processing.Rejected, now.Add(2*time.Hour)); domain.ErrorKind(err) != domain.KindConflict {
		t.Errorf("resolving an expired suggestion: %v", err)
	}
	if _, err := st.Resolve("nope", processing.Rejected, now); domain.ErrorKind(err) != domain.KindNotFound {
		t.Errorf("resolving a missing suggestion: %v", err)
	}
	if _, err := st.Resolve("s1", processing.Promoted, now); err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(ev(3, processing.SuggestionResolved{AgentRef: ref, SuggestionID: "s1", Status: processing.Promoted, PromotedTo: "belief:m1", ResolvedAt: now})); err != nil {
		t.Fatal(err)
	}
	if _, into := st.Processed("r1"); strings.Join(into, ",") != "belief:m1" {
		t.Errorf("after promotion r1 into=%v", into)
	}
	if _, err := st.Resolve("s1", processing.Dismissed, now); domain.ErrorKind(err) != domain.KindConflict {
		t.Errorf("dismissing a promoted suggestion: %v", err)
	}
}

func TestItemGatesFollowSettings(t *testing.T) {
	g := processing.Gates{BeliefMinSources: 1, BeliefMinConfidence: 0.9, ValueMinSources: 1}
	it := processing.Item{Confidence: 0.8, Sources: []string{"x"}}
	if processing.ItemGate(processing.EpisodeToBelief, it, g, nil) == "" {
		t.Error("belief below a raised confidence gate passed")
	}
	if processing.ItemGate(processing.BeliefToValue, it, g, nil) != "" {
		t.Error("value with protection not required was held")
	}
}

func TestLint(t *testing.T) {
	rules := processing.LintRules{Enabled: true, MinLength: 10, MaxLength: 60, CheckFragments: true, CheckPrefixArtifacts: true, CheckTemplatedNoise: true}
	content := func(s string) json.RawMessage { b, _ := json.Marshal(map[string]string{"statement": s}); return b }
	cases := []struct {
		name, statement string
		typ             memory.Type
		rules           processing.LintRules
		fails           bool
	}{
		{"fine", "Tests catch regressions early", memory.Belief, rules, false},
		{"9 characters", "too short", memory.Belief, rules, true},
		{"10 characters", "just right", memory.Belief, rules, false},
		{"too long", strings.Repeat("long ", 13), memory.Value, rules, true},
		{"label prefix", "Belief: tests catch regressions", memory.Belief, rules, true},
		{"template noise", "Always {{placeholder}} before deploys", memory.Belief, rules, true},
		{"fragment", "Deploys fail when the migrations of the", memory.Belief, rules, true},
		{"notes are not linted", "x", memory.Note, rules, false},
		{"lint off", "x", memory.Belief, processing.LintRules{}, false},
	}
	for _, c := range cases {
		if got := processing.Lint(c.typ, content(c.statement), c.rules) != ""; got != c.fails {
			t.Errorf("%s: fails=%v, want %v", c.name, got, c.fails)
		}
	}
}

func TestRunsKeepTheLatestNewestFirst(t *testing.T) {
	var events []domain.Event
	for i := range 3*processing.RecentRuns + 7 {
		raw, _ := json.Marshal(processing.PassRecorded{Pass: processing.Pass{PassID: strconv.Itoa(i)}})
		events = append(events, domain.Event{Version: uint64(i), Type: processing.PassRecorded{}.EventType(), Payload: raw})
	}
	st, err := processing.Fold(events, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	runs := st.Runs(1000)
	if len(runs) != processing.RecentRuns || runs[0].PassID != strconv.Itoa(3*processing.RecentRuns+6) || runs[len(runs)-1].PassID != strconv.Itoa(2*processing.RecentRuns+7) {
		t.Errorf("runs: %d, first %s, last %s", len(runs), runs[0].PassID, runs[len(runs)-1].PassID)
	}
	if got := st.Runs(2); len(got) != 2 || got[1].PassID != strconv.Itoa(3*processing.RecentRuns+5) {
		t.Errorf("Runs(2) = %+v", got)
	}
}

// A snapshot advanced part by part on copies (as the pipeline does, call
// after call) is the state folding the whole stream at once gives, and
// every earlier snapshot is left as it was.
func TestApplyAllInPartsEqualsFold(t *testing.T) {
	events := cognitionEvents(2000)
	whole, err := processing.Fold(events, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []int{1, 7, 150, 1999} {
		st := processing.NewStateOf(time.Time{})
		var first *processing.State
		for i := 0; i < len(events); i += part {
			next := st.Clone()
			if err := next.ApplyAll(events[i:min(i+part, len(events))]); err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = next
			}
			st = next
		}
		if !reflect.DeepEqual(st, whole) {
			t.Fatalf("parts of %d: the state differs from the fold", part)
		}
		if want, _ := processing.Fold(events[:part], time.Time{}); !reflect.DeepEqual(first, want) {
			t.Fatalf("parts of %d: advancing a copy changed the first snapshot", part)
		}
	}
}

// A pass record's stored payload stays one flat object with the agent
// reference beside the pass's fields, so events written before Pass was
// split out decode alike, and the Pass alone carries no reference.
func TestPassRecordedPayloadIsFlat(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored := `{"user_id":"u","agent_id":"a","agent_created_at":"2026-01-01T00:00:00Z","pass_id":"p","transition":"raw_to_note","at":"2026-01-01T00:00:00Z","source_count":2}`
	var rec processing.PassRecorded
	if err := json.Unmarshal([]byte(stored), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.UserID != "u" || rec.AgentCreatedAt != at || rec.PassID != "p" || rec.Transition != processing.RawToNote || rec.SourceCount != 2 {
		t.Fatalf("decoded %+v", rec)
	}
	for name, v := range map[string]any{"record": rec, "pass": rec.Pass} {
		raw, _ := json.Marshal(v)
		var keys map[string]any
		_ = json.Unmarshal(raw, &keys)
		_, hasUser := keys["user_id"]
		if keys["pass_id"] != "p" || hasUser != (name == "record") {
			t.Errorf("%s encodes as %s", name, raw)
		}
	}
}
