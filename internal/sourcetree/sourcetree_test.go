package sourcetree_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engram-memory/engram/internal/sourcetree"
)

// tree makes the files under a new temporary directory and returns it.
func tree(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		path := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestWalkLeavesOutWhatIsNoSource(t *testing.T) {
	root := tree(t,
		"go.mod", "api/a.go", "sdk/typescript/src/index.ts", "sdk/python/src/engram/client.py",
		".git/HEAD", ".mypy_cache/3.11/engram.json", "sdk/python/src/engram/__pycache__/client.pyc",
		"sdk/typescript/node_modules/typescript/lib/tsc.js", "test/mcp-ts/node_modules/x/x.go",
		"bin/engram-test", "bin/pyenv/lib/site-packages/engram/client.py", "sdk/typescript/dist/index.js",
		"api/testdata/fixture.go", "bench-out/load.json", "_scratch/x.go",
	)
	var visited []string
	err := sourcetree.Walk(root, func(path string, d fs.DirEntry) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			visited = append(visited, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"api/a.go", "go.mod", "sdk/python/src/engram/client.py", "sdk/typescript/src/index.ts"}
	if !slices.Equal(visited, want) {
		t.Errorf("visited %q, want %q", visited, want)
	}
}

// The SDK suites beside the race pass write into the tree while it is
// walked; each case removes a path the walk has listed but not yet
// visited, from the visit of the path before it (the hook), and the visit
// reads every path it is given as the tests that walk do.
func TestWalkPassesOverWhatVanishesMidWalk(t *testing.T) {
	cases := []struct {
		name    string
		files   []string
		remove  string // removed while "a.go" is visited
		visited []string
	}{
		{
			name:    "a file removed after its directory was listed",
			files:   []string{"a.go", "b.go", "c.go"},
			remove:  "b.go",
			visited: []string{".", "a.go", "c.go"},
		},
		{
			name:    "a directory removed after its parent was listed",
			files:   []string{"a.go", "b/x.go", "b/y/z.go", "c.go"},
			remove:  "b",
			visited: []string{".", "a.go", "c.go"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, c.files...)
			var visited []string
			err := sourcetree.Walk(root, func(path string, d fs.DirEntry) error {
				if d.IsDir() {
					if _, err := os.ReadDir(path); err != nil {
						return err
					}
				} else if _, err := os.ReadFile(path); err != nil {
					return err
				}
				rel, _ := filepath.Rel(root, path)
				visited = append(visited, filepath.ToSlash(rel))
				if rel == "a.go" {
					if err := os.RemoveAll(filepath.Join(root, c.remove)); err != nil {
						t.Fatal(err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("walk failed: %v", err)
			}
			if !slices.Equal(visited, c.visited) {
				t.Errorf("visited %q, want %q", visited, c.visited)
			}
		})
	}
}

// A directory that vanishes between its visit and its listing skips only
// that directory.
func TestWalkPassesOverADirectoryThatVanishesBeforeItIsListed(t *testing.T) {
	root := tree(t, "a/x.go", "b.go")
	var visited []string
	err := sourcetree.Walk(root, func(path string, d fs.DirEntry) error {
		rel, _ := filepath.Rel(root, path)
		visited = append(visited, filepath.ToSlash(rel))
		if rel == "a" {
			return os.RemoveAll(path) // the walk lists it next
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk failed: %v", err)
	}
	if want := []string{".", "a", "b.go"}; !slices.Equal(visited, want) {
		t.Errorf("visited %q, want %q", visited, want)
	}
}

func TestWalkFailsForWhatStillExists(t *testing.T) {
	unreadable := errors.New("cannot parse")
	root := tree(t, "a.go", "b.go")
	err := sourcetree.Walk(root, func(path string, d fs.DirEntry) error {
		if filepath.Base(path) == "a.go" {
			return unreadable
		}
		return nil
	})
	if !errors.Is(err, unreadable) {
		t.Errorf("walk = %v, want %v", err, unreadable)
	}
	missing := filepath.Join(root, "missing")
	if err := sourcetree.Walk(missing, func(string, fs.DirEntry) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("walk of a missing root = %v, want it not to exist", err)
	}
}
