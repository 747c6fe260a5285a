package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

type healthcheckConfig struct {
	url     string
	timeout time.Duration
}

func healthcheckFlags(cfg *healthcheckConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:8080/healthz", "the server's health endpoint")
	fs.DurationVar(&cfg.timeout, "timeout", 3*time.Second, "how long the answer may take")
	return fs
}

// healthcheckCommand asks a server's /healthz whether it is alive and
// exits 0 when it answers 200, 1 otherwise: the HEALTHCHECK of the
// container image (Dockerfile), which has no shell and no curl, runs it.
func healthcheckCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg healthcheckConfig
	if err := parseCommandFlags(healthcheckFlags(&cfg), args, "engram healthcheck [flags]", stdout, stderr); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.url, nil)
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", cfg.url, resp.Status)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
