package vectorindex

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/engram-memory/engram/internal/maketest"
)

// TestNoRaceTestsNameTheQualityTests: quality_test.go is built without the
// race detector only, and `make test` runs it in a pass of its own that
// selects by name (the Makefile's NORACE_TESTS). A test added to that file
// and not to the list would never run anywhere, and a listed name that is
// no test would select nothing and still pass, so the two must be equal.
func TestNoRaceTestsNameTheQualityTests(t *testing.T) {
	listed := maketest.List(t, filepath.Join("..", "..", "Makefile"), "NORACE_TESTS")
	defined := maketest.TestFuncs(t, "quality_test.go")
	if !slices.Equal(listed, defined) {
		t.Errorf("NORACE_TESTS names %v; quality_test.go defines %v", listed, defined)
	}
}
