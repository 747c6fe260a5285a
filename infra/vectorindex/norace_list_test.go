package vectorindex

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestNoRaceTestsNameTheQualityTests: quality_test.go is built without the
// race detector only, and `make test` runs it in a pass of its own that
// selects by name (the Makefile's NORACE_TESTS). A test added to that file
// and not to the list would never run anywhere, and a listed name that is
// no test would select nothing and still pass, so the two must be equal.
func TestNoRaceTestsNameTheQualityTests(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^NORACE_TESTS\s*\?=\s*(.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no NORACE_TESTS")
	}
	listed := strings.Split(strings.TrimSpace(string(m[1])), "|")
	slices.Sort(listed)

	file, err := parser.ParseFile(token.NewFileSet(), "quality_test.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var defined []string
	for _, decl := range file.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
			defined = append(defined, fn.Name.Name)
		}
	}
	slices.Sort(defined)
	if !slices.Equal(listed, defined) {
		t.Errorf("NORACE_TESTS names %v; quality_test.go defines %v", listed, defined)
	}
}
