package api_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/engram-memory/engram/internal/sourcetree"
)

// TestEveryErrorCodeIsObservedOrExempt: every public error code the
// server's code defines — each error kind of domain/errors.go, each code
// given to a *domain.Error anywhere and each failure envelope the API
// writes itself (method_not_allowed, not_ready, backend_unavailable) — was provoked on some operation
// by the API tests (test/openapi/observed_errors.txt, from which the
// document's per-operation enums are built), or is on notOverHTTP with the
// reason it never reaches an HTTP client. A code added without a test that
// provokes it fails here, instead of being missing from the document.
func TestEveryErrorCodeIsObservedOrExempt(t *testing.T) {
	t.Parallel()
	root := ".."
	defined, err := definedErrorCodes(root)
	if err != nil {
		t.Fatal(err)
	}
	observed := observedErrorCodes(t, filepath.Join(root, "test/openapi/observed_errors.txt"))
	for _, code := range slices.Sorted(maps.Keys(defined)) {
		where := defined[code]
		_, exempt := notOverHTTP[code]
		switch {
		case observed[code] && exempt:
			t.Errorf("%s (%s) is observed over HTTP: take it off notOverHTTP", code, where)
		case !observed[code] && !exempt:
			t.Errorf("%s (%s): no API test provokes it, so the OpenAPI document does not list it; provoke it in a test, record it (docs/api.md#error-responses-per-route), or put it on notOverHTTP saying why no request meets it", code, where)
		}
	}
	for code := range notOverHTTP {
		if _, ok := defined[code]; !ok {
			t.Errorf("notOverHTTP lists %s, which no code defines any more", code)
		}
	}
}

// notOverHTTP are the codes no HTTP request receives, each with why. The
// codes the middleware gives every route of a kind are documented by
// test/openapi/error_table.py's rules whether a test provokes them or not.
var notOverHTTP = map[string]string{
	// Kinds that never leave without a code of their own.
	"conflict":          "every conflict carries its specific code (domain.Conflict takes one)",
	"gone":              "only the verification token's token_used and token_expired are gone",
	"quota_exceeded":    "each quota refusal names its quota (quota_memories_per_agent, quota_agents, quota_text_bytes, webhook_limit)",
	"index_unavailable": "a search index refusal names its side: keyword_ or vector_index_unavailable, _rebuilding",
	// Documented on every route by the table's rules.
	"internal": "a fault of the server (a panic, a store error), which no test provokes on purpose; error_table.py documents 500 internal on every route",
	// The job runner's own moves; no route starts, resumes, finishes or
	// completes a job (a route queues or cancels one).
	"job_queued":       "the runner resuming a job another runner has not started (job.Job.Resume); the runner's own check",
	"job_running":      "the runner starting a job that already started (job.Job.Start); the runner's own check",
	"job_not_finished": "the runner completing a job before recording that it finishes (job.Job.Complete); the runner's own check",
	// The command line's own answers, on its standard error.
	"cloud_error":       "engram's CLI and stdio MCP answer a cloud failure without a code with it; the server never sends it",
	"cloud_unreachable": "engram's CLI and stdio MCP when the cloud cannot be reached; the server never sends it",
	"not_confirmed":     "engram stacks' refusal when the confirmation question is not answered yes (internal/cli/stacks.go)",
	"unpushed_events":   "engram sync's refusal to pull over local events not pushed yet (internal/cli/sync.go)",
}

// definedErrorCodes returns each public error code the Go code of the
// module under root defines, with one place that defines it: the error
// kinds of domain/errors.go (a kind is the code of an error without one),
// the first argument of domain.Conflict and of WithCode, and the Code of a
// domain.Error literal or assigned to an error's field. A code that is not
// a constant must be on dynamicCodes, else it is an error: the test could
// not tell which codes it stands for.
func definedErrorCodes(root string) (map[string]string, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	var others [][]byte // the files not parsed, where a constant may be defined
	err := sourcetree.Walk(root, func(path string, d fs.DirEntry) error {
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if skipForCodes(filepath.ToSlash(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !definesCodes(filepath.ToSlash(rel), src) {
			others = append(others, src) // parsing every file takes seconds under -race
			return nil
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	consts := constantsOf(files, others)
	codes := map[string]string{}
	var unknown []string
	place := func(n ast.Node) string {
		p := fset.Position(n.Pos())
		rel, _ := filepath.Rel(root, p.Filename)
		return fmt.Sprintf("%s:%d", filepath.ToSlash(rel), p.Line)
	}
	add := func(expr ast.Expr) {
		if v, ok := constantString(expr, consts); ok {
			if _, seen := codes[v]; !seen {
				codes[v] = place(expr)
			}
			return
		}
		key := strings.SplitN(place(expr), ":", 2)[0] + ": " + exprSource(fset, expr)
		expanded, ok := dynamicCodes[key]
		if !ok {
			unknown = append(unknown, place(expr)+": "+exprSource(fset, expr))
			return
		}
		for _, v := range expanded {
			if _, seen := codes[v]; !seen {
				codes[v] = place(expr)
			}
		}
	}
	for _, f := range files {
		file := filepath.ToSlash(strings.TrimPrefix(fset.Position(f.Pos()).Filename, root+string(filepath.Separator)))
		if file == "domain/errors.go" {
			for _, kind := range kindConstants(f) {
				add(kind)
			}
			continue // Conflict and WithCode themselves take a code as a parameter
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) > 0 &&
					(sel.Sel.Name == "WithCode" || sel.Sel.Name == "Conflict" && isIdent(sel.X, "domain")) {
					add(n.Args[0])
				}
			case *ast.CompositeLit:
				// A domain.Error, or a failure envelope the API writes
				// itself (errorBody: 405 method_not_allowed, /readyz's
				// not_ready and backend_unavailable).
				sel, ok := n.Type.(*ast.SelectorExpr)
				if ok && isIdent(sel.X, "domain") && sel.Sel.Name == "Error" || strings.HasPrefix(file, "api/") && isIdent(n.Type, "errorBody") {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Code") {
							add(kv.Value)
						}
					}
				}
			case *ast.AssignStmt:
				// e.Code = …: an error built by Errorf or Invalid given
				// its code (a nested out.Error.Code is an output shape).
				for i, lhs := range n.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Code" && isIdentExpr(sel.X) && len(n.Rhs) == len(n.Lhs) {
						add(n.Rhs[i])
					}
				}
			}
			return true
		})
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("error codes that are not constants, so this test cannot tell them: add each to dynamicCodes with the codes it stands for:\n%s", strings.Join(unknown, "\n"))
	}
	return codes, nil
}

// dynamicCodes are the codes computed at run time, by file and expression.
var dynamicCodes = map[string][]string{
	// mustBe: a job that is neither finished nor in the status a move
	// needs (queued or running).
	`domain/job/job.go: "job_" + string(j.Status)`: {"job_queued", "job_running"},
	// The two sides of search.
	`projections/search/service.go: side + "_index_unavailable"`: {"keyword_index_unavailable", "vector_index_unavailable"},
	`projections/search/service.go: side + "_index_rebuilding"`:  {"keyword_index_rebuilding", "vector_index_rebuilding"},
	// quotaError, given one of the quotas' codes.
	`domain/memory/quota.go: code`: {"quota_memories_per_agent", "quota_agents", "quota_text_bytes"},
	// OpenAI's shape: the error's own code (its kind or code, defined
	// where it is made), or OpenAI's name for it.
	`api/openai_handlers.go: &code`: {"model_not_found", "invalid_api_key", "rate_limit_exceeded"},
	// The stdio MCP server over the cloud relays the cloud's own code, or
	// cloud_error when it sent none.
	`internal/cli/mcp_cloud.go: code`: {"cloud_error"},
	// The envelope of a domain.Error: its code, defined where it is made.
	`api/errors.go: f.Code`: nil,
}

// skipForCodes leaves out of the sources (sourcetree.Walk leaves out
// dependencies and fixtures) what the server does not run: the SDKs, the
// Go client (it reads codes, it defines none), test doubles, the
// benchmarks' binary.
func skipForCodes(rel string) bool {
	switch rel {
	case "sdk", "client", "cmd/engram-bench":
		return true
	}
	return rel != "." && strings.HasSuffix(rel, "test") // kurrentdbtest, meilitest, pgtest, …
}

// definesCodes tells the files the patterns of definedErrorCodes can
// match in (a constant defined elsewhere is found by constantsOf).
func definesCodes(rel string, src []byte) bool {
	if rel == "domain/errors.go" {
		return true
	}
	for _, s := range []string{"WithCode(", "Conflict(", "Code:", ".Code =", ".Code, "} {
		if bytes.Contains(src, []byte(s)) {
			return true
		}
	}
	return false
}

// constantsOf looks up the string value of a constant by name: one
// declared in files, else (another package's: pkg.Name) one declared
// alone on its line in others (`Name = "value"`, `const Name = "value"`,
// typed or not).
func constantsOf(files []*ast.File, others [][]byte) func(name string, qualified bool) (string, bool) {
	parsed := stringConstants(files)
	return func(name string, qualified bool) (string, bool) {
		if v, ok := parsed[name]; ok || !qualified {
			return v, ok
		}
		decl := regexp.MustCompile(`(?m)^\s*(?:const\s+)?` + regexp.QuoteMeta(name) + `(?:\s+\w+)?\s*=\s*("(?:[^"\\]|\\.)*")`)
		for _, src := range others {
			if !bytes.Contains(src, []byte(name)) {
				continue
			}
			if m := decl.FindSubmatch(src); m != nil {
				v, err := strconv.Unquote(string(m[1]))
				return v, err == nil
			}
		}
		return "", false
	}
}

// stringConstants maps the name of each constant with a string literal
// value (any package) to that value.
func stringConstants(files []*ast.File) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							out[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	return out
}

// kindConstants are the values of domain/errors.go's Kind constants.
func kindConstants(f *ast.File) []ast.Expr {
	var out []ast.Expr
	for _, decl := range f.Decls {
		if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			for _, spec := range gd.Specs {
				if vs := spec.(*ast.ValueSpec); isIdent(vs.Type, "Kind") {
					out = append(out, vs.Values...)
				}
			}
		}
	}
	return out
}

// constantString is the string a literal, a named constant or a
// string(…) conversion of one stands for.
func constantString(expr ast.Expr, consts func(name string, qualified bool) (string, bool)) (string, bool) {
	switch e := expr.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			v, err := strconv.Unquote(e.Value)
			return v, err == nil
		}
	case *ast.Ident:
		return consts(e.Name, false)
	case *ast.SelectorExpr:
		return consts(e.Sel.Name, true)
	case *ast.CallExpr:
		if isIdent(e.Fun, "string") && len(e.Args) == 1 {
			return constantString(e.Args[0], consts)
		}
	}
	return "", false
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func isIdentExpr(e ast.Expr) bool { _, ok := e.(*ast.Ident); return ok }

func exprSource(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	_ = printer.Fprint(&b, fset, e)
	return b.String()
}

// observedErrorCodes are the codes of the record of the API tests' failures.
func observedErrorCodes(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 3 {
			out[fields[2]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
