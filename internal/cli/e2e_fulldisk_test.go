//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/testserver"
	"github.com/engram-memory/engram/internal/tmpfstest"
)

// answer is what the API said to one request.
type answer struct {
	status int
	code   string // the error code, "" on success
	data   json.RawMessage
}

// bounded answers within 20 seconds or fails the test: the requests
// here used to wait 30 seconds (writes) or more than 100 (every request
// after a restart on a full disk).
var bounded = &http.Client{Timeout: 20 * time.Second}

func ask(t *testing.T, method, url, key string, body any) answer {
	t.Helper()
	resp, err := bounded.Do(newJSONRequest(t, method, url, key, body))
	if err != nil {
		t.Fatalf("%s %s: no answer: %v", method, url, err)
	}
	defer resp.Body.Close()
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s %s: %d %s: %v", method, url, resp.StatusCode, raw, err)
	}
	return answer{status: resp.StatusCode, code: env.Error.Code, data: env.Data}
}

// awaitReadyz polls /readyz until its error code is code ("" for ready),
// for at most 30 seconds; the test goes on either way, so that what
// follows is checked too.
func awaitReadyz(t *testing.T, baseURL, code string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := ask(t, "GET", baseURL+"/readyz", "", nil)
		if a.code == code && (code != "" || a.status == http.StatusOK) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("/readyz still answers %d %q, want %q", a.status, a.code, code)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// contents lists the contents of agent's memories.
func contents(t *testing.T, apiURL, key, agent string) []string {
	t.Helper()
	a := ask(t, "GET", apiURL+"/memories?limit=100&agent_id="+agent, key, nil)
	if a.status != http.StatusOK {
		t.Fatalf("list memories: %d %s", a.status, a.code)
	}
	var page struct {
		Memories []struct {
			Content struct {
				Content string `json:"content"`
			} `json:"content"`
		} `json:"memories"`
	}
	if err := json.Unmarshal(a.data, &page); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range page.Memories {
		out = append(out, m.Content.Content)
	}
	slices.Sort(out)
	return out
}

// appendUnapplied appends to the log of the stopped server's dataDir an
// event that no projection has applied yet (one that concerns none of
// them, which still advances their checkpoints), and empties the
// write-ahead log, whose file would otherwise hold room for the
// projections' next commits.
func appendUnapplied(t *testing.T, dataDir string) {
	t.Helper()
	ctx := context.Background()
	stApp, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dataDir, Logger: slog.New(slog.DiscardHandler)}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := stApp.Core
	defer st.Close()
	if _, err := st.Store.Append(ctx, "unapplied", domain.ExpectNoStream, []domain.NewEvent{{Type: "Unrelated", SchemaVersion: 1, Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	// Without the write-ahead log's slack, the projections' next commit
	// needs new space.
	if err := st.DB.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
}

func note(content string) map[string]any {
	return map[string]any{"agent_id": "disk", "type": "notes", "content": map[string]string{"content": content}}
}

// A full disk refuses every write at once with 507 storage_full (nothing
// stored), says so on /readyz, keeps serving reads, and takes writes again
// once space is freed, without a restart and without losing an
// acknowledged write. Restarted on a full disk, the server serves reads
// and refuses writes the same way instead of hanging.
func TestFullDiskRefusesWritesClearlyAndRecoversWithoutRestart(t *testing.T) {
	t.Parallel()
	disk := tmpfstest.Mount(t, 48<<20)
	dataDir := filepath.Join(disk, "data")
	filler := filepath.Join(disk, "filler")
	s := startServer(t, dataDir, nil)
	key := testserver.Register(t, s.BaseURL, dataDir, "full@example.com")

	var acknowledged []string
	write := func(content string) answer {
		a := ask(t, "POST", s.APIURL()+"/memories", key, note(content))
		if a.status == http.StatusCreated {
			acknowledged = append(acknowledged, content)
		}
		return a
	}
	for i := range 5 {
		if a := write(fmt.Sprintf("before the disk filled %d", i)); a.status != http.StatusCreated {
			t.Fatalf("write with room: %d %s", a.status, a.code)
		}
	}

	tmpfstest.Fill(t, filler)
	awaitReadyz(t, s.BaseURL, "storage_full")
	var refused []string
	for _, tc := range []struct {
		name, path, key string
		body            any
	}{
		{"memory", "/memories", key, note("refused single")},
		{"batch", "/memories/batch", key, map[string]any{"agent_id": "disk", "memories": []any{
			map[string]any{"type": "notes", "content": map[string]string{"content": "refused batch"}},
		}}},
		{"register", "/auth/register", "", map[string]string{"email": "late@example.com"}},
		{"key creation", "/auth/keys", key, map[string]string{"name": "while full"}},
	} {
		if a := ask(t, "POST", s.APIURL()+tc.path, tc.key, tc.body); a.status != http.StatusInsufficientStorage || a.code != "storage_full" {
			t.Errorf("%s on a full disk: %d %q, want 507 storage_full", tc.name, a.status, a.code)
		}
	}
	refused = append(refused, "refused single", "refused batch")
	if got := contents(t, s.APIURL(), key, "disk"); !slices.Equal(got, acknowledged) {
		t.Errorf("reads on a full disk: %q, want %q", got, acknowledged)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	awaitReadyz(t, s.BaseURL, "")
	for i := range 3 {
		if a := write(fmt.Sprintf("after space was freed %d", i)); a.status != http.StatusCreated {
			t.Fatalf("write after space was freed (same server, no restart): %d %s", a.status, a.code)
		}
	}
	slices.Sort(acknowledged)
	got := contents(t, s.APIURL(), key, "disk")
	if !slices.Equal(got, acknowledged) {
		t.Errorf("after recovery the agent holds %q, want every acknowledged write and no refused one: %q", got, acknowledged)
	}
	for _, r := range refused {
		if slices.Contains(got, r) {
			t.Errorf("the refused write %q was stored", r)
		}
	}

	// Restarted on a full disk, with an event in the log that the
	// projections have not applied: they cannot before space is freed.
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	appendUnapplied(t, dataDir)
	tmpfstest.Fill(t, filler)
	s = testserver.Start(t, testserver.Options{Binary: binPath, DataDir: dataDir, Unready: true})
	awaitReadyz(t, s.BaseURL, "storage_full")
	if got := contents(t, s.APIURL(), key, "disk"); !slices.Equal(got, acknowledged) {
		t.Errorf("reads after a restart on a full disk: %q, want %q", got, acknowledged)
	}
	if a := ask(t, "POST", s.APIURL()+"/memories", key, note("refused after restart")); a.status != http.StatusInsufficientStorage || a.code != "storage_full" {
		t.Errorf("write after a restart on a full disk: %d %q, want 507 storage_full", a.status, a.code)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	awaitReadyz(t, s.BaseURL, "")
	if a := write("after the restart and space freed"); a.status != http.StatusCreated {
		t.Errorf("write once space was freed after the restart: %d %s", a.status, a.code)
	}
	slices.Sort(acknowledged)
	if got := contents(t, s.APIURL(), key, "disk"); !slices.Equal(got, acknowledged) {
		t.Errorf("at the end the agent holds %q, want %q", got, acknowledged)
	}
}
