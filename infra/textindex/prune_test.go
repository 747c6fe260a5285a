package textindex

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The pruned walk (and, for filtered searches, the dense one) returns
// exactly what the reference does (the same documents in the same order
// with the same scores to the bit) over many random collections:
// vocabularies small enough for ties and large enough for rare words, long
// documents, a weighted metadata field, replaced and deleted documents
// (with and without compaction), every kind of filter and k from 1 to
// past the matches.
func TestPrunedSearchMatchesReferenceWalk(t *testing.T) {
	defer func(saved int) { sparseMax = saved }(sparseMax)
	sparseMax = 0 // every search takes the pruned walk
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		vocab := make([]string, 2+rng.IntN(400))
		for i := range vocab {
			vocab[i] = fmt.Sprintf("v%dq", i)
		}
		zipf := rand.NewZipf(rng, 1.01+rng.Float64(), 1, uint64(len(vocab)-1))
		word := func() string { return vocab[zipf.Uint64()] }
		text := func() string {
			n := 1 + rng.IntN(12)
			if rng.IntN(40) == 0 {
				n = 200 + rng.IntN(300)
			}
			words := make([]string, n)
			for i := range words {
				words[i] = word()
			}
			return strings.Join(words, " ")
		}
		ix := New(Options{MetaWeight: []float64{-1, 0, 0.5, 3}[rng.IntN(4)]})
		docs := 20 + rng.IntN(3000)
		doc := func(i int) Doc {
			return Doc{ID: fmt.Sprintf("d%05d", i), Text: text(), Meta: word(), Type: []string{"note", "fact", "belief"}[rng.IntN(3)],
				Tags:      []string{fmt.Sprintf("t%d", rng.IntN(4))},
				CreatedAt: t0.Add(time.Duration(rng.IntN(1+rng.IntN(200))) * time.Hour)} // few distinct times: ties reach the id
		}
		for i := range docs {
			ix.Upsert("c", doc(i))
		}
		for range rng.IntN(docs) { // up to half of them dead: sometimes compacted, sometimes not
			i := rng.IntN(docs)
			if rng.IntN(2) == 0 {
				ix.Delete("c", fmt.Sprintf("d%05d", i))
			} else {
				ix.Upsert("c", doc(i))
			}
		}
		for q := range 60 {
			words := make([]string, 1+rng.IntN(6))
			for i := range words {
				words[i] = word()
			}
			query := strings.Join(words, " ")
			var f Filter // every other query: filtered searches take the dense walk
			if q%2 == 1 {
				f.Types = []string{"fact", "belief"}[:1+rng.IntN(2)]
				if rng.IntN(3) == 0 {
					f.Tags = []string{fmt.Sprintf("t%d", rng.IntN(4))}
				}
				if rng.IntN(3) == 0 {
					f.CreatedAfter = t0.Add(time.Duration(rng.IntN(100)) * time.Hour)
				}
				if rng.IntN(3) == 0 {
					f.CreatedBefore = t0.Add(time.Duration(50+rng.IntN(150)) * time.Hour)
				}
			}
			k := []int{1, 2, 10, 50, 100, 5000}[q/2%6]
			got, err := ix.Search(context.Background(), "c", query, k, f)
			if err != nil {
				t.Fatal(err)
			}
			want := referenceSearch(ix, "c", query, k, f)
			if len(got) != len(want) {
				t.Fatalf("seed %d: %q k=%d %+v: %d hits, reference %d", seed, query, k, f, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] || math.Float64bits(got[i].Score) != math.Float64bits(want[i].Score) {
					t.Fatalf("seed %d: %q k=%d %+v: hit %d is %+v, reference %+v", seed, query, k, f, i, got[i], want[i])
				}
			}
		}
	}
}

// A pruned search of a common word next to a rare one walks a small part
// of the common word's postings: the point of pruning, pinned so that a
// change which quietly scores everything again fails.
func TestPrunedSearchSkipsPostings(t *testing.T) {
	ix := New(Options{})
	for i := range 20000 {
		text := "common filler"
		if i < 1000 && i%100 == 0 {
			text = "common rare"
		}
		ix.Upsert("c", Doc{ID: fmt.Sprint(i), Text: text, CreatedAt: time.Unix(int64(i), 0)})
	}
	c := ix.lookup("c")
	s := new(scratch)
	common, _ := c.termOf("common")
	rare, _ := c.termOf("rare")
	n := float64(c.live)
	idf := func(term uint32) float64 { df := float64(c.df.at(term)); return math.Log(1 + (n-df+0.5)/(df+0.5)) }
	_, commonList := c.segments(common)
	_, rareList := c.segments(rare)
	s.lists = []termList{{term: common, idf: idf(common), segment: commonList}, {term: rare, idf: idf(rare), segment: rareList}}
	sc := scorer{c: c, avgdl: float64(c.totalLen) / n}
	top := topK{k: 10, c: c}
	sc.pruned(s, &top)
	if len(top.slots) != 10 {
		t.Fatalf("%d hits", len(top.slots))
	}
	// Once the ten "rare" documents (the first thousand slots) fill the
	// heap, "common" alone cannot reach it and the walk ends.
	for _, cur := range s.cursors {
		if cur.list.term == common && cur.pos > 1000 {
			t.Fatalf("the common word's cursor walked to %d of %d postings", cur.pos, len(commonList.postings))
		}
	}
}
