package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/engram-memory/engram/api"
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
