package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// TestOfficialOpenAISDKs runs OpenAI's own Python and Node SDKs against the
// binary: models.list and retrieve, embeddings single and batch, float and
// base64, and the SDKs' typed errors (test/openai-clients). Their
// dependencies are installed by .ci/run; a missing python3, pytest, openai
// package, node or node_modules fails the test rather than skipping it.
func TestOfficialOpenAISDKs(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startServer(t, dataDir, nil)
	key := testserver.Register(t, p.BaseURL, dataDir, "openai-sdks@example.com")
	root, err := filepath.Abs("../../test/openai-clients")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		dir  string
		argv []string
	}{
		{"python", "python", []string{"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_openai_sdk.py"}},
		{"node", "node", []string{"node", "--test", "openai_sdk.test.js"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // two clients of one server, each a process of its own
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
			cmd.Dir = filepath.Join(root, c.dir)
			cmd.Env = append(os.Environ(), "ENGRAM_BASE_URL="+p.APIURL(), "ENGRAM_API_KEY="+key)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v (install the dependencies as .ci/run does)\n%s", c.argv, err, out)
			}
			t.Logf("%s", out)
		})
	}
}
