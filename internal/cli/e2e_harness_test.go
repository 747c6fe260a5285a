package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/engram-memory/engram/internal/testserver"
)

// binPath is the engram binary of the end-to-end tests (testserver.Binary:
// a plain build, or a race-built one in the race smoke pass).
var binPath string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	// Before the environment is isolated: the binary cache and Go's build
	// cache live under the real HOME.
	var err error
	if binPath, err = testserver.Binary(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "build engram:", err)
		return 1
	}
	// The in-process tests (flags, config, pprof) read the environment and
	// ~/.engram, so they get the same hermetic setting as the servers.
	home, err := os.MkdirTemp("", "engram-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(home)
	if err := testserver.IsolateProcessEnv(home); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// startServer runs the binary on a random loopback port over dataDir.
func startServer(t *testing.T, dataDir string, env []string, args ...string) *testserver.Server {
	t.Helper()
	return testserver.Start(t, testserver.Options{Binary: binPath, DataDir: dataDir, Env: env, Args: args})
}

// runCLI runs the binary with args in the servers' hermetic environment
// and returns its combined output.
func runCLI(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = testserver.Environ(t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}
