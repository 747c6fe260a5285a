package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
	"github.com/engram-memory/engram/internal/app"
)

// /readyz lists each search index backend and the projections' delivery
// metrics.
func TestReadyzReportsBackendsAndProjections(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	r := s.request(t, "GET", "/readyz", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	backends, _ := r.data()["backends"].(map[string]any)
	for _, name := range []string{"keyword_index", "vector_index"} {
		b, _ := backends[name].(map[string]any)
		if b["status"] != "ok" {
			t.Errorf("backend %s: %v", name, backends[name])
		}
	}
	projections, _ := r.data()["projections"].(map[string]any)
	for _, name := range []string{"accounts", "memories", "keyword", "vectors", "jobs"} {
		p, ok := projections[name].(map[string]any)
		if !ok {
			t.Fatalf("projection %s missing from %s", name, r.raw)
		}
		for _, field := range []string{"position", "batches_applied", "events_applied", "failed_attempts", "batches_parked"} {
			if _, ok := p[field]; !ok {
				t.Errorf("projection %s lacks %s: %v", name, field, p)
			}
		}
	}
}

// A backend that is down makes /readyz 503 backend_unavailable, naming it.
func TestReadyzBackendDown(t *testing.T) {
	t.Parallel()
	h := api.New(api.Config{
		Logger: slog.New(slog.DiscardHandler),
		Auth:   fixedAuth{},
		Backends: func(context.Context) map[string]error {
			return map[string]error{"keyword_index": nil, "vector_index": errors.New("dial tcp 127.0.0.1:6334: connection refused")}
		},
	}).Handler()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Success bool `json:"success"`
		Error   struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Details struct {
				Backends map[string]struct {
					Status string `json:"status"`
					Error  string `json:"error"`
				} `json:"backends"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || body.Success || body.Error.Code != "backend_unavailable" {
		t.Fatalf("status %d body %+v", resp.StatusCode, body)
	}
	if b := body.Error.Details.Backends; b["vector_index"].Status != "unavailable" || b["vector_index"].Error == "" || b["keyword_index"].Status != "ok" {
		t.Fatalf("backends %+v", b)
	}
}

// Until the projections have caught up with the log as it stood at start,
// /readyz is 503 not_ready (the server holds the other routes meanwhile:
// internal/cli's gate). Here the keyword index is Meilisearch, down since
// before a note was stored, so the restarted keyword projection cannot
// catch up with the note.
func TestReadyzIsNotReadyWhileTheProjectionsCatchUp(t *testing.T) {
	t.Parallel()
	const indexKey = "index-test-key"
	meili := meilitest.New(t, meilitest.Options{APIKey: indexKey})
	indexes := app.Indexes{Keyword: app.Meilisearch, MeilisearchURL: meili.URL, MeilisearchAPIKey: indexKey}
	dataDir := t.TempDir()
	first := newStack(t, stackOptions{fixedAuth: true, noRun: true, dataDir: dataDir, indexes: indexes, visibilityTimeout: 100 * time.Millisecond})
	meili.Close()
	// Stored, but not indexed.
	wantError(t, first.call("POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": "stored with the index down"}}),
		http.StatusServiceUnavailable, "write_not_yet_visible")
	first.closeAll()

	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, dataDir: dataDir, indexes: indexes, catchingUp: true})
	r := s.call("GET", "/readyz", "", nil)
	wantError(t, r, http.StatusServiceUnavailable, "not_ready")
	if !strings.Contains(r.errorMessage(), "catching up") {
		t.Errorf("not_ready says %q, want that the projections are catching up", r.errorMessage())
	}
}
