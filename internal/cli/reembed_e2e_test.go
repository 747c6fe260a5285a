package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/engram-memory/engram/client"
)

// TestCLIReembedWait starts a bulk re-embedding job on the local stack and
// on the cloud and follows each to its end with --wait: the job has
// re-embedded every memory when the command returns, and no progress bar
// is drawn on a pipe.
func TestCLIReembedWait(t *testing.T) {
	t.Parallel()
	type jobOut struct {
		ID        string `json:"job_id"`
		Status    string `json:"status"`
		Processed int    `json:"memories_processed"`
		Total     int    `json:"memories_total"`
	}
	h := newCLIHome(t)
	for _, content := range []string{"the staging database is shared", "deploys go out on tuesdays", "billing owns the invoices table"} {
		h.ok("note", "--content", content)
	}
	waited := h.ok("--json", "reembed", "--wait", "--local")
	var local jobOut
	if err := jsonUnmarshal(waited.stdout, &local); err != nil {
		t.Fatal(err)
	}
	if local.Status != "completed" || local.Processed != 3 || local.Total != 3 {
		t.Fatalf("local job after --wait: %+v, want completed with 3 of 3 memories", local)
	}
	if strings.Contains(waited.stderr, "\r") {
		t.Fatalf("--wait drew a progress bar on a pipe: %q", waited.stderr)
	}

	srv := startCloud(t)
	cloudHome := newCLIHome(t)
	key := loginCLI(t, cloudHome, srv, "reembed@example.com")
	api := client.New(srv.APIURL(), key)
	for _, content := range []string{"one", "two"} {
		if _, err := api.CreateMemory(context.Background(), client.CreateMemoryRequest{AgentID: "default", Type: "note", Content: map[string]any{"content": "a cloud note: " + content}}); err != nil {
			t.Fatal(err)
		}
	}
	var done jobOut
	cloudHome.json(&done, "reembed", "--wait", "--cloud")
	if done.Status != "completed" || done.Processed != 2 || done.Total != 2 {
		t.Fatalf("cloud job after --wait: %+v, want completed with 2 of 2 memories", done)
	}
}

// TestCLIReembedWaitFailsWithTheJob: a job whose provider keeps failing
// fails after --job-max-attempts failed steps, and reembed --wait exits 1
// saying so. The provider asks for its retries at once (Retry-After-Ms), so
// the test waits for no backoff of the provider's client.
func TestCLIReembedWaitFailsWithTheJob(t *testing.T) {
	t.Parallel()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After-Ms", "1")
		http.Error(w, `{"error":{"message":"the provider is down"}}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(broken.Close)
	h := newCLIHome(t, "OPENAI_BASE_URL="+broken.URL+"/v1", "OPENAI_API_KEY=test", "ENGRAM_JOB_MAX_ATTEMPTS=2")
	h.ok("note", "--content", "a note to re-embed")
	r := h.fails(1, "", "reembed", "--wait", "--local", "--model", "text-embedding-3-small")
	if !strings.Contains(r.stderr, "failed") {
		t.Fatalf("stderr %q, want the job's failure", r.stderr)
	}
	if !strings.Contains(r.stdout, ": failed,") {
		t.Fatalf("stdout %q, want the failed job", r.stdout)
	}
	if !strings.Contains(r.stdout+r.stderr, "gave up after 2 failed attempts") {
		t.Fatalf("stdout %q, stderr %q: want the job to give up after --job-max-attempts (2) attempts", r.stdout, r.stderr)
	}
}
