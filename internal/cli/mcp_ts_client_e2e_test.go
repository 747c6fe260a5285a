package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/engram-memory/engram/internal/testserver"
)

// TestMCPTypeScriptSDKDrivesTheBinary runs test/mcp-ts: the official
// TypeScript MCP SDK (@modelcontextprotocol/sdk, pinned in its
// package-lock.json) drives this binary over stdio and streamable HTTP.
// Node.js and the installed packages (npm ci, which .ci/run does) are
// required: without them the test fails, it never skips.
func TestMCPTypeScriptSDKDrivesTheBinary(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("Node.js is required for the TypeScript MCP client tests (install nodejs, then npm ci in test/mcp-ts): %v", err)
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "test", "mcp-ts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed: run npm ci in %s (.ci/run does): %v", dir, err)
	}
	cmd := exec.Command(node, "--test", "--test-reporter=spec")
	cmd.Dir = dir
	cmd.Env = append(testserver.Environ(t.TempDir()), "ENGRAM_BIN="+binPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test in %s: %v\n%s", dir, err, out)
	}
	t.Logf("%s", out)
}
