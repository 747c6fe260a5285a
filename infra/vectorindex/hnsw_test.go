package vectorindex

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// annFixture is a collection big enough to have a finished graph.
type annFixture struct {
	ix    *Index
	items []Item
	gen   *clustered
	truth *oracle
}

func newANNFixture(t testing.TB, n, dim int, opts Options) *annFixture {
	t.Helper()
	gen := newClustered(dim, n/100, 1, 11)
	items := make([]Item, n)
	for i := range items {
		items[i] = makeItem(i, gen.next())
	}
	ix := New(opts)
	t.Cleanup(ix.Close)
	start := time.Now()
	if err := ix.Upsert("c", items...); err != nil {
		t.Fatal(err)
	}
	if err := ix.WaitIndexed(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := ix.Stats().PerCollection[0]
	if st.Mode != ModeHNSW || st.Quantized != opts.Quantize {
		t.Fatalf("graph not built as configured: %+v", st)
	}
	t.Logf("%d×%d built in %v (%.0f inserts/s)", n, dim, time.Since(start).Round(time.Millisecond), float64(n)/time.Since(start).Seconds())
	return &annFixture{ix: ix, items: items, gen: gen, truth: newOracle(items)}
}

// meanRecall runs queries drawn from the data's distribution (not stored
// points) and averages recall@k against brute force.
func (fx *annFixture) meanRecall(t testing.TB, queries, k int, f Filter) (float64, int) {
	t.Helper()
	var sum float64
	short := 0
	for range queries {
		q := fx.gen.next()
		want := fx.truth.search(q, k, f)
		got, err := fx.ix.Search(context.Background(), "c", q, k, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < len(want) {
			short++
		}
		sum += recall(got, want)
	}
	return sum / float64(queries), short
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
	n := 30000
	if raceEnabled {
		n = 5000
	}
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

// While the graph is being built, searches walk the built part and scan the
// rest; the union must stay near-exact at every stage.
func TestSearchDuringBuild(t *testing.T) {
	gen := newClustered(32, 50, 1, 13)
	ix := New(Options{ANNThreshold: 500})
	defer ix.Close()
	var items []Item
	for i := range 4000 {
		items = append(items, makeItem(i, gen.next()))
	}
	if err := ix.Upsert("c", items...); err != nil {
		t.Fatal(err)
	}
	var sum float64
	const queries = 100
	sawBuilding := false
	for range queries {
		if ix.Stats().PerCollection[0].Mode == ModeBuilding {
			sawBuilding = true
		}
		q := gen.next()
		sum += recall(mustSearch(t, ix, q, 10, Filter{}), bruteForce(items, q, 10, Filter{}))
	}
	if !sawBuilding {
		t.Log("graph finished before the first query; the mixed path was not exercised")
	}
	if r := sum / queries; r < 0.97 {
		t.Fatalf("recall during build %.3f", r)
	}
}
