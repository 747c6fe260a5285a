package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/engram-memory/engram/internal/testserver"
)

// TestCognitionEndToEnd drives stack cognition through the real binary:
// settings, provenance enforcement and trees, a strength action, stats,
// the audit trails and maintenance mode; then rebuilds the provenance and
// audit projections by name on the stopped data dir and checks a
// restarted server answers the same.
func TestCognitionEndToEnd(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startServer(t, dataDir, nil, "--ip-rate-limit", "0")
	key := testserver.Register(t, p.BaseURL, dataDir, "cognition@example.com")
	base := p.BaseURL + "/v1"
	mustCall := func(method, path string, body, out any) {
		t.Helper()
		if _, err := call(t, method, base+path, key, body, out); err != nil {
			t.Fatal(err)
		}
	}
	var raw, ep struct{ ID string }
	mustCall("POST", "/memories", map[string]any{"agent_id": "e2e", "type": "raw_entry", "content": map[string]any{"content": "deployed on friday"}}, &raw)
	mustCall("PATCH", "/agents/e2e/settings", map[string]any{"stack_state": "active"}, nil)
	status, err := call(t, "POST", base+"/memories", key, map[string]any{"agent_id": "e2e", "type": "episode", "content": map[string]any{"objective": "o", "outcome": "x"}}, nil)
	if status != http.StatusBadRequest || err == nil || !strings.Contains(err.Error(), "provenance_violation") {
		t.Fatalf("a sourceless episode in an active stack: %d %v", status, err)
	}
	mustCall("POST", "/memories", map[string]any{"agent_id": "e2e", "type": "episode", "content": map[string]any{"objective": "deploy", "outcome": "fine"},
		"derived_from": []string{"raw:" + raw.ID}}, &ep)
	mustCall("POST", "/memories/"+ep.ID+"/verify", map[string]any{"reason": "confirmed"}, nil)

	type answers struct {
		tree, audit, account, stats string
	}
	read := func(base string) answers {
		var a answers
		for _, q := range []struct {
			path string
			out  *string
		}{
			{"/memories/" + raw.ID + "/provenance?direction=down", &a.tree},
			{"/agents/e2e/audit", &a.audit},
			{"/audit", &a.account},
			{"/agents/e2e/stats", &a.stats},
		} {
			var v any
			if _, err := call(t, "GET", base+q.path, key, nil, &v); err != nil {
				t.Fatal(err)
			}
			*q.out = fmt.Sprint(v)
		}
		return a
	}
	before := read(base)
	if !strings.Contains(before.tree, ep.ID) || !strings.Contains(before.audit, "verify") || !strings.Contains(before.account, "register") ||
		!strings.Contains(before.stats, "episode:1") {
		t.Fatalf("answers before the rebuild: %+v", before)
	}

	mustCall("PATCH", "/agents/e2e/settings", map[string]any{"stack_state": "maintenance"}, nil)
	status, err = call(t, "POST", base+"/memories", key, map[string]any{"agent_id": "e2e", "type": "raw_entry", "content": map[string]any{"content": "x"}}, nil)
	if status != http.StatusConflict || err == nil || !strings.Contains(err.Error(), "stack_in_maintenance") {
		t.Fatalf("a write in maintenance: %d %v", status, err)
	}
	mustCall("PATCH", "/agents/e2e/settings", map[string]any{"stack_state": "active"}, nil)
	before = read(base)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"provenance", "audit", "memories"} {
		out, err := runCLI(t, context.Background(), "projections", "rebuild", name, "--data-dir", dataDir)
		if err != nil || !strings.Contains(out, "rebuilt") {
			t.Fatalf("rebuild %s: %v\n%s", name, err, out)
		}
	}
	q := startServer(t, dataDir, nil)
	if after := read(q.BaseURL + "/v1"); after != before {
		t.Fatalf("answers differ after the rebuild:\nbefore %+v\nafter  %+v", before, after)
	}
}
