// Package maketest keeps the test-name lists of the Makefile (the ones it
// hands to `go test -run` in a pass of their own) in step with the tests
// they name. A name that is no test would select nothing and the pass
// would still succeed, so each list has a guard test beside the tests it
// names; this package is what those guards share. Its own tests run the
// Makefile's targets that are shell, not Go (trim-go-cache).
package maketest

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

// List returns the names the Makefile at path sets variable to, a line
// `VARIABLE ?= Name1|Name2|…`, sorted. A missing or empty variable fails
// the test.
func List(t testing.TB, path, variable string) []string {
	t.Helper()
	makefile, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(variable) + `[ \t]*\?=[ \t]*(.*)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatalf("%s sets no %s", path, variable)
	}
	value := strings.TrimSpace(string(m[1]))
	if value == "" {
		t.Fatalf("%s sets %s to no test", path, variable)
	}
	names := strings.Split(value, "|")
	slices.Sort(names)
	return names
}

// TestFuncs returns the top-level test functions (Test…) the files matching
// pattern (filepath.Glob, relative to the test's package) define, sorted.
// A pattern no file matches fails the test.
func TestFuncs(t testing.TB, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no file matches %s", pattern)
	}
	fset := token.NewFileSet()
	var tests []string
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				tests = append(tests, fn.Name.Name)
			}
		}
	}
	slices.Sort(tests)
	return tests
}
