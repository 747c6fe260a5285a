package archtest

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/domain/webhook"
	"github.com/engram-memory/engram/internal/sourcetree"
)

// Events are told apart by decoding them through an event registry and a
// type switch on the payload, not by their type names, in the domain
// packages as everywhere else: no `T{}.EventType()` to compare a type
// with, and no event type's name as a string literal in a comparison or a
// case. (A name kept as a string is a second registry that drifts from
// the first.)
func TestEventTypesAreNotDispatchedByName(t *testing.T) {
	names := map[string]bool{}
	for _, list := range [][]domain.EventDecoder{memory.Events(), agentsettings.Events(), processing.Events(), job.Events(), account.Events(), webhook.Events()} {
		for _, d := range list {
			names[d.Type] = true
		}
	}
	root := moduleRoot(t)
	found := map[string][]string{}
	err := sourcetree.Walk(root, func(path string, d fs.DirEntry) error {
		if d.IsDir() {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		if ok, err := build.Default.MatchFile(filepath.Dir(path), d.Name()); err != nil || !ok {
			return err
		}
		for _, pos := range dispatchByName(t, path, names) {
			found[rel] = append(found[rel], pos)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range sortedKeys(found) {
		t.Errorf("%s tells event types apart by name at %s: decode through the event registry and switch on the payload's type", file, strings.Join(found[file], ", "))
	}
}

// dispatchByName returns the lines of the file at path that name an event
// type to tell events apart: a `T{}.EventType()` call or a string literal
// of a name in a comparison (== or !=), a case of a switch, or as a key of
// a map literal (a set of names). A name passed on as it is (a query of
// the log for events of one type) tells nothing apart.
func dispatchByName(t *testing.T, path string, names map[string]bool) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	at := func(n ast.Node) { lines = append(lines, "line "+strconv.Itoa(fset.Position(n.Pos()).Line)) }
	isName := func(e ast.Expr) bool {
		switch e := ast.Unparen(e).(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			return e.Kind == token.STRING && err == nil && names[s]
		case *ast.CallExpr:
			sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "EventType" || len(e.Args) != 0 {
				return false
			}
			_, lit := ast.Unparen(sel.X).(*ast.CompositeLit)
			return lit
		}
		return false
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (isName(n.X) || isName(n.Y)) {
				at(n)
			}
		case *ast.CaseClause:
			if slices.ContainsFunc(n.List, isName) {
				at(n)
			}
		case *ast.CompositeLit:
			if _, isMap := n.Type.(*ast.MapType); isMap {
				for _, elt := range n.Elts {
					if kv, ok := elt.(*ast.KeyValueExpr); ok && isName(kv.Key) {
						at(kv)
					}
				}
			}
		}
		return true
	})
	return lines
}

// What dispatchByName counts as telling events apart by name, and what it
// leaves alone.
func TestDispatchByNameFindsComparisonsCasesAndSetsOfNames(t *testing.T) {
	names := map[string]bool{"MemoryCreated": true}
	for _, tc := range []struct {
		name, body string
		found      bool
	}{
		{"a comparison with T{}.EventType()", `_ = e.Type == (memory.MemoryCreated{}).EventType()`, true},
		{"a comparison with a name", `_ = "MemoryCreated" != e.Type`, true},
		{"a case of T{}.EventType()", `switch e.Type { case memory.MemoryCreated{}.EventType(): }`, true},
		{"a case of a name", `switch e.Type { case "MemoryCreated": }`, true},
		{"a set of names", `_ = map[string]bool{memory.MemoryCreated{}.EventType(): true}`, true},
		{"a set of name literals", `_ = map[string]bool{"MemoryCreated": true}`, true},
		{"a type switch on the payload", `switch p.(type) { case *memory.MemoryCreated: }`, false},
		{"a query of the log by type", `_, _ = log.LastOfType(ctx, stream, memory.MemoryCreated{}.EventType())`, false},
		{"a name that is no event's", `_ = e.Type == "Other"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.go")
			src := "package p\n\nfunc f() {\n\t" + tc.body + "\n}\n"
			if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			if found := dispatchByName(t, path, names); (len(found) > 0) != tc.found {
				t.Fatalf("found %v in %q, want found %v", found, tc.body, tc.found)
			}
		})
	}
}
