package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/engram-memory/engram/internal/testserver"
)

// binPath is the engram binary built once for the end-to-end tests.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "engram-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath, err = testserver.Build(context.Background(), dir, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build engram:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startServer runs the binary on a random loopback port over dataDir.
func startServer(t *testing.T, dataDir string, env []string, args ...string) *testserver.Server {
	t.Helper()
	return testserver.Start(t, testserver.Options{Binary: binPath, DataDir: dataDir, Env: env, Args: args})
}

// runCLI runs the binary with args and returns its combined output.
func runCLI(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(ctx, binPath, args...).CombinedOutput()
	return string(out), err
}
