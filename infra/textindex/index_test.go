package textindex

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func terms(text string) []string {
	var out []string
	tokenize(text, func(t string) { out = append(out, t) })
	return out
}

func TestTokenize(t *testing.T) {
	for in, want := range map[string][]string{
		"Deployed deploy-v2.4.7-hotfix!": {"deploy", "deploy", "v2", "4", "7", "hotfix", "deploy_v2_4_7_hotfix"},
		"What is Caroline's plan?":       {"carolin", "plan"},
		"don't  STOP":                    {"stop"},
		"user@example.com":               {"user", "exampl", "com", "user_example_com"},
		`" * ( NEAR : - )`:               {"near"},
		"the of and":                     nil,
	} {
		if got := terms(in); !slices.Equal(got, want) {
			t.Errorf("tokenize(%q) = %q, want %q", in, got, want)
		}
	}
}

func search(t *testing.T, ix *Index, coll, q string, k int, f Filter) []Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), coll, q, k, f)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// Scores equal a direct computation of Okapi BM25 with Lucene's IDF.
func TestBM25MatchesReference(t *testing.T) {
	docs := []string{"apple banana apple", "banana cherry", "cherry cherry cherry date", "elder"}
	ix := New(Options{})
	for i, d := range docs {
		ix.Upsert("c", Doc{ID: fmt.Sprint(i), Text: d})
	}
	ix.Upsert("other", Doc{ID: "x", Text: "apple apple apple apple"}) // must not change c's statistics
	hits := search(t, ix, "c", "apple cherry", 10, Filter{})
	n, avgdl := 4.0, 10.0/4
	idf := func(df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }
	part := func(tf, dl float64) float64 { return tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avgdl)) }
	want := map[string]float64{
		"0": idf(1) * part(2, 3),
		"1": idf(2) * part(1, 2),
		"2": idf(2) * part(3, 4),
	}
	if len(hits) != 3 {
		t.Fatalf("hits %v", hits)
	}
	for _, h := range hits {
		if math.Abs(h.Score-want[h.ID]) > 1e-12 {
			t.Fatalf("doc %s: score %v, want %v", h.ID, h.Score, want[h.ID])
		}
	}
}

// Term frequencies and lengths past a posting's 16-bit counts score by
// their exact values, also after a compaction has moved the documents.
func TestCountsPast16Bits(t *testing.T) {
	ix := New(Options{})
	docs := map[string]string{
		"repeat": strings.Repeat("apple ", 70000) + "banana",
		"long":   "apple " + strings.Repeat("cherry ", 70000),
		"short":  "apple banana",
	}
	for _, id := range []string{"repeat", "long", "short"} {
		ix.Upsert("c", Doc{ID: id, Text: docs[id]})
	}
	check := func(label string) {
		t.Helper()
		n, avgdl := 3.0, (70001.0+70001+2)/3
		idf := func(df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }
		part := func(tf, dl float64) float64 { return tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avgdl)) }
		want := map[string]float64{
			"repeat": idf(3)*part(70000, 70001) + idf(2)*part(1, 70001),
			"long":   idf(3) * part(1, 70001),
			"short":  idf(3)*part(1, 2) + idf(2)*part(1, 2),
		}
		hits := search(t, ix, "c", "apple banana", 10, Filter{})
		if len(hits) != 3 {
			t.Fatalf("%s: hits %v", label, hits)
		}
		for _, h := range hits {
			if math.Abs(h.Score-want[h.ID]) > 1e-12 {
				t.Errorf("%s: doc %s: score %v, want %v", label, h.ID, h.Score, want[h.ID])
			}
		}
	}
	check("fresh")
	for i := range 1000 { // dead slots before the big documents: compaction moves them
		ix.Upsert("c", Doc{ID: fmt.Sprint("filler", i), Text: "filler"})
	}
	ix.Upsert("c", Doc{ID: "repeat", Text: docs["repeat"]}, Doc{ID: "long", Text: docs["long"]}, Doc{ID: "short", Text: docs["short"]})
	for i := range 1000 {
		ix.Delete("c", fmt.Sprint("filler", i))
	}
	if c := ix.lookup("c"); c.ids.len() >= 1006 {
		t.Fatalf("not compacted: %d slots", c.ids.len())
	}
	check("compacted")
}

// The metadata field is BM25F's second field: an occurrence there counts
// MetaWeight occurrences in the term frequency but nothing in the document
// length (the field is not length-normalised), and IDF counts a document
// once whichever field holds the term.
func TestBM25FWeighsMetadata(t *testing.T) {
	for _, w := range []float64{0.5, 1, 2.25} {
		ix := New(Options{MetaWeight: w})
		ix.Upsert("c",
			Doc{ID: "0", Text: "apple banana", Meta: "caroline"},
			Doc{ID: "1", Text: "caroline apple", Meta: "melanie"},
			Doc{ID: "2", Text: "cherry", Meta: "caroline apple"},
		)
		hits := search(t, ix, "c", "caroline apple", 10, Filter{})
		n := 3.0
		lengths := []float64{2, 2, 1}
		avgdl := (lengths[0] + lengths[1] + lengths[2]) / n
		idf := math.Log(1 + (n-3+0.5)/(3+0.5)) // both terms are in all three documents
		part := func(tf, dl float64) float64 { return tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avgdl)) }
		want := map[string]float64{
			"0": idf*part(1, lengths[0]) + idf*part(w, lengths[0]),
			"1": idf*part(1, lengths[1]) + idf*part(1, lengths[1]),
			"2": idf*part(w, lengths[2]) + idf*part(w, lengths[2]),
		}
		if len(hits) != 3 {
			t.Fatalf("w=%v: hits %v", w, hits)
		}
		for _, h := range hits {
			if math.Abs(h.Score-want[h.ID]) > 1e-12 {
				t.Errorf("w=%v doc %s: score %v, want %v", w, h.ID, h.Score, want[h.ID])
			}
		}
	}
	// A negative weight leaves metadata out; the tag filter stays exact
	// whatever the metadata says.
	ix := New(Options{MetaWeight: -1})
	ix.Upsert("c", Doc{ID: "a", Text: "hello", Meta: "caroline", Tags: []string{"Caroline"}})
	if hits := search(t, ix, "c", "caroline", 10, Filter{}); len(hits) != 0 {
		t.Fatalf("metadata indexed with a negative weight: %v", hits)
	}
	ix = New(Options{})
	ix.Upsert("c", Doc{ID: "a", Text: "hello", Meta: "caroline", Tags: []string{"Caroline"}})
	if hits := search(t, ix, "c", "caroline", 10, Filter{}); len(hits) != 1 {
		t.Fatalf("metadata not searchable: %v", hits)
	}
	if hits := search(t, ix, "c", "hello", 10, Filter{Tags: []string{"caroline"}}); len(hits) != 0 {
		t.Fatalf("the tag filter is not exact: %v", hits)
	}
}

// After many replaces and deletes (and so compactions) the index answers
// exactly like one built from the surviving documents.
func TestUpdatesAndCompactionEqualFreshIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi")
	text := func() string {
		var b []string
		for range 3 + rng.IntN(10) {
			b = append(b, words[rng.IntN(len(words))])
		}
		return strings.Join(b, " ")
	}
	ix := New(Options{})
	live := map[string]Doc{}
	for i := range 5000 {
		id := fmt.Sprint(rng.IntN(1500))
		switch {
		case i%5 == 4:
			ix.Delete("c", id)
			delete(live, id)
		default:
			d := Doc{ID: id, Text: text(), Type: []string{"note", "belief"}[rng.IntN(2)], Tags: []string{fmt.Sprint("t", rng.IntN(3))},
				CreatedAt: time.Unix(int64(rng.IntN(100)), 0)}
			ix.Upsert("c", d)
			live[id] = d
		}
	}
	fresh := New(Options{})
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fresh.Upsert("c", live[id])
	}
	if ix.Len("c") != len(live) {
		t.Fatalf("len %d, want %d", ix.Len("c"), len(live))
	}
	for _, q := range []string{"alpha", "beta gamma", "pi omicron xi", "kappa alpha mu nu"} {
		for _, f := range []Filter{{}, {Types: []string{"belief"}}, {Tags: []string{"t1"}}, {CreatedAfter: time.Unix(50, 0), CreatedBefore: time.Unix(60, 0)}} {
			a, b := search(t, ix, "c", q, 20, f), search(t, fresh, "c", q, 20, f)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%q %+v: incremental %v\nfresh %v", q, f, a, b)
			}
		}
	}
}

func TestFiltersTiesAndLimits(t *testing.T) {
	ix := New(Options{})
	at := time.Unix(1000, 5)
	ix.Upsert("c",
		Doc{ID: "b", Text: "same words", Type: "note", Tags: []string{"x", "y"}, CreatedAt: at},
		Doc{ID: "a", Text: "same words", Type: "note", Tags: []string{"x"}, CreatedAt: at},
		Doc{ID: "c", Text: "same words", Type: "belief", CreatedAt: at.Add(time.Nanosecond)},
	)
	ids := func(hs []Hit) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.ID)
		}
		return out
	}
	for _, tc := range []struct {
		f    Filter
		k    int
		want []string
	}{
		{Filter{}, 10, []string{"c", "a", "b"}}, // newer first, then id
		{Filter{}, 2, []string{"c", "a"}},
		{Filter{Types: []string{"note"}}, 1, []string{"a"}},
		{Filter{Tags: []string{"x", "y"}}, 10, []string{"b"}},
		{Filter{CreatedAfter: at.Add(time.Nanosecond)}, 10, []string{"c"}},
		{Filter{CreatedBefore: at.Add(time.Nanosecond)}, 10, []string{"a", "b"}},
		{Filter{CreatedBefore: at}, 10, nil},
	} {
		if got := ids(search(t, ix, "c", "words", tc.k, tc.f)); !slices.Equal(got, tc.want) {
			t.Errorf("%+v k=%d: got %v, want %v", tc.f, tc.k, got, tc.want)
		}
	}
	if got := search(t, ix, "missing", "words", 10, Filter{}); got != nil {
		t.Fatalf("missing collection: %v", got)
	}
	ix.DropCollection("c")
	if ix.Len("c") != 0 || len(ix.Collections("")) != 0 {
		t.Fatal("drop left the collection")
	}
}
