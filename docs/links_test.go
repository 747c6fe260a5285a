// Package docs is Engram's documentation. Its tests check that every
// relative link of the README and the pages here, and every docs/ page a
// Go comment cites, reaches a file that exists and, when it names an
// #anchor, a heading of that file.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/engram-memory/engram/internal/sourcetree"
)

var (
	fencedBlock  = regexp.MustCompile("(?s)```.*?```")
	headingLine  = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	schemePrefix = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
	docsCitation = regexp.MustCompile(`docs/([a-z0-9-]+\.md)(#[a-z0-9-]+)?`)
)

func TestRelativeLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"), filepath.Join("..", "CHANGELOG.md"))

	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		anchors[page] = headingAnchors(string(text))
		return anchors[page]
	}

	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		body := fencedBlock.ReplaceAllString(string(text), "")
		for _, m := range markdownLink.FindAllStringSubmatch(body, -1) {
			target := m[1]
			if schemePrefix.MatchString(target) {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), path)
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: link %q: no file %s", page, target, file)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", page, target, file, anchor)
			}
		}
	}
}

func TestGoCommentsCiteExistingSections(t *testing.T) {
	err := sourcetree.Walk("..", func(path string, d os.DirEntry) error {
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range docsCitation.FindAllStringSubmatch(string(src), -1) {
			text, err := os.ReadFile(m[1])
			if err != nil {
				t.Errorf("%s cites %s: no page %s", path, m[0], m[1])
				continue
			}
			if anchor := strings.TrimPrefix(m[2], "#"); anchor != "" && !headingAnchors(string(text))[anchor] {
				t.Errorf("%s cites %s: %s has no heading with anchor #%s", path, m[0], m[1], anchor)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestHeadingAnchors(t *testing.T) {
	cases := []struct {
		heading, anchor string
	}{
		{"# Several nodes", "several-nodes"},
		{"## PostgreSQL read models (`--read-models postgres`)", "postgresql-read-models---read-models-postgres"},
		{"## Search: cloud, fallback, unpushed memories", "search-cloud-fallback-unpushed-memories"},
		{"### Stats\n### Stats", "stats-1"},
	}
	for _, c := range cases {
		if got := headingAnchors(c.heading); !got[c.anchor] {
			t.Errorf("anchors of %q = %v, want %q among them", c.heading, got, c.anchor)
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// markdown text: lower case, punctuation dropped, spaces as hyphens, and
// -1, -2, … after repeats.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingLine.FindAllStringSubmatch(fencedBlock.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '_', r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			anchors[anchor+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[anchor] = true
		}
		seen[anchor]++
	}
	return anchors
}
