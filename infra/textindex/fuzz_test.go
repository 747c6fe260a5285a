package textindex

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzTokenize: any text tokenizes the same way twice into non-empty terms
// without spaces, and a document is found by a query of its own text
// whenever that query has a term.
func FuzzTokenize(f *testing.F) {
	for _, seed := range []string{
		"deploy-v2.4.7-hotfix broke the login page",
		"Caroline's don't DEPLOYING deployed",
		"naïve café — 東京 123 ½ ①",
		"a b c", "", "\x00\xff\xfe", "the of and",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var terms []string
		tokenize(text, func(term string) { terms = append(terms, term) })
		var again []string
		tokenize(text, func(term string) { again = append(again, term) })
		if !slices.Equal(terms, again) {
			t.Fatalf("%q tokenized as %q, then %q", text, terms, again)
		}
		for _, term := range terms {
			if term == "" || strings.ContainsFunc(term, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }) {
				t.Fatalf("%q yields the term %q", text, term)
			}
		}

		ix := New(Options{})
		ix.Upsert("c", Doc{ID: "d", Text: text, Type: "note", CreatedAt: time.Unix(1, 0)})
		hits, err := ix.Search(context.Background(), "c", text, 10, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if found := len(hits) == 1 && hits[0].ID == "d" && hits[0].Score > 0; found != (len(queryTerms(text)) > 0) {
			t.Fatalf("searching %q (terms %q) for itself: %+v", text, queryTerms(text), hits)
		}
	})
}
