package cli

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/engram-memory/engram/internal/maketest"
)

// TestRaceSmokeNamesTests: `make test` runs the tests the Makefile's
// RACE_SMOKE names against a race-built server. A renamed or removed test
// would make that pass run nothing and still succeed, so every name must
// be a test of this package.
func TestRaceSmokeNamesTests(t *testing.T) {
	tests := maketest.TestFuncs(t, "*_test.go")
	for _, name := range maketest.List(t, filepath.Join("..", "..", "Makefile"), "RACE_SMOKE") {
		if _, found := slices.BinarySearch(tests, name); !found {
			t.Errorf("RACE_SMOKE names %q, which is no test of internal/cli", name)
		}
	}
}
