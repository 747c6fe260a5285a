package vectorindex

import (
	"context"
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
