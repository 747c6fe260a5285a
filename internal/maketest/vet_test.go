package maketest

import (
	"bufio"
	"bytes"
	"go/build/constraint"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/internal/sourcetree"
)

// make test's go test passes do not vet (lint vets every package), and
// lint's go vet ./... reads a plain build's files: so lint vets each
// package with a file whose build constraint names the race tag once more
// with that tag, or such a file would be vetted nowhere.
func TestLintVetsWhatOnlyARaceBuildReads(t *testing.T) {
	root := filepath.Join("..", "..")
	var want []string
	err := sourcetree.Walk(root, func(path string, d fs.DirEntry) error {
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if namesRace(t, path, src) {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			if pkg := "./" + filepath.ToSlash(rel) + "/"; !slices.Contains(want, pkg) {
				want = append(want, pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("no file names the race tag: infra/vectorindex's race_on_test.go did")
	}
	slices.Sort(want)

	out, err := exec.CommandContext(t.Context(), "make", "-n", "-C", root, "lint").Output()
	if err != nil {
		t.Fatalf("make -n lint: %v", err)
	}
	var got []string
	for line := range strings.Lines(string(out)) {
		if _, rest, ok := strings.Cut(strings.TrimSpace(line), "go vet -tags race "); ok {
			got = append(got, strings.Fields(rest)...)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("make lint vets %q with the race tag, want %q", got, want)
	}
}

// namesRace reports whether the file's //go:build line names the race tag.
func namesRace(t *testing.T, path string, src []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "package ") {
			return false
		}
		if !constraint.IsGoBuild(line) {
			continue
		}
		expr, err := constraint.Parse(line)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return hasTag(expr, "race")
	}
	return false
}

// hasTag reports whether expr names tag anywhere (Eval would stop at the
// first operand that decides an || or an &&).
func hasTag(expr constraint.Expr, tag string) bool {
	switch e := expr.(type) {
	case *constraint.TagExpr:
		return e.Tag == tag
	case *constraint.NotExpr:
		return hasTag(e.X, tag)
	case *constraint.AndExpr:
		return hasTag(e.X, tag) || hasTag(e.Y, tag)
	case *constraint.OrExpr:
		return hasTag(e.X, tag) || hasTag(e.Y, tag)
	}
	return false
}
