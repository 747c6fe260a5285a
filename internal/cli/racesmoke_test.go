package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRaceSmokeNamesTests: `make test` runs the tests the Makefile's
// RACE_SMOKE names against a race-built server. A renamed or removed test
// would make that pass run nothing and still succeed, so every name must
// be a test of this package.
func TestRaceSmokeNamesTests(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RACE_SMOKE\s*\?=\s*(.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no RACE_SMOKE")
	}
	tests := map[string]bool{}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				tests[fn.Name.Name] = true
			}
		}
	}
	names := strings.Split(strings.TrimSpace(string(m[1])), "|")
	if len(names) == 0 {
		t.Fatal("RACE_SMOKE names no test")
	}
	for _, name := range names {
		if !tests[name] {
			t.Errorf("RACE_SMOKE names %q, which is no test of internal/cli", name)
		}
	}
}
