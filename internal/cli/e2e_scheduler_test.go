package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// The real binary's background scheduler turns raw captures into
// suggestions without a /process call once a trigger fires, records the
// anxiety level it observed (read after a restart as previous_level), and
// stops cleanly; --process-interval 0 turns it off.
func TestSchedulerEndToEnd(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startServer(t, dataDir, nil, "--process-interval", "200ms")
	if !strings.Contains(p.Log(), "processing scheduler on") {
		t.Fatalf("the scheduler did not start:\n%s", p.Log())
	}
	key := testserver.Register(t, p.BaseURL, dataDir, "scheduler@example.com")
	if status, err := call(t, "POST", p.BaseURL+"/v1/memories", key, map[string]any{"agent_id": "ops", "type": "raw_entry",
		"content": map[string]any{"content": "Yesterday we deployed the billing service and it failed, then I learned to check migrations"}}, nil); err != nil || status != 201 {
		t.Fatalf("capture: %d %v", status, err)
	}
	if status, err := call(t, "PATCH", p.BaseURL+"/v1/agents/ops/processing", key, map[string]any{"layers": map[string]any{
		"raw_to_episode": map[string]any{"quantity_threshold": 1}}}, nil); err != nil || status != 200 {
		t.Fatalf("configure: %d %v", status, err)
	}
	var list struct {
		Suggestions []struct {
			MemoryType string `json:"memory_type"`
		} `json:"suggestions"`
	}
	deadline := time.Now().Add(time.Minute)
	for len(list.Suggestions) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no suggestion a minute after the capture:\n%s", p.Log())
		}
		time.Sleep(100 * time.Millisecond)
		if _, err := call(t, "GET", p.BaseURL+"/v1/agents/ops/suggestions", key, nil, &list); err != nil {
			t.Fatal(err)
		}
	}
	if list.Suggestions[0].MemoryType != "episode" {
		t.Errorf("suggestions: %+v", list.Suggestions)
	}
	var view struct {
		Runs []struct {
			Transition string `json:"transition"`
			Forced     bool   `json:"forced"`
			Skipped    bool   `json:"skipped"`
		} `json:"runs"`
	}
	if _, err := call(t, "GET", p.BaseURL+"/v1/agents/ops/processing", key, nil, &view); err != nil {
		t.Fatal(err)
	}
	// Only the due transition ran; nothing else was recorded, however
	// many sweeps passed.
	if len(view.Runs) != 1 || view.Runs[0].Transition != "raw_to_episode" || view.Runs[0].Forced || view.Runs[0].Skipped {
		t.Errorf("runs: %+v", view.Runs)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Log())
	}

	p = startServer(t, dataDir, nil, "--process-interval", "0")
	if strings.Contains(p.Log(), "processing scheduler on") {
		t.Error("--process-interval 0 started the scheduler")
	}
	var rep struct {
		PreviousLevel *struct {
			Level string `json:"level"`
		} `json:"previous_level"`
		HysteresisLevel string `json:"hysteresis_level"`
	}
	if _, err := call(t, "GET", p.BaseURL+"/v1/agents/ops/anxiety", key, nil, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.PreviousLevel == nil || rep.PreviousLevel.Level == "" {
		t.Errorf("the level the scheduler recorded did not survive the restart: %+v", rep)
	}
}
