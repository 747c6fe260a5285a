//go:build !race

package vectorindex

// The quality tests: what they prove is the quality of the graph built
// (recall against an exact oracle, k hits under a selective filter, groups
// of identical vectors that stay navigable) and the heap it holds, not its
// safety under concurrency. Under the race detector the recall tests cost
// 90 CPU-s with the recall collection cut to 5,000 points; without it 45
// CPU-s with the full 30,000 (shared 2-core machine), and the memory budget
// test ran at a fifth of its sizes. So they are built without -race only,
// at full size: `make test` runs them in a pass without the detector (the
// Makefile's NORACE_TESTS, which names every test of this file;
// docs/testing.md). Each index still builds its graph in its background
// goroutine here; the races of that build against searches and writes are
// the race pass's TestConcurrentReadersAndWriters and TestSearchDuringBuild.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
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

// TestHNSWRecall checks recall@10 against brute force on one graph, without
// a filter and with filters on either side of the walk/scan cost boundary.
// With int8 quantisation the same bounds hold: the codes rank, and the
// floats rescore the best 4×k.
func TestHNSWRecall(t *testing.T) {
	for _, quantize := range []bool{false, true} {
		t.Run(fmt.Sprint("quantize=", quantize), func(t *testing.T) { testHNSWRecall(t, Options{ANNThreshold: 1000, Quantize: quantize}) })
	}
}

func testHNSWRecall(t *testing.T, opts Options) {
	const n = 30000
	fx := newANNFixture(t, n, 64, opts)
	for _, tc := range []struct {
		name string
		f    Filter
		min  float64
	}{
		{"unfiltered", Filter{}, 0.95},
		{"selective 1% tag", Filter{Tags: []string{"m42"}}, 1},
		{"selective 2% time window", Filter{CreatedAfter: baseTime.Add(time.Duration(n/2) * time.Minute), CreatedBefore: baseTime.Add(time.Duration(n/2+n/50) * time.Minute)}, 1},
		{"combined ~5%", Filter{Tags: []string{"odd"}, Types: []string{"episode", "belief"}}, 1},
		{"10% type", Filter{Types: []string{"goal"}}, 0.95},
		{"broad 20% types", Filter{Types: []string{"goal", "note"}}, 0.95},
		{"broad 50% tag", Filter{Tags: []string{"odd"}}, 0.95},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, short := fx.meanRecall(t, 100, 10, tc.f)
			t.Logf("recall@10 = %.4f", r)
			if r < tc.min || short > 0 {
				t.Fatalf("recall@10 %.4f (short results: %d), want ≥ %.2f", r, short, tc.min)
			}
		})
	}
}

// A filter matching 1% must still give k hits whenever k items match, on
// both paths: flat scan and graph collection.
func TestFilteredSearchReturnsK(t *testing.T) {
	for _, opts := range []Options{{ANNThreshold: -1}, {ANNThreshold: 1000}, {ANNThreshold: 1000, forceWalk: true},
		{ANNThreshold: 1000, Quantize: true}, {ANNThreshold: 1000, forceWalk: true, Quantize: true}} {
		ix := New(opts)
		items := fill(t, ix, 5000, 32, 12)
		ix.WaitIndexed(context.Background())
		f := Filter{Tags: []string{"m3"}} // 50 items
		for _, k := range []int{10, 50, 80} {
			q := newClustered(32, 4, 1, uint64(k)).next()
			got := mustSearch(t, ix, q, k, f)
			if want := min(k, 50); len(got) != want {
				t.Fatalf("opts %+v k=%d: %d hits, want %d", opts, k, len(got), want)
			}
			if r := recall(got, bruteForce(items, q, k, f)); r < 1 {
				t.Fatalf("opts %+v k=%d: recall %.2f", opts, k, r)
			}
		}
		ix.Close()
	}
}

// TestMemoryWithinBudget fills a collection (with a finished graph) in
// batches of 1000, as a projection replay would, and checks that the heap
// the index holds stays within 1.5× the raw float32 bytes, and that Stats'
// estimate agrees with the measurement. The per-vector overhead (graph
// links, id, metadata) is fixed, so the small default model's 100 dims are
// the hard case: there it weighs against 400 raw bytes instead of 1,536.
// Two sizes at 100 dims leave the arenas' spare capacity at different
// points of their growth. Quantised, the heap holds int8 codes instead of
// the floats: at most 0.75× the raw bytes at 100 dims, 0.5× at 384.
func TestMemoryWithinBudget(t *testing.T) {
	for _, tc := range []struct {
		n, dim   int
		quantize bool
		budget   float64
	}{
		{20000, 100, false, 1.5}, {30000, 100, false, 1.5}, {20000, 384, false, 1.5},
		{20000, 100, true, 0.75}, {30000, 100, true, 0.75}, {20000, 384, true, 0.5},
	} {
		t.Run(fmt.Sprintf("%d×%d/quantize=%v", tc.n, tc.dim, tc.quantize), func(t *testing.T) {
			ratio, estRatio := measureHeldRatio(t, tc.n, tc.dim, tc.quantize)
			if ratio > tc.budget {
				t.Fatalf("index holds %.3f× the raw vector bytes, budget %.2f×", ratio, tc.budget)
			}
			if d := estRatio/ratio - 1; d > 0.1 || d < -0.1 {
				t.Fatalf("Stats.HeldBytes is %.0f%% off the measured heap (%.3f× vs %.3f×)", 100*d, estRatio, ratio)
			}
		})
	}
}

// measureHeldRatio builds an n×dim graph collection and returns the heap it
// holds, and Stats' estimate of it, as multiples of the raw vector bytes.
func measureHeldRatio(t *testing.T, n, dim int, quantize bool) (ratio, estRatio float64) {
	before := heapInUse()
	// A small efConstruction only speeds the build up: the adjacency's size
	// does not depend on the beam width.
	ix := New(Options{ANNThreshold: n / 2, EfConstruction: 24, Quantize: quantize})
	defer ix.Close()
	gen := newClustered(dim, 200, 1, 21)
	batch := make([]Item, 1000)
	for i := 0; i < n; i += len(batch) {
		for j := range batch {
			batch[j] = makeItem(i+j, gen.next())
		}
		if err := ix.Upsert("u/a/m", batch...); err != nil {
			t.Fatal(err)
		}
	}
	clear(batch)
	if err := ix.WaitIndexed(context.Background()); err != nil {
		t.Fatal(err)
	}
	held := heapInUse() - before
	st := ix.Stats()
	runtime.KeepAlive(ix)
	if st.PerCollection[0].Mode != ModeHNSW || st.PerCollection[0].Quantized != quantize {
		t.Fatalf("graph not built: %+v", st.PerCollection[0])
	}
	raw := float64(n * dim * 4)
	ratio, estRatio = float64(held)/raw, float64(st.HeldBytes)/float64(st.VectorBytes)
	t.Logf("%d×%d: raw %.1f MiB, held %.1f MiB (%.3f×, %.0f B/vector overhead), Stats estimate %.3f×",
		n, dim, raw/(1<<20), float64(held)/(1<<20), ratio, (float64(held)-raw)/float64(n), estRatio)
	return ratio, estRatio
}
