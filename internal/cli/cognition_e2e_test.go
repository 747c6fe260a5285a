package cli

import (
	"math"
	"strings"
	"testing"
)

// TestCLICognitionTour walks the life of a memory on a local stack through
// the cognition commands: a raw capture is processed by the rule-based
// processor into a suggestion, accepting it creates an episode derived
// from the raw entry, provenance shows the tree both ways, forget and
// recover change its strength, and the audit trail lists every operation.
func TestCLICognitionTour(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	raw := h.object("raw", "Today I deployed the new login service and it broke for Safari users; we rolled back and learned to canary first")
	rawID := raw["id"].(string)

	passes := h.object("process", "--force")["passes"].([]any)
	if len(passes) == 0 {
		t.Fatal("process --force ran no transition")
	}
	assertHasKeys(t, "pass", passes[0], "pass_id", "transition", "model", "forced", "skipped", "source_count", "suggestions")
	if out := h.ok("process", "--transition", "raw_to_note").stdout; !strings.Contains(out, "raw_to_note") {
		t.Fatalf("process --transition raw_to_note printed:\n%s", out)
	}

	pending := h.object("suggestions", "list", "--status", "pending")["suggestions"].([]any)
	if len(pending) != 1 {
		t.Fatalf("%d pending suggestions, want 1: %v", len(pending), pending)
	}
	sg := pending[0].(map[string]any)
	sgID := sg["id"].(string)
	if sg["memory_type"] != "episode" || !jsonEqual(sg["sources"], []any{"raw_entry:" + rawID}) {
		t.Fatalf("suggestion = %v", sg)
	}
	if out := h.ok("suggestions", "list").stdout; !strings.Contains(out, sgID) || !strings.Contains(out, "pending") {
		t.Fatalf("suggestions list printed:\n%s", out)
	}
	if shown := h.object("suggestions", "show", sgID); !jsonEqual(shown, sg) {
		t.Fatalf("suggestions show = %v, want %v", shown, sg)
	}

	accepted := h.object("suggestions", "accept", sgID, "--tag", "ops")
	assertShape(t, "accepted", accepted, "suggestion", "memory")
	assertShape(t, "accepted.memory", accepted["memory"], "type", "id", "created_at", "embedding")
	episodeID := accepted["memory"].(map[string]any)["id"].(string)
	if st := accepted["suggestion"].(map[string]any)["status"]; st != "promoted" {
		t.Fatalf("accepted suggestion status = %v", st)
	}
	episode := h.object("show", episodeID)
	if !jsonEqual(episode["derived_from"], []any{"raw_entry:" + rawID}) || !jsonEqual(episode["tags"], []any{"auto-suggested", "ops"}) {
		t.Fatalf("accepted episode = %v", episode)
	}
	h.fails(1, "", "suggestions", "accept", sgID) // only a pending suggestion can be accepted

	// Reject and dismiss resolve a pending suggestion and create nothing.
	for _, verb := range []struct{ command, status string }{{"reject", "rejected"}, {"dismiss", "dismissed"}} {
		h.ok("raw", "Today I shipped the billing migration and it broke for EU customers; we rolled back and learned to "+verb.command+" untested plans")
		h.ok("process", "--force", "--transition", "raw_to_episode")
		next := h.object("suggestions", "list", "--status", "pending")["suggestions"].([]any)
		if len(next) != 1 {
			t.Fatalf("before %s: %d pending suggestions, want 1", verb.command, len(next))
		}
		id := next[0].(map[string]any)["id"].(string)
		resolved := h.object("suggestions", verb.command, id, "--reason", "not worth keeping")
		if resolved["status"] != verb.status || resolved["resolution_reason"] != "not worth keeping" || resolved["promoted_to"] != nil {
			t.Fatalf("suggestions %s = %v", verb.command, resolved)
		}
	}

	up := h.object("provenance", episodeID, "--direction", "up")
	assertShape(t, "provenance", up, "id", "type", "direction", "depth", "up", "down")
	if children := up["up"].(map[string]any)["nodes"].([]any); len(children) != 1 || children[0].(map[string]any)["id"] != rawID {
		t.Fatalf("provenance up = %v", up["up"])
	}
	if up["down"] != nil {
		t.Fatalf("--direction up returned a down tree: %v", up["down"])
	}
	down := h.object("provenance", rawID, "--direction", "down")
	if children := down["down"].(map[string]any)["nodes"].([]any); len(children) != 1 || children[0].(map[string]any)["id"] != episodeID {
		t.Fatalf("provenance down = %v", down["down"])
	}
	if out := h.ok("provenance", episodeID).stdout; !strings.Contains(out, "up (sources):") || !strings.Contains(out, "down (derived):") || !strings.Contains(out, rawID) {
		t.Fatalf("provenance printed:\n%s", out)
	}

	h.ok("forget", episodeID)
	recovered := h.object("recover", episodeID)
	// Strength decays from the recovery on the wall clock: a loaded
	// machine reads it a few seconds later, a hair under 0.25.
	if s, _ := recovered["strength"].(float64); recovered["forgotten"] != false || math.Abs(s-0.25) > 1e-6 || recovered["tier"] != "weak" {
		t.Fatalf("recovered = %v", recovered)
	}
	if weakened := h.object("weaken", episodeID, "--by", "0.2"); weakened["strength"].(float64) >= 0.25 {
		t.Fatalf("weaken --by 0.2 left strength %v", weakened["strength"])
	}
	if verified := h.object("verify", episodeID, "--reason", "checked the logs"); verified["verification_count"] != 1.0 {
		t.Fatalf("verified = %v", verified)
	}
	if p := h.object("protect", episodeID); p["is_protected"] != true {
		t.Fatalf("protect = %v", p)
	}
	if r := h.fails(1, "", "forget", episodeID); !strings.Contains(r.stderr, "protected") {
		t.Fatalf("forget of a protected memory: %s", r.stderr)
	}
	if p := h.object("unprotect", episodeID); p["is_protected"] != false {
		t.Fatalf("unprotect = %v", p)
	}

	page := h.object("audit", "--limit", "20")
	assertShape(t, "audit", page, "entries", "next_before")
	var ops []string
	for _, e := range page["entries"].([]any) {
		ops = append(ops, e.(map[string]any)["operation"].(string))
	}
	for _, want := range []string{"create", "forget", "recover", "weaken", "verify", "protect", "unprotect"} {
		if !strings.Contains(" "+strings.Join(ops, " ")+" ", " "+want+" ") {
			t.Errorf("audit operations %v lack %s", ops, want)
		}
	}
	first := h.object("audit", "--limit", "2")
	if len(first["entries"].([]any)) != 2 || first["next_before"] == nil {
		t.Fatalf("audit --limit 2 = %v", first)
	}
	if next := h.object("audit", "--limit", "2", "--before", first["next_before"].(string)); jsonEqual(next["entries"], first["entries"]) {
		t.Fatal("audit --before returned the same page")
	}

	stats := h.object("stats")
	assertHasKeys(t, "stats", stats, "agent_id", "total", "by_type", "forgotten", "suggestions", "raw")
	if sg := stats["suggestions"].(map[string]any); stats["total"] != 4.0 || sg["promoted"] != 1.0 || sg["rejected"] != 1.0 || sg["dismissed"] != 1.0 {
		t.Fatalf("stats = %v", stats)
	}
	anxiety := h.object("anxiety")
	assertShape(t, "anxiety", anxiety, "overall_score", "overall_level", "overall_confidence", "dimensions", "recommendations", "computed_at",
		"previous_level", "hysteresis_level")
	if out := h.ok("anxiety").stdout; !strings.HasPrefix(out, "overall ") {
		t.Fatalf("anxiety printed:\n%s", out)
	}
}

// TestCLISettingsAndProcessingConfig: settings and the processing
// configuration are read and changed by KEY VALUE; maintenance refuses a
// capture with the API's code; bad keys and values change nothing.
func TestCLISettingsAndProcessingConfig(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	h.ok("note", "--content", "a first note")

	settings := h.object("settings")
	assertHasKeys(t, "settings", settings, "agent_id", "stack_state", "enforce_provenance", "lazy_decay", "lint_rules", "promotion_gates", "updated_at")
	if settings["stack_state"] != "initializing" || settings["updated_at"] != nil {
		t.Fatalf("default settings = %v", settings)
	}
	changed := h.object("settings", "set", "lint_rules.min_length", "5", "promotion_gates.belief_min_confidence", "0.7", "lazy_decay", "false")
	lint, gates := changed["lint_rules"].(map[string]any), changed["promotion_gates"].(map[string]any)
	if lint["min_length"] != 5.0 || lint["max_length"] != 2000.0 || gates["belief_min_confidence"] != 0.7 || changed["lazy_decay"] != false {
		t.Fatalf("settings after set = %v", changed)
	}
	if got := h.object("settings", "get"); !jsonEqual(got, changed) {
		t.Fatalf("settings get = %v, want %v", got, changed)
	}

	h.ok("settings", "set", "stack_state", "maintenance")
	r := h.fails(1, "", "note", "--content", "refused", "--json")
	var failure cliErrorJSON
	if err := jsonUnmarshal(r.stderr, &failure); err != nil || failure.Error.Code != "stack_in_maintenance" {
		t.Fatalf("capture in maintenance: %v\n%s", err, r.stderr)
	}
	if r := h.fails(1, "", "note", "--content", "refused"); !strings.Contains(r.stderr, "maintenance") {
		t.Fatalf("capture in maintenance printed: %s", r.stderr)
	}
	h.ok("settings", "set", "stack_state", "active", "enforce_provenance", "false")
	h.ok("note", "--content", "accepted again")

	cfg := h.object("processing")
	assertShape(t, "processing", cfg, "config", "processor", "triggers", "runs", "raw")
	if cfg["processor"].(map[string]any)["model"] != "rules" {
		t.Fatalf("processor = %v", cfg["processor"])
	}
	if out := h.ok("processing").stdout; !strings.HasPrefix(out, "processor rules") || !strings.Contains(out, "raw_to_episode") {
		t.Fatalf("processing printed:\n%s", out)
	}
	set := h.object("processing", "set", "auto_promote", "true", "layers.raw_to_episode.quantity_threshold", "2", "layers.episode_to_goal.enabled", "false")
	config := set["config"].(map[string]any)
	layers := config["layers"].(map[string]any)
	if config["auto_promote"] != true || layers["raw_to_episode"].(map[string]any)["quantity_threshold"] != 2.0 || layers["episode_to_goal"].(map[string]any)["enabled"] != false {
		t.Fatalf("processing after set = %v", config)
	}
	if got := h.object("processing", "get")["config"]; !jsonEqual(got, config) {
		t.Fatalf("processing get = %v, want %v", got, config)
	}

	before := h.object("settings")
	beforeCfg := h.object("processing")["config"]
	cases := []struct {
		name     string
		code     int
		args     []string
		inStderr string
	}{
		{"unknown setting", 1, []string{"settings", "set", "colour", "red"}, `unknown setting "colour"`},
		{"bad state", 1, []string{"settings", "set", "stack_state", "asleep"}, "stack_state must be initializing, active or maintenance"},
		{"bad range", 1, []string{"settings", "set", "promotion_gates.belief_min_confidence", "2"}, "belief_min_confidence must be between 0 and 1"},
		{"key without value", 2, []string{"settings", "set", "lazy_decay", "true", "stack_state"}, "has no value"},
		{"key twice", 2, []string{"settings", "set", "lazy_decay", "true", "lazy_decay", "false"}, "given twice"},
		{"settings subcommand", 2, []string{"settings", "delete"}, `unknown subcommand "delete"`},
		{"unknown layer", 1, []string{"processing", "set", "layers.raw_to_dream.enabled", "true"}, "raw_to_dream"},
		{"unknown processing key", 1, []string{"processing", "set", "speed", "fast"}, "speed"},
		{"bad processing value", 1, []string{"processing", "set", "auto_promote", "maybe"}, "auto_promote"},
		{"process transition", 1, []string{"process", "--transition", "raw_to_dream"}, "raw_to_dream"},
		{"suggestions limit", 1, []string{"suggestions", "list", "--limit", "0"}, "--limit must be between 1 and"},
		{"suggestions status", 1, []string{"suggestions", "list", "--status", "lost"}, "status"},
		{"suggestions subcommand", 2, []string{"suggestions", "approve", "x"}, `unknown subcommand "approve"`},
		{"unknown suggestion", 1, []string{"suggestions", "show", "01a2099e-0000-7000-8000-000000000000"}, "not found"},
		{"accept content not JSON", 1, []string{"suggestions", "accept", "x", "--content", "{objective"}, "--content must be a JSON object"},
		{"audit limit", 1, []string{"audit", "--limit", "0"}, "--limit must be between 1 and"},
		{"provenance direction", 1, []string{"provenance", "x", "--direction", "sideways"}, "direction must be up, down or both"},
		{"provenance depth", 1, []string{"provenance", "x", "--depth", "0"}, "--depth must be a positive integer"},
		{"provenance without id", 2, []string{"provenance"}, "wrong number of arguments"},
		{"weaken by", 1, []string{"weaken", "x", "--by", "1.5"}, "by must be in (0, 1]"},
		{"recover unknown", 1, []string{"recover", "01a2099e-0000-7000-8000-000000000000"}, "not found"},
		{"missing stack", 1, []string{"-s", "nowhere", "stats"}, `stack "nowhere" does not exist`},
		{"missing stack process", 1, []string{"-s", "nowhere", "process"}, `stack "nowhere" does not exist`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.in(t).fails(tc.code, "", tc.args...)
			if !strings.Contains(r.stderr, tc.inStderr) {
				t.Fatalf("stderr %q does not contain %q", r.stderr, tc.inStderr)
			}
		})
	}
	if after := h.object("settings"); !jsonEqual(after, before) {
		t.Fatalf("rejected commands changed the settings: %v, was %v", after, before)
	}
	if after := h.object("processing")["config"]; !jsonEqual(after, beforeCfg) {
		t.Fatalf("rejected commands changed the processing config: %v, was %v", after, beforeCfg)
	}
	if n := len(h.object("stacks", "list")["stacks"].([]any)); n != 1 {
		t.Fatalf("a read on a missing stack created it: %d stacks", n)
	}
}

// assertHasKeys checks that v is an object with at least these keys.
func assertHasKeys(t *testing.T, what string, v any, want ...string) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s = %v is not a JSON object", what, v)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("%s has no %q: %v", what, k, keysOf(t, v))
		}
	}
}
