package testserver

import (
	"context"
	"io"
	"testing"
	"time"
)

// Options configure Start.
type Options struct {
	Binary  string    // default: Binary()
	DataDir string    // default t.TempDir()
	Env     []string  // extra KEY=VALUE pairs
	Args    []string  // extra `engram serve` flags
	Unready bool      // see LaunchOptions.Unready
	LogTo   io.Writer // see LaunchOptions.LogTo
}

// Server is a running engram for one test. It is killed on t.Cleanup if
// the test did not stop it.
type Server struct {
	BaseURL string // http://127.0.0.1:PORT, without /v1
	DataDir string
	Proc    *Process
	t       testing.TB
}

// Start runs `engram serve` on a random loopback port and waits until it
// is ready.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Binary == "" {
		bin, err := Binary(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		opts.Binary = bin
	}
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	p, err := Launch(context.Background(), LaunchOptions{
		Binary: opts.Binary, DataDir: opts.DataDir, Env: opts.Env, Args: opts.Args, Unready: opts.Unready, LogTo: opts.LogTo,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		// A race-built server reports a race on stderr and goes on
		// serving: only its log tells.
		if races := p.RaceReports(); races != "" {
			t.Errorf("engram serve (%s) reported data races:\n%s", opts.DataDir, races)
		}
	})
	return &Server{BaseURL: p.BaseURL, DataDir: p.DataDir, Proc: p, t: t}
}

// APIURL is BaseURL + "/v1", the base URL clients take.
func (s *Server) APIURL() string { return s.Proc.APIURL() }

// Log is the tail of the server's stderr.
func (s *Server) Log() string { return s.Proc.Log() }

// Kill ends the server with SIGKILL: no shutdown code runs.
func (s *Server) Kill() { s.Proc.Kill() }

// Stop sends SIGTERM, waits up to 30s and returns the exit error.
func (s *Server) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Proc.Stop(ctx)
}

// Register creates a verified user for email through the public API and
// returns its first API key. baseURL may end in /v1 or not; the token is
// read from the .eml in dataDir's outbox.
func Register(t testing.TB, baseURL, dataDir, email string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key, err := RegisterUser(ctx, baseURL, OutboxDir(dataDir), email)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// OutboxDir is where the server writes mail: <DataDir>/outbox.
func (s *Server) OutboxDir() string { return OutboxDir(s.DataDir) }
