package cli

import (
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

func TestServeHealthAndGracefulStop(t *testing.T) {
	t.Parallel()
	p := startServer(t, t.TempDir(), nil)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(p.BaseURL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") == "" {
			t.Fatalf("%s: status %d, request id %q", path, resp.StatusCode, resp.Header.Get("X-Request-Id"))
		}
	}
	resp, err := http.Get(p.BaseURL + "/v1/no-such-thing")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Success bool `json:"success"`
		Error   struct {
			Code      string `json:"code"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNotFound || body.Success || body.Error.Code != "not_found" || body.Error.RequestID != resp.Header.Get("X-Request-Id") {
		t.Fatalf("unknown route: status %d body %+v", resp.StatusCode, body)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, p.Log())
	}
}

// `engram healthcheck`, the container image's HEALTHCHECK, exits 0 while
// the server's /healthz answers 200 and 1 once nothing answers.
func TestHealthcheckCommand(t *testing.T) {
	t.Parallel()
	p := startServer(t, t.TempDir(), nil)
	ctx := t.Context()
	if out, err := runCLI(t, ctx, "healthcheck", "--url", p.BaseURL+"/healthz"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("healthcheck of a live server: %v\n%s", err, out)
	}
	if out, err := runCLI(t, ctx, "healthcheck", "--url", p.BaseURL+"/no-such-endpoint"); err == nil {
		t.Fatalf("healthcheck of a 404 succeeded:\n%s", out)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, ctx, "healthcheck", "--url", p.BaseURL+"/healthz", "--timeout", "2s")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("healthcheck of a stopped server: %v, want exit 1\n%s", err, out)
	}
}
