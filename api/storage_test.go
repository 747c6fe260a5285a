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

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/api/httpstatus"
	"github.com/engram-memory/engram/domain"
)

// A write refused because storage is full is 507; /readyz says the
// storage is full, and why, for as long as it is.
func TestStorageFullIs507AndShowsOnReadyz(t *testing.T) {
	t.Parallel()
	if got := httpstatus.Of(domain.KindStorageFull); got != http.StatusInsufficientStorage {
		t.Errorf("storage_full maps to %d, want 507", got)
	}
	var full error
	h := api.New(api.Config{
		Logger:      slog.New(slog.DiscardHandler),
		Auth:        fixedAuth{},
		StorageFull: func(context.Context) error { return full },
	}).Handler()
	srv := httptest.NewServer(h)
	defer srv.Close()
	readyz := func() (int, string, string) {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Details struct {
					Storage struct {
						Status string `json:"status"`
						Error  string `json:"error"`
					} `json:"storage"`
				} `json:"details"`
			} `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body.Error.Code, body.Error.Details.Storage.Error
	}

	if status, code, _ := readyz(); status != http.StatusOK {
		t.Fatalf("/readyz with room: %d %s", status, code)
	}
	full = errors.New("storage is full: 0 bytes free on /srv/engram")
	if status, code, reason := readyz(); status != http.StatusServiceUnavailable || code != "storage_full" || !strings.Contains(reason, "0 bytes free") {
		t.Errorf("/readyz with storage full: %d %q %q, want 503 storage_full with the reason", status, code, reason)
	}
	full = nil
	if status, code, _ := readyz(); status != http.StatusOK {
		t.Errorf("/readyz once space is back: %d %s", status, code)
	}
}
