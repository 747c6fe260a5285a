package vectorindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// Agents store the same text many times (a daily "standup done" note), so
// a collection holds groups of identical vectors. A group larger than a
// node's degree must not become a closed clique of the graph: a search
// that enters it must still leave it, and a search for the group's vector
// must find k copies. Recall counts ties: any copy of the k-th best score
// is a right answer.
func TestDuplicateGroupsStayNavigable(t *testing.T) {
	for _, quantize := range []bool{false, true} {
		t.Run(fmt.Sprint("quantize=", quantize), func(t *testing.T) {
			const dim, distinct, groups, copies = 32, 4000, 10, 400
			gen := newClustered(dim, 40, 1, 21)
			var items []Item
			for range distinct {
				items = append(items, makeItem(len(items), gen.next()))
			}
			groupVectors := make([][]float32, groups)
			for g := range groupVectors {
				groupVectors[g] = gen.next()
				for range copies {
					items = append(items, makeItem(len(items), groupVectors[g]))
				}
			}
			rand.New(rand.NewPCG(3, 4)).Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
			ix := New(Options{ANNThreshold: 1000, Quantize: quantize})
			defer ix.Close()
			if err := ix.Upsert("c", items...); err != nil {
				t.Fatal(err)
			}
			if err := ix.WaitIndexed(context.Background()); err != nil {
				t.Fatal(err)
			}
			if st := ix.Stats().PerCollection[0]; st.Mode != ModeHNSW {
				t.Fatalf("graph not built: %+v", st)
			}
			truth := newOracle(items)
			for g, q := range groupVectors {
				if r := recallWithTies(mustSearch(t, ix, q, 10, Filter{}), truth.search(q, 10, Filter{})); r < 1 {
					t.Errorf("group %d's own vector: recall@10 %.2f, want 1 (the group has %d copies)", g, r, copies)
				}
			}
			// Queries between the groups: a search must not be drawn
			// into a group it cannot leave. Same bound as TestHNSWRecall.
			var sum float64
			const queries = 200
			for range queries {
				q := gen.next()
				sum += recallWithTies(mustSearch(t, ix, q, 10, Filter{}), truth.search(q, 10, Filter{}))
			}
			if mean := sum / queries; mean < 0.95 {
				t.Errorf("other queries: recall@10 %.4f, want ≥ 0.95", mean)
			}
		})
	}
}

// recallWithTies is the share of want's k places that got fills with a hit
// scoring at least want's k-th score (rounding aside): with duplicates,
// which copy is returned does not matter.
func recallWithTies(got, want []Hit) float64 {
	if len(want) == 0 {
		return 1
	}
	cut := want[len(want)-1].Score - 1e-5
	n := 0
	for _, h := range got {
		if h.Score >= cut {
			n++
		}
	}
	return float64(min(n, len(want))) / float64(len(want))
}
