package main

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
)

func TestPprofListener(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:6060", "example.com:6060", "nonsense"} {
		if _, _, err := servePprof(addr, logger); err == nil {
			t.Errorf("--pprof-addr %q accepted", addr)
		}
	}
	addr, stop, err := servePprof("127.0.0.1:0", logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("GET /debug/pprof/cmdline: %d %q", resp.StatusCode, body)
	}
}

func TestPprofOffByDefault(t *testing.T) {
	var cfg serveConfig
	if err := parseFlags(serveFlags(&cfg), nil); err != nil {
		t.Fatal(err)
	}
	if cfg.PprofAddr != "" {
		t.Fatalf("pprof on by default: %q", cfg.PprofAddr)
	}
}
