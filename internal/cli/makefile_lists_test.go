package cli

import (
	"path/filepath"
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
