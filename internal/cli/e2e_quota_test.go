package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/engram-memory/engram/internal/testserver"
)

// TestServeQuotaFlags: the quota flags, --max-keys-per-user and their
// ENGRAM_* twins reach the running server.
func TestServeQuotaFlags(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startServer(t, dataDir, []string{"ENGRAM_QUOTA_AGENTS_PER_USER=1"}, "--quota-memories-per-agent", "2", "--max-keys-per-user", "1")
	key := testserver.Register(t, p.BaseURL, dataDir, "quota@example.com")
	for i, step := range []struct {
		agent  string
		status int
		code   string
	}{{"a", 201, ""}, {"a", 201, ""}, {"a", 403, "quota_memories_per_agent"}, {"b", 403, "quota_agents"}} {
		status, err := call(t, "POST", p.BaseURL+"/v1/memories", key,
			map[string]any{"agent_id": step.agent, "type": "note", "content": map[string]any{"content": fmt.Sprint("note ", i)}}, nil)
		if status != step.status || (step.code != "" && !strings.Contains(fmt.Sprint(err), `"code":"`+step.code+`"`)) {
			t.Errorf("note %d in %s: %d %v, want %d %s", i, step.agent, status, err, step.status, step.code)
		}
	}
	// Verification created the user's one key.
	status, err := call(t, "POST", p.BaseURL+"/v1/auth/keys", key, map[string]any{"name": "a second key"}, nil)
	if status != 409 || !strings.Contains(fmt.Sprint(err), `"code":"key_limit_reached"`) {
		t.Errorf("a second key under --max-keys-per-user 1: %d %v, want 409 key_limit_reached", status, err)
	}
}
