package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/engram-memory/engram/internal/maketest"
)

// TestMakefileListsNameTests: `make test` runs the tests the Makefile's
// RACE_SMOKE names once more against a race-built server, and runs those
// CLIENT_TESTS names in test-clients, after the outside clients' installs,
// while the race pass skips them. A renamed or removed test would make the
// former run nothing and still succeed; a renamed test the latter names
// would run in the race pass before the clients it needs are installed.
// So every name must be a test of this package.
func TestMakefileListsNameTests(t *testing.T) {
	tests := maketest.TestFuncs(t, "*_test.go")
	for _, list := range []string{"RACE_SMOKE", "CLIENT_TESTS"} {
		t.Run(list, func(t *testing.T) {
			for _, name := range maketest.List(t, filepath.Join("..", "..", "Makefile"), list) {
				if _, found := slices.BinarySearch(tests, name); !found {
					t.Errorf("%s names %q, which is no test of internal/cli", list, name)
				}
			}
		})
	}
}

// TestClientTestsNameEveryTestOfTheClients: the race pass skips
// CLIENT_TESTS and starts before test-deps-clients has installed the
// outside clients (test/mcp-ts, test/openai-clients, test/fuzz). A test of
// a file that runs one of them, left out of the list, would run there
// against a half-done install and pass or fail by the timing.
func TestClientTestsNameEveryTestOfTheClients(t *testing.T) {
	listed := maketest.List(t, filepath.Join("..", "..", "Makefile"), "CLIENT_TESTS")
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	clients := regexp.MustCompile(`"(\.\./\.\./)?test/(mcp-ts|openai-clients|fuzz)"|"test", "(mcp-ts|openai-clients|fuzz)"`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !clients.Match(src) {
			continue
		}
		for _, name := range maketest.TestFuncs(t, f) {
			if _, found := slices.BinarySearch(listed, name); !found {
				t.Errorf("%s runs an outside client (%s) but the Makefile's CLIENT_TESTS does not name it", name, f)
			}
		}
	}
}
