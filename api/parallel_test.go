package api_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryTestRunsInParallelOrSaysWhyNot: each test of the package owns
// its stack, so each calls t.Parallel() first (make test runs four at
// once); one that cannot (it sets the environment, or asserts a
// wall-clock bound that tests beside it would stretch) opens with a
// "// Not parallel:" comment saying why. A test added without either
// would run alone, after nothing and before everything, and lengthen the
// package by its whole time (docs/testing.md#keeping-the-suite-fast).
func TestEveryTestRunsInParallelOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !isTestFunc(fn) {
				continue
			}
			checked++
			if !callsParallelFirst(fn.Body) && !saysWhyNotParallel(f, fn.Body) {
				t.Errorf("%s: %s neither calls t.Parallel() first nor opens with a \"// Not parallel:\" comment saying why", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no test function found: the check looked in the wrong place")
	}
}

// isTestFunc tells a top-level TestXxx(t *testing.T), which go test runs.
func isTestFunc(fn *ast.FuncDecl) bool {
	if !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" || len(fn.Type.Params.List) != 1 {
		return false
	}
	star, ok := fn.Type.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}

func callsParallelFirst(body *ast.BlockStmt) bool {
	if len(body.List) == 0 {
		return false
	}
	stmt, ok := body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := stmt.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Parallel" && len(call.Args) == 0
}

// saysWhyNotParallel tells a body whose first comment, before its first
// statement, starts "Not parallel:".
func saysWhyNotParallel(f *ast.File, body *ast.BlockStmt) bool {
	end := body.Rbrace
	if len(body.List) > 0 {
		end = body.List[0].Pos()
	}
	for _, group := range f.Comments {
		if group.Pos() > body.Lbrace && group.End() < end {
			return strings.HasPrefix(group.Text(), "Not parallel:")
		}
	}
	return false
}
