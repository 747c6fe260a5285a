// Package archtest holds the module's architecture to its layers: each
// package may import the packages of layers below its own and of its own
// group, nothing else. It reads the non-test imports of every package in
// the module (go/build, as the go command sees them), so a test file may
// still reach up (an adapter's tests run the conformance suites above it).
package archtest

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/engram-memory/engram/internal/sourcetree"
)

const module = "github.com/engram-memory/engram"

// layers places every package of the module, by the longest matching
// path prefix (relative to the module). A package may import a package
// of a lower rank, or one with the same prefix (its own group). Siblings
// of one rank do not import each other: the write side (commands), the
// background workers, the projections and the read side (projections/query)
// meet only in the wiring.
var layers = []struct {
	prefix string
	rank   int
}{
	// The domain imports nothing of ours; it owns the ports.
	{"domain", 0},
	// The walk of the repository's sources, which imports nothing of ours
	// either; internal/testserver (rank 1) hashes the tree with it.
	{"internal/sourcetree", 0},
	// Adapters, one per dependency, with their conformance suites, and the
	// leaf helpers the upper layers share.
	{"infra", 1},
	{"client", 1},
	{"api/httpstatus", 1},
	{"internal/loopback", 1},
	{"internal/pgtest", 1},
	{"internal/testserver", 1},
	{"internal/tmpfstest", 1},
	{"internal/pause", 1},
	{"internal/maketest", 1},
	{"internal/testlog", 1},
	// Read models and their feeding, the read side, the write side, and
	// the background work.
	{"projections", 2},
	{"projections/query", 2},
	{"commands", 2},
	{"internal/workers", 2},
	// Suites that drive the read-model stores through the projections.
	{"internal/readmodeltest", 3},
	// The memory write side on the real stack, for the tests of the
	// commands and of the embedding queue.
	{"internal/memenvtest", 3},
	// Delivery: the HTTP API and the read-only dashboard.
	{"api", 4},
	{"dashboard", 4},
	// The wiring, with the search test stack next to it.
	{"internal/app", 5},
	// The command line: the server, its maintenance commands, the
	// personal commands, the MCP server over stdio and the dashboard.
	{"internal/cli", 6},
	// The binaries.
	{"cmd", 7},
}

// writeSide are the packages that change state; the dashboard reaches
// none of them, however indirectly.
var writeSide = []string{"commands", "internal/workers"}

func TestNoPackageImportsALayerAboveIt(t *testing.T) {
	graph := imports(t)
	for _, pkg := range sortedKeys(graph) {
		from, ok := layerOf(pkg)
		if !ok {
			t.Errorf("%s has no layer: place it in layers", pkg)
			continue
		}
		for _, dep := range graph[pkg] {
			to, ok := layerOf(dep)
			if !ok {
				continue // reported as a package of its own
			}
			if to.rank > from.rank || (to.rank == from.rank && to.prefix != from.prefix) {
				t.Errorf("%s (layer %s, rank %d) imports %s (layer %s, rank %d)", pkg, from.prefix, from.rank, dep, to.prefix, to.rank)
			}
		}
	}
}

func TestArrowsTheIssueNamed(t *testing.T) {
	graph := imports(t)
	for _, tc := range []struct {
		name      string
		from      string // a path prefix
		forbidden []string
	}{
		{"the domain imports nothing of ours outside it", "domain", []string{"infra", "projections", "commands", "internal", "api", "dashboard", "cmd", "client"}},
		{"adapters never import projections or commands", "infra", []string{"projections", "commands", "internal/workers", "internal/app", "api", "dashboard"}},
		{"projections import no write side and no wiring", "projections", []string{"commands", "internal/workers", "internal/app"}},
		{"the write side imports no read side", "commands", []string{"projections", "internal/workers", "internal/app"}},
		{"the dashboard imports no write side, directly or not", "dashboard", writeSide},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pkg := range sortedKeys(graph) {
				if !under(pkg, tc.from) {
					continue
				}
				for _, dep := range closure(graph, pkg) {
					for _, f := range tc.forbidden {
						if under(dep, f) && !under(dep, tc.from) {
							t.Errorf("%s reaches %s", pkg, dep)
						}
					}
				}
			}
		})
	}
}

type layer struct {
	prefix string
	rank   int
}

func layerOf(pkg string) (layer, bool) {
	best, found := layer{}, false
	for _, l := range layers {
		if under(pkg, l.prefix) && (!found || len(l.prefix) > len(best.prefix)) {
			best, found = layer{l.prefix, l.rank}, true
		}
	}
	return best, found
}

// under reports whether pkg is prefix or inside it.
func under(pkg, prefix string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// closure is every module package pkg imports, directly or not.
func closure(graph map[string][]string, pkg string) []string {
	seen := map[string]bool{}
	var visit func(string)
	visit = func(p string) {
		for _, dep := range graph[p] {
			if !seen[dep] {
				seen[dep] = true
				visit(dep)
			}
		}
	}
	visit(pkg)
	return sortedKeys(seen)
}

// imports maps each package of the module (relative path) to the module
// packages its non-test files import.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root := moduleRoot(t)
	graph := map[string][]string{}
	err := sourcetree.Walk(root, func(dir string, d fs.DirEntry) error {
		if !d.IsDir() {
			return nil
		}
		p, err := build.ImportDir(dir, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(p.GoFiles) == 0 {
			return nil // tests only (a test may import upwards)
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		graph[pkg] = []string{}
		for _, imp := range p.Imports {
			if dep, ok := strings.CutPrefix(imp, module+"/"); ok {
				graph[pkg] = append(graph[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(graph) < 10 {
		t.Fatalf("found only %d packages under %s", len(graph), root)
	}
	return graph
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
