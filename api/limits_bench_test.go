package api_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
)

// BenchmarkAbuseGuards is the per-request cost of the slow-client bounds
// and the in-flight cap, on /healthz and on a request with a body that
// is rejected at once (an unknown route), over the bare router.
func BenchmarkAbuseGuards(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  api.Config
	}{
		{"off", api.Config{}},
		{"on", api.Config{BodyReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxInFlight: 256}},
	} {
		bc.cfg.Logger = slog.New(slog.DiscardHandler)
		h := api.New(bc.cfg).Handler()
		b.Run(bc.name+"/healthz", func(b *testing.B) {
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
			}
		})
		b.Run(bc.name+"/rejected-body", func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest("POST", "/v1/nowhere", strings.NewReader(`{"agent_id":"a","query":"q"}`))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusNotFound {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}
