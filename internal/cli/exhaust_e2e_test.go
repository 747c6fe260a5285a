package cli

import (
	"strings"
	"testing"
)

// TestCLIExhaustRawAndAudit: raw list filters by processed state,
// process exhaust runs to convergence in one process, the anxiety level
// it recorded is read by the next process (hysteresis survives the
// process boundary), and audit --account shows the owner's account trail
// apart from the stack's.
func TestCLIExhaustRawAndAudit(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	texts := []string{
		"I think caching always helps latency",
		"Yesterday we deployed the billing service and it failed, then I learned to check migrations",
		"Reminder: the docs are at https://example.com/docs",
	}
	for _, text := range texts {
		h.ok("raw", text)
	}
	if got := h.object("raw", "list", "--processed", "false")["raw_entries"].([]any); len(got) != 3 {
		t.Fatalf("unprocessed before exhaust: %d", len(got))
	}
	if rep := h.object("anxiety"); rep["previous_level"] != nil || rep["hysteresis_level"] != rep["overall_level"] {
		t.Fatalf("anxiety before any processing: %v", rep)
	}

	r := h.object("process", "exhaust", "--no-auto-promote")
	assertShape(t, "exhaust", r, "auto_promote", "converged", "convergence_reason", "cycles", "cycles_completed", "total_promotions", "total_suggestions")
	if r["converged"] != true || r["convergence_reason"] != "converged" || r["cycles_completed"] != float64(7) || r["total_promotions"] != float64(0) || r["total_suggestions"] != float64(3) {
		t.Fatalf("exhaust --no-auto-promote: %v", r)
	}
	cycle := r["cycles"].([]any)[0]
	assertShape(t, "cycle", cycle, "cycle", "errors", "inference_blocked", "intensity", "passes", "promotions", "sources", "suggestions")

	// Exhaust recorded the level: a new process reads it as previous_level.
	rep := h.object("anxiety")
	prev, ok := rep["previous_level"].(map[string]any)
	if !ok || prev["level"] != rep["hysteresis_level"] {
		t.Fatalf("anxiety after exhaust: %v", rep)
	}

	processed := h.object("raw", "list", "--processed", "true", "--limit", "2")["raw_entries"].([]any)
	if len(processed) != 2 {
		t.Fatalf("processed --limit 2: %d", len(processed))
	}
	entry := processed[0].(map[string]any)
	if entry["processed"] != true || len(entry["processed_into"].([]any)) == 0 || entry["type"] != "raw_entry" {
		t.Errorf("raw entry: %v", entry)
	}
	if got := h.object("raw", "list", "--processed", "false")["raw_entries"].([]any); len(got) != 0 {
		t.Errorf("unprocessed after exhaust: %d", len(got))
	}
	if out := h.ok("raw", "list").stdout; !strings.Contains(out, "PROCESSED") || strings.Count(out, "true") != 3 {
		t.Errorf("raw list printed:\n%s", out)
	}
	// `raw TEXT` still captures.
	if id := h.object("raw", "one more thought about the deploy")["id"]; id == nil {
		t.Error("raw capture after raw list")
	}

	out := h.ok("process", "exhaust", "--max-cycles", "1").stdout
	if !strings.Contains(out, "1 cycles") || !strings.Contains(out, "not converged (max_cycles)") {
		t.Errorf("process exhaust printed:\n%s", out)
	}
	h.fails(1, "", "process", "exhaust", "--max-cycles", "101")
	h.fails(1, "", "process", "exhaust", "--max-cycles", "0")
	h.fails(1, "", "raw", "list", "--processed", "maybe")
	h.fails(1, "", "raw", "list", "--limit", "501")
	h.fails(2, "", "process", "exhaust", "--bogus")

	// The stack's trail has its memories; the owner's account trail is
	// the account's own operations (none on a local stack), never the
	// stack's entries.
	stackTrail := h.object("audit")["entries"].([]any)
	if len(stackTrail) == 0 {
		t.Fatal("the stack's audit trail is empty")
	}
	account := h.object("audit", "--account")
	assertShape(t, "account audit", account, "entries", "next_before")
	if entries := account["entries"].([]any); len(entries) != 0 {
		t.Errorf("account trail has the stack's entries: %v", entries)
	}
	if out := h.ok("audit", "--account").stdout; !strings.Contains(out, "OPERATION") {
		t.Errorf("audit --account printed:\n%s", out)
	}
	h.fails(1, "", "audit", "--account", "--limit", "0")
}
