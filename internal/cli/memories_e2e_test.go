package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// memoryKeys are the keys of a memory object (GET /memories/{id}).
var memoryKeys = []string{"id", "agent_id", "type", "content", "tags", "derived_from", "created_at", "updated_at", "forgotten", "forgotten_at", "embedding",
	"version", "strength", "tier", "is_protected", "last_verified_at", "verification_count"}

func TestCLICaptureEveryTypeThenReadIt(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	cases := []struct {
		args        []string
		wantType    string
		wantContent map[string]any
	}{
		{[]string{"episode", "--objective", "ship v2", "--outcome", "shipped late", "--outcome-type", "partial", "--lessons", "start early", "--lessons", "test more", "--emotional-valence", "-0.5", "--emotional-arousal", "0.3"},
			"episode", map[string]any{"objective": "ship v2", "outcome_type": "partial", "lessons": []any{"start early", "test more"}, "emotional_valence": -0.5}},
		{[]string{"belief", "--statement", "the sky is blue", "--belief-type", "observation", "--scope", "world", "--confidence", "0.9"},
			"belief", map[string]any{"statement": "the sky is blue", "belief_type": "observation", "confidence": 0.9}},
		{[]string{"note", "--content", "call Bob", "--note-type", "decision", "--speaker", "me", "--reason", "he asked"},
			"note", map[string]any{"content": "call Bob", "note_type": "decision", "speaker": "me", "reason": "he asked"}},
		{[]string{"value", "--name", "honesty", "--statement", "say what is true", "--priority", "90"},
			"value", map[string]any{"name": "honesty", "priority": 90.0}},
		{[]string{"goal", "--title", "learn Go", "--description", "finish the tour", "--goal-type", "aspiration", "--priority", "high", "--status", "paused"},
			"goal", map[string]any{"title": "learn Go", "priority": "high", "status": "paused"}},
		{[]string{"playbook", "--name", "deploy", "--description", "how to deploy", "--steps", "build", "--steps", "push :: to the registry", "--trigger-conditions", "release day", "--failure-modes", "red CI"},
			"playbook", map[string]any{"name": "deploy", "steps": []any{map[string]any{"action": "build"}, map[string]any{"action": "push", "details": "to the registry"}}, "trigger_conditions": []any{"release day"}}},
		{[]string{"raw", "an unprocessed thought", "--processed"},
			"raw_entry", map[string]any{"content": "an unprocessed thought", "source": "cli", "processed": true}},
		{[]string{"relationship", "--entity-name", "Alice", "--relationship-type", "colleague", "--entity-type", "person", "--notes", "reviews my code", "--sentiment", "0.7"},
			"relationship", map[string]any{"entity_name": "Alice", "relationship_type": "colleague", "sentiment": 0.7}},
		{[]string{"drive", "--drive-type", "curiosity", "--intensity", "0.6", "--focus-areas", "databases", "--is-protected"},
			"drive", map[string]any{"drive_type": "curiosity", "intensity": 0.6, "focus_areas": []any{"databases"}, "is_protected": true}},
	}
	for _, tc := range cases {
		t.Run(tc.wantType, func(t *testing.T) {
			h := h.in(t)
			created := h.object(append(tc.args, "--tag", "t1", "--tag", "t2")...)
			assertShape(t, "created", created, "type", "id", "created_at", "embedding")
			assertShape(t, "created.embedding", created["embedding"], "model", "dimensions", "status")
			if created["type"] != tc.wantType {
				t.Fatalf("type = %v, want %s", created["type"], tc.wantType)
			}
			wantStatus := "embedded"
			if tc.wantType == "drive" {
				wantStatus = "not_indexed"
			}
			if s := created["embedding"].(map[string]any)["status"]; s != wantStatus {
				t.Fatalf("embedding status = %v, want %s", s, wantStatus)
			}
			shown := h.object("show", created["id"].(string))
			assertShape(t, "show", shown, memoryKeys...)
			content := shown["content"].(map[string]any)
			for k, want := range tc.wantContent {
				if !jsonEqual(content[k], want) {
					t.Fatalf("content.%s = %#v, want %#v", k, content[k], want)
				}
			}
			if shown["agent_id"] != "default" || !jsonEqual(shown["tags"], []any{"t1", "t2"}) {
				t.Fatalf("agent_id %v tags %v", shown["agent_id"], shown["tags"])
			}
		})
	}
	page := h.object("list", "--type", "beliefs,note")
	assertShape(t, "list", page, "memories", "next_cursor")
	if n := len(page["memories"].([]any)); n != 2 {
		t.Fatalf("list --type beliefs,note: %d memories, want 2", n)
	}
	plain := h.ok("list", "--limit", "3").stdout
	if lines := strings.Split(strings.TrimSpace(plain), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[1], "just now") {
		t.Fatalf("plain list with --limit 3 should be a header and 3 aligned rows:\n%s", plain)
	}
}

func TestCLIRawReadsStdinAndDerivedFromLinks(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	r := h.run("text from a pipe\n", "-s", "pipes", "raw", "--json")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	raw := h.object("-s", "pipes", "list")["memories"].([]any)[0].(map[string]any)
	if c := raw["content"].(map[string]any)["content"]; c != "text from a pipe" {
		t.Fatalf("raw content = %q", c)
	}
	belief := h.object("-s", "pipes", "belief", "--statement", "pipes carry text", "--derived-from", "raw:"+raw["id"].(string))
	shown := h.object("-s", "pipes", "show", belief["id"].(string))
	if !jsonEqual(shown["derived_from"], []any{"raw_entry:" + raw["id"].(string)}) {
		t.Fatalf("derived_from = %v", shown["derived_from"])
	}
	h.fails(1, "", "-s", "pipes", "belief", "--statement", "x", "--derived-from", "raw:01a2093d-d6d8-7c1b-b9bf-6b7d7b16de17")
}

func TestCLIEditAndForget(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	id := h.object("belief", "--statement", "tea is better", "--tag", "drinks")["id"].(string)

	edited := h.object("edit", id, "--statement", "coffee is better", "--tag", "opinions")
	assertShape(t, "edit", edited, memoryKeys...)
	if c := edited["content"].(map[string]any); c["statement"] != "coffee is better" || !jsonEqual(edited["tags"], []any{"opinions"}) {
		t.Fatalf("edited = %v", edited)
	}
	h.fails(1, "", "edit", id, "--objective", "not a belief field")
	h.fails(1, "", "edit", id) // nothing to change
	if c := h.object("edit", id, "--unset", "scope", "--clear-tags"); !jsonEqual(c["tags"], []any{}) {
		t.Fatalf("--clear-tags left %v", c["tags"])
	}

	forgotten := h.object("forget", id)
	assertShape(t, "forget", forgotten, "id", "forgotten", "forgotten_at", "purged")
	if forgotten["forgotten"] != true || forgotten["forgotten_at"] == nil {
		t.Fatalf("forget = %v", forgotten)
	}
	if n := len(h.object("list")["memories"].([]any)); n != 0 {
		t.Fatalf("list shows %d memories after forget, want 0", n)
	}
	if n := len(h.object("list", "--include-forgotten")["memories"].([]any)); n != 1 {
		t.Fatalf("list --include-forgotten shows %d, want 1", n)
	}
	if h.object("show", id)["forgotten"] != true {
		t.Fatal("show of a forgotten memory should say forgotten: true")
	}
	purged := h.object("forget", id, "--purge")
	if purged["purged"] != true {
		t.Fatalf("forget --purge = %v", purged)
	}
	h.fails(1, "", "show", id)
}

func TestCLIStacksListAndDelete(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	h.ok("-s", "alpha", "note", "--content", "a")
	h.ok("note", "--content", "b", "--stack", "beta")
	h.run("", "note", "--content", "c", "--stack", "beta")
	list := h.object("stacks", "list")
	assertShape(t, "stacks list", list, "stacks")
	stacks := list["stacks"].([]any)
	if len(stacks) != 2 {
		t.Fatalf("stacks = %v", stacks)
	}
	assertShape(t, "stack", stacks[0], "stack", "path", "memory_count", "embedding_model", "dimensions", "created_at")
	if s := stacks[1].(map[string]any); s["stack"] != "beta" || s["memory_count"] != 2.0 {
		t.Fatalf("stacks[1] = %v", s)
	}

	refused := h.fails(1, "n\n", "stacks", "delete", "beta")
	if !strings.Contains(refused.stderr, "not confirmed") {
		t.Fatalf("refused delete said %q", refused.stderr)
	}
	h.fails(1, "", "stacks", "delete", "beta") // no answer is no
	if n := len(h.object("stacks", "list")["stacks"].([]any)); n != 2 {
		t.Fatalf("a refused delete removed a stack: %d left", n)
	}
	h.fails(0, "y\n", "stacks", "delete", "beta")
	deleted := h.object("stacks", "delete", "alpha", "--yes")
	if deleted["stack"] != "alpha" || deleted["deleted"] != true {
		t.Fatalf("delete --json = %v", deleted)
	}
	if n := len(h.object("stacks", "list")["stacks"].([]any)); n != 0 {
		t.Fatalf("%d stacks left", n)
	}
	h.fails(1, "", "stacks", "delete", "gamma", "--yes")
}

func TestCLIRejectsBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	h.ok("note", "--content", "the only memory")
	cases := []struct {
		name     string
		code     int
		args     []string
		inStderr string
	}{
		{"missing required field", 1, []string{"belief"}, "content.statement is required (--statement)"},
		{"not a number", 1, []string{"belief", "--statement", "x", "--confidence", "high"}, "--confidence must be a number"},
		{"out of range", 1, []string{"episode", "--objective", "a", "--outcome", "b", "--emotional-valence", "3"}, "emotional_valence"},
		{"bad enum", 1, []string{"goal", "--title", "t", "--status", "someday"}, "status"},
		{"bad created_at", 1, []string{"note", "--content", "x", "--created-at", "yesterday"}, "RFC 3339"},
		{"too many tags", 1, append([]string{"note", "--content", "x"}, manyTags(33)...), "limit is 32"},
		{"bad stack name", 1, []string{"-s", "no/slashes", "note", "--content", "x"}, "stack name"},
		{"unknown flag", 2, []string{"note", "--content", "x", "--colour", "red"}, "not defined: -colour"},
		{"unknown command", 2, []string{"remember"}, `unknown command "remember"`},
		{"raw with text twice", 2, []string{"raw", "a", "--content", "b"}, "not both"},
		{"list limit", 1, []string{"list", "--limit", "5000"}, "--limit must be between 1 and 1000"},
		{"list type", 1, []string{"list", "--type", "thoughts"}, "unknown memory type"},
		{"missing stack", 1, []string{"-s", "nowhere", "list"}, `stack "nowhere" does not exist`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.in(t).fails(tc.code, "", tc.args...)
			if !strings.Contains(r.stderr, tc.inStderr) {
				t.Fatalf("stderr %q does not contain %q", r.stderr, tc.inStderr)
			}
		})
	}
	if n := len(h.object("list")["memories"].([]any)); n != 1 {
		t.Fatalf("rejected commands wrote: %d memories, want 1", n)
	}
	stacks := h.object("stacks", "list")["stacks"].([]any)
	if len(stacks) != 1 {
		t.Fatalf("a rejected or read-only command created a stack: %v", stacks)
	}

	// With --json the failure is the API's error object, on stderr.
	r := h.fails(1, "", "belief", "--json")
	var failure map[string]any
	if err := jsonUnmarshal(r.stderr, &failure); err != nil {
		t.Fatalf("--json failure is not JSON: %v\n%s", err, r.stderr)
	}
	assertShape(t, "failure", failure, "success", "error")
	assertShape(t, "failure.error", failure["error"], "code", "message", "details")
	if e := failure["error"].(map[string]any); e["code"] != "invalid_request" || !jsonEqual(e["details"], map[string]any{"field": "content.statement"}) {
		t.Fatalf("failure = %v", failure)
	}
	if r.stdout != "" {
		t.Fatalf("a failure printed on stdout: %q", r.stdout)
	}
}

// manyTags is n distinct --tag flags.
func manyTags(n int) []string {
	var out []string
	for i := range n {
		out = append(out, "--tag", fmt.Sprintf("t%d", i))
	}
	return out
}

// TestCLICaptureTakesTheMainTextAsTheArgument: every capture command takes
// its main text (the field its memory's summary leads with) as the
// argument, as well as with its flag; both at once is a usage error. Each
// command's case has a stack of its own, so the cases run in parallel and
// the refused captures are counted against that stack alone.
func TestCLICaptureTakesTheMainTextAsTheArgument(t *testing.T) {
	t.Parallel()
	cases := []struct {
		command string
		text    string
		field   string   // the content field the argument fills
		more    []string // the other required flags
	}{
		{"episode", "ship v2", "objective", []string{"--outcome", "shipped late"}},
		{"belief", "the sky is blue", "statement", nil},
		{"note", "call Bob", "content", nil},
		{"value", "honesty", "name", []string{"--statement", "say what is true"}},
		{"goal", "learn Go", "title", nil},
		{"playbook", "deploy", "name", []string{"--description", "how to deploy"}},
		{"raw", "an unprocessed thought", "content", nil},
		{"relationship", "Alice", "entity_name", []string{"--relationship-type", "colleague"}},
		{"drive", "curiosity", "drive_type", nil},
	}
	var covered []string
	for _, tc := range cases {
		covered = append(covered, tc.command)
		t.Run(tc.command, func(t *testing.T) {
			t.Parallel()
			h := newCLIHome(t)
			flagName := "--" + strings.ReplaceAll(tc.field, "_", "-")
			// The argument may come before or after the flags.
			for _, args := range [][]string{
				append([]string{tc.command, tc.text}, tc.more...),
				append(append([]string{tc.command}, tc.more...), tc.text),
				append([]string{tc.command, flagName, tc.text}, tc.more...),
			} {
				var created struct{ ID string }
				if h.json(&created, args...); created.ID == "" {
					t.Fatalf("engram %s --json: no id", strings.Join(args, " "))
				}
				var shown struct{ Content map[string]any }
				if h.json(&shown, "show", created.ID); shown.Content[tc.field] != tc.text {
					t.Fatalf("engram %s: content.%s = %v, want %q", strings.Join(args, " "), tc.field, shown.Content[tc.field], tc.text)
				}
			}

			before := listedMemories(h)
			both := append([]string{tc.command, tc.text, flagName, "other"}, tc.more...)
			if r := h.run("", both...); r.code != exitUsage || !strings.Contains(r.stderr, "either as the argument or with "+flagName+", not both") {
				t.Fatalf("engram %s: exit %d (want %d), stderr %q", strings.Join(both, " "), r.code, exitUsage, r.stderr)
			}
			two := append([]string{tc.command, tc.text, "a second text"}, tc.more...)
			if r := h.run("", two...); r.code != exitUsage || !strings.Contains(r.stderr, "wrong number of arguments") {
				t.Fatalf("engram %s: exit %d (want %d), stderr %q", strings.Join(two, " "), r.code, exitUsage, r.stderr)
			}
			if after := listedMemories(h); after != before {
				t.Fatalf("a refused capture wrote: %d memories, then %d", before, after)
			}
		})
	}
	for _, ct := range captureTypes() {
		if !slices.Contains(covered, ct.command) {
			t.Errorf("no case for the capture command %s", ct.command)
		}
	}
}

// listedMemories is how many memories `engram list` shows in h's stack.
func listedMemories(h *cliHome) int {
	h.t.Helper()
	var page struct{ Memories []json.RawMessage }
	h.json(&page, "list", "--limit", "100")
	return len(page.Memories)
}
