package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// TestKillMidLoadLosesNoAcknowledgedWrite SIGKILLs the server while clients
// write, restarts it on the same data dir, and checks that every write a
// client saw acknowledged is there and the projections caught up.
func TestKillMidLoadLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startServer(t, dataDir, nil, "--ip-rate-limit", "0", "--rate-limit", "0")

	const writers = 4
	keys := make([]string, writers)
	for i := range keys {
		keys[i] = testserver.Register(t, p.BaseURL, dataDir, fmt.Sprintf("crash%d@example.com", i))
	}

	var mu sync.Mutex
	acked := map[int][]string{} // writer -> key ids created and acknowledged
	ackedTotal := 0             // of all writers; at 40, enough is closed
	enough := make(chan struct{})
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && i < 90; i++ {
				var created struct {
					ID string `json:"id"`
				}
				status, err := call(t, "POST", p.BaseURL+"/v1/auth/keys", keys[w], map[string]string{"name": fmt.Sprintf("k%d", i)}, &created)
				if err != nil || status != 201 {
					return // the server died under us: this write was not acknowledged
				}
				mu.Lock()
				acked[w] = append(acked[w], created.ID)
				if ackedTotal++; ackedTotal == 40 {
					close(enough)
				}
				mu.Unlock()
			}
		}(w)
	}
	// Let some writes land, then kill without warning.
	select {
	case <-enough:
	case <-time.After(20 * time.Second):
		t.Fatalf("fewer than 40 writes acknowledged in 20s\n%s", p.Log())
	}
	p.Kill()
	stop()
	wg.Wait()

	q := startServer(t, dataDir, nil)
	total := 0
	for w := 0; w < writers; w++ {
		var listing struct {
			Keys []struct {
				ID string `json:"id"`
			} `json:"keys"`
		}
		if _, err := call(t, "GET", q.BaseURL+"/v1/auth/keys", keys[w], nil, &listing); err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, k := range listing.Keys {
			have[k.ID] = true
		}
		for _, id := range acked[w] {
			if !have[id] {
				t.Errorf("writer %d: acknowledged key %s missing after restart", w, id)
			}
		}
		total += len(acked[w])
	}
	if total < 40 {
		t.Fatalf("only %d writes acknowledged before the kill", total)
	}
	out, err := runCLI(t, context.Background(), "projections", "status", "--data-dir", dataDir)
	if err != nil {
		t.Fatalf("projections status: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"accounts"`) {
		t.Fatalf("projections status does not list accounts:\n%s", out)
	}
	t.Logf("%d acknowledged writes survived SIGKILL", total)
}

// TestProjectionsRebuildCommand rebuilds a stopped data dir from the CLI and
// checks the server serves the same state afterwards.
func TestProjectionsRebuildCommand(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startServer(t, dataDir, nil, "--ip-rate-limit", "0")
	key := testserver.Register(t, p.BaseURL, dataDir, "rebuild@example.com")
	for i := 0; i < 5; i++ {
		if _, err := call(t, "POST", p.BaseURL+"/v1/auth/keys", key, map[string]string{"name": fmt.Sprintf("k%d", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var before, after struct {
		Keys []map[string]any `json:"keys"`
	}
	if _, err := call(t, "GET", p.BaseURL+"/v1/auth/keys", key, nil, &before); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	out, err := runCLI(t, context.Background(), "projections", "rebuild", "--data-dir", dataDir)
	if err != nil || !strings.Contains(out, "rebuilt") {
		t.Fatalf("rebuild: %v\n%s", err, out)
	}
	out, err = runCLI(t, context.Background(), "projections", "rebuild", "no-such-projection", "--data-dir", dataDir)
	if err == nil || !strings.Contains(out, "unknown projection") {
		t.Fatalf("rebuild of an unknown projection: %v\n%s", err, out)
	}

	q := startServer(t, dataDir, nil)
	if _, err := call(t, "GET", q.BaseURL+"/v1/auth/keys", key, nil, &after); err != nil {
		t.Fatal(err)
	}
	// The listing request itself is a use of the calling key, so its
	// last_used_at moves; everything else must be identical.
	for _, listing := range [][]map[string]any{before.Keys, after.Keys} {
		for _, k := range listing {
			if k["name"] == "default" {
				delete(k, "last_used_at")
			}
		}
	}
	if len(before.Keys) != 6 || fmt.Sprint(before.Keys) != fmt.Sprint(after.Keys) {
		t.Fatalf("keys differ after rebuild:\nbefore %v\nafter  %v", before.Keys, after.Keys)
	}
}
