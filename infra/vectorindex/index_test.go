package vectorindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// fill loads n clustered items into collection "c" and returns them.
func fill(t testing.TB, ix *Index, n, dim int, seed uint64) []Item {
	t.Helper()
	g := newClustered(dim, max(4, n/50), 1, seed)
	items := make([]Item, n)
	for i := range items {
		items[i] = makeItem(i, g.next())
	}
	if err := ix.Upsert("c", items...); err != nil {
		t.Fatal(err)
	}
	return items
}

func mustSearch(t testing.TB, ix *Index, q []float32, k int, f Filter) []Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), "c", q, k, f)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// sameHits compares IDs exactly and scores to float tolerance.
func sameHits(t testing.TB, got, want []Hit) {
	t.Helper()
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("ids\n got %v\nwant %v", ids(got), ids(want))
	}
	for i := range got {
		if math.Abs(float64(got[i].Score-want[i].Score)) > 1e-6 || !got[i].CreatedAt.Equal(want[i].CreatedAt) {
			t.Fatalf("hit %d: got %+v want %+v", i, got[i], want[i])
		}
	}
}

func TestExactSearchMatchesBruteForce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, dim  int
		k       int
		workers int
	}{
		{"tiny", 5, 8, 10, 1},
		{"small", 300, 32, 10, 1},
		{"k=1", 300, 32, 1, 1},
		{"k=all", 300, 32, 300, 1},
		// 3000×384 floats exceeds parallelScanFloats: the two-goroutine split.
		{"parallel", 3000, 384, 25, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := New(Options{ANNThreshold: -1, ScanWorkers: tc.workers})
			items := fill(t, ix, tc.n, tc.dim, 1)
			g := newClustered(tc.dim, 4, 1, 99)
			for range 20 {
				q := g.next()
				sameHits(t, mustSearch(t, ix, q, tc.k, Filter{}), bruteForce(items, q, tc.k, Filter{}))
			}
		})
	}
}

func TestFilters(t *testing.T) {
	at := func(i int) time.Time { return baseTime.Add(time.Duration(i) * time.Minute) }
	cases := []struct {
		name string
		f    Filter
		want int // matching items among 1000, to catch an oracle mistake too
	}{
		{"none", Filter{}, 1000},
		{"one type", Filter{Types: []string{"goal"}}, 100},
		{"two types", Filter{Types: []string{"goal", "note"}}, 200},
		{"unknown type", Filter{Types: []string{"nope"}}, 0},
		{"known and unknown type", Filter{Types: []string{"nope", "goal"}}, 100},
		{"one tag", Filter{Tags: []string{"odd"}}, 500},
		{"tags all-of", Filter{Tags: []string{"odd", "m7"}}, 10},
		{"tags all-of disjoint", Filter{Tags: []string{"odd", "m8"}}, 0},
		{"duplicate tag", Filter{Tags: []string{"m7", "m7"}}, 10},
		{"unknown tag", Filter{Tags: []string{"odd", "zzz"}}, 0},
		{"after inclusive", Filter{CreatedAfter: at(990)}, 10},
		{"before exclusive", Filter{CreatedBefore: at(10)}, 10},
		{"window", Filter{CreatedAfter: at(100), CreatedBefore: at(200)}, 100},
		{"empty window", Filter{CreatedAfter: at(200), CreatedBefore: at(200)}, 0},
		{"inverted window", Filter{CreatedAfter: at(300), CreatedBefore: at(200)}, 0},
		{"type+tag+time", Filter{Types: []string{"value"}, Tags: []string{"odd"}, CreatedAfter: at(500)}, 0},
		{"type+tag+time matching", Filter{Types: []string{"belief"}, Tags: []string{"odd"}, CreatedAfter: at(500)}, 50},
	}
	for _, mode := range []struct {
		name string
		opts Options
	}{
		{"flat", Options{ANNThreshold: -1}},
		// A 1000-item graph is cheaper to scan (posting lists, inlined
		// metadata loops) than to walk, so the walk is also forced.
		{"graph-scan", Options{ANNThreshold: 200}},
		{"graph-walk", Options{ANNThreshold: 200, forceWalk: true}},
		// Quantised scans rank by the codes and rescore 4×k candidates:
		// still exact unless a code's rounding reorders items ~4k apart.
		{"graph-scan-int8", Options{ANNThreshold: 200, Quantize: true}},
		{"graph-walk-int8", Options{ANNThreshold: 200, forceWalk: true, Quantize: true}},
	} {
		ix := New(mode.opts)
		items := fill(t, ix, 1000, 16, 2)
		if err := ix.WaitIndexed(context.Background()); err != nil {
			t.Fatal(err)
		}
		q := newClustered(16, 4, 1, 3).next()
		for _, tc := range cases {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				if n := len(bruteForce(items, q, 1e6, tc.f)); n != tc.want {
					t.Fatalf("oracle matches %d, test expects %d", n, tc.want)
				}
				for _, k := range []int{1, 10, 60} {
					want := bruteForce(items, q, k, tc.f)
					got := mustSearch(t, ix, q, k, tc.f)
					if len(got) != len(want) {
						t.Fatalf("k=%d: %d hits, want %d", k, len(got), len(want))
					}
					for _, h := range got {
						if !oracleMatch(items[slices.IndexFunc(items, func(it Item) bool { return it.ID == h.ID })], tc.f) {
							t.Fatalf("hit %s does not match the filter", h.ID)
						}
					}
					if !mode.opts.forceWalk {
						sameHits(t, got, want) // both scans are exact
					}
				}
			})
		}
		ix.Close()
	}
}

func TestKLargerThanMatches(t *testing.T) {
	ix := New(Options{ANNThreshold: -1})
	items := fill(t, ix, 50, 8, 4)
	q := items[0].Vector
	if got := mustSearch(t, ix, q, 500, Filter{}); len(got) != 50 {
		t.Fatalf("%d hits, want all 50", len(got))
	}
	f := Filter{Types: []string{"goal"}}
	got := mustSearch(t, ix, q, 500, f)
	sameHits(t, got, bruteForce(items, q, 500, f))
	if len(got) != 5 {
		t.Fatalf("%d hits, want 5", len(got))
	}
}

func TestTiesNewerFirst(t *testing.T) {
	ix := New(Options{})
	v := []float32{1, 0, 0}
	err := ix.Upsert("c",
		Item{ID: "old", Vector: v, CreatedAt: baseTime},
		Item{ID: "new", Vector: v, CreatedAt: baseTime.Add(time.Hour)},
		Item{ID: "b-same", Vector: v, CreatedAt: baseTime.Add(time.Minute)},
		Item{ID: "a-same", Vector: v, CreatedAt: baseTime.Add(time.Minute)},
		Item{ID: "far", Vector: []float32{0, 1, 0}, CreatedAt: baseTime.Add(2 * time.Hour)},
	)
	if err != nil {
		t.Fatal(err)
	}
	got := ids(mustSearch(t, ix, v, 5, Filter{}))
	want := []string{"new", "a-same", "b-same", "old", "far"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestNormalisesAndScores(t *testing.T) {
	ix := New(Options{})
	if err := ix.Upsert("c", Item{ID: "a", Vector: []float32{3, 4}}, Item{ID: "b", Vector: []float32{-2, 0}}); err != nil {
		t.Fatal(err)
	}
	got := mustSearch(t, ix, []float32{10, 0}, 2, Filter{})
	if got[0].ID != "a" || math.Abs(float64(got[0].Score)-0.6) > 1e-6 || got[1].Score != -1 {
		t.Fatalf("got %+v", got)
	}
	if !got[0].CreatedAt.IsZero() {
		t.Fatalf("zero CreatedAt not preserved: %v", got[0].CreatedAt)
	}
}

func TestUpsertReplaces(t *testing.T) {
	for _, opts := range []Options{{ANNThreshold: -1}, {ANNThreshold: 100}, {ANNThreshold: 100, forceWalk: true}, {ANNThreshold: 100, Quantize: true}} {
		t.Run(fmt.Sprint(opts.ANNThreshold, opts.forceWalk, opts.Quantize), func(t *testing.T) {
			ix := New(opts)
			defer ix.Close()
			items := fill(t, ix, 300, 16, 5)
			ix.WaitIndexed(context.Background())
			// Same vector, new metadata: metadata-only change.
			items[10].Type, items[10].Tags = "special", []string{"x"}
			// New vector: in graph mode a tombstone plus a new slot.
			items[20].Vector = newClustered(16, 1, 0.1, 77).next()
			items[20].CreatedAt = baseTime.Add(-time.Hour)
			if err := ix.Upsert("c", items[10], items[20]); err != nil {
				t.Fatal(err)
			}
			if ix.Len("c") != 300 {
				t.Fatalf("Len %d", ix.Len("c"))
			}
			got := mustSearch(t, ix, items[20].Vector, 1, Filter{})
			sameHits(t, got, bruteForce(items, items[20].Vector, 1, Filter{}))
			f := Filter{Types: []string{"special"}, Tags: []string{"x"}}
			if got := ids(mustSearch(t, ix, items[0].Vector, 5, f)); !slices.Equal(got, []string{items[10].ID}) {
				t.Fatalf("metadata not replaced: %v", got)
			}
			for _, q := range [][]float32{items[1].Vector, items[20].Vector} {
				if got := mustSearch(t, ix, q, 300, Filter{}); len(got) != 300 {
					t.Fatalf("%d hits after replace, want 300", len(got))
				}
			}
		})
	}
}

func TestDuplicateIDsInBatchLastWins(t *testing.T) {
	ix := New(Options{})
	if err := ix.Upsert("c", Item{ID: "a", Vector: []float32{1, 0}, Type: "x"}, Item{ID: "a", Vector: []float32{0, 1}, Type: "y"}); err != nil {
		t.Fatal(err)
	}
	if ix.Len("c") != 1 {
		t.Fatalf("Len %d", ix.Len("c"))
	}
	got := mustSearch(t, ix, []float32{0, 1}, 1, Filter{Types: []string{"y"}})
	if len(got) != 1 || got[0].Score != 1 {
		t.Fatalf("got %+v", got)
	}
}

func TestDelete(t *testing.T) {
	for _, opts := range []Options{{ANNThreshold: -1}, {ANNThreshold: 100}, {ANNThreshold: 100, forceWalk: true}, {ANNThreshold: 100, Quantize: true}} {
		t.Run(fmt.Sprint(opts.ANNThreshold, opts.forceWalk, opts.Quantize), func(t *testing.T) {
			ix := New(opts)
			defer ix.Close()
			items := fill(t, ix, 400, 16, 6)
			ix.WaitIndexed(context.Background())
			// Delete the first, a middle and the last slot, and an unknown id.
			ix.Delete("c", items[0].ID, items[200].ID, items[399].ID, "unknown")
			ix.Delete("nope", "x")
			kept := slices.Concat(items[1:200], items[201:399])
			if ix.Len("c") != len(kept) {
				t.Fatalf("Len %d want %d", ix.Len("c"), len(kept))
			}
			for _, i := range []int{0, 200, 399} {
				got := mustSearch(t, ix, items[i].Vector, len(items), Filter{})
				if slices.Contains(ids(got), items[i].ID) {
					t.Fatalf("deleted %s still found", items[i].ID)
				}
				if len(got) != len(kept) {
					t.Fatalf("%d hits want %d", len(got), len(kept))
				}
				if opts.ANNThreshold < 0 {
					sameHits(t, mustSearch(t, ix, items[i].Vector, 10, Filter{}), bruteForce(kept, items[i].Vector, 10, Filter{}))
				}
			}
			// Re-insert a deleted id.
			if err := ix.Upsert("c", items[200]); err != nil {
				t.Fatal(err)
			}
			if got := mustSearch(t, ix, items[200].Vector, 1, Filter{}); got[0].ID != items[200].ID {
				t.Fatalf("re-inserted item not found: %v", got)
			}
		})
	}
}

// A quantised collection also compacts its float file, and reads its
// floats back onto the heap when it returns to flat mode.
func TestCompactionAfterManyDeletes(t *testing.T) {
	for _, quantize := range []bool{false, true} {
		t.Run(fmt.Sprint("quantize=", quantize), func(t *testing.T) {
			testCompactionAfterManyDeletes(t, Options{ANNThreshold: 200, forceWalk: true, Quantize: quantize})
		})
	}
}

func testCompactionAfterManyDeletes(t *testing.T, opts Options) {
	ix := New(opts)
	defer ix.Close()
	items := fill(t, ix, 1000, 16, 8)
	ix.WaitIndexed(context.Background())
	// 30% deleted exceeds CompactFraction: compaction + graph rebuild.
	var gone []string
	for i := 0; i < 300; i++ {
		gone = append(gone, items[i*3].ID)
	}
	ix.Delete("c", gone...)
	st := ix.Stats().PerCollection[0]
	if st.Tombstones != 0 || st.Vectors != 700 {
		t.Fatalf("after compaction: %+v", st)
	}
	ix.WaitIndexed(context.Background())
	if st := ix.Stats().PerCollection[0]; st.Mode != ModeHNSW || st.Indexed != 700 || st.Quantized != opts.Quantize {
		t.Fatalf("graph not rebuilt: %+v", st)
	}
	var kept []Item
	for i, it := range items {
		if i%3 != 0 || i >= 900 {
			kept = append(kept, it)
		}
	}
	for _, it := range kept[:50] {
		if r := recall(mustSearch(t, ix, it.Vector, 10, Filter{}), bruteForce(kept, it.Vector, 10, Filter{})); r < 0.9 {
			t.Fatalf("recall %.2f after compaction", r)
		}
	}
	// Falling below half the threshold returns the collection to flat mode.
	var rest []string
	for _, it := range kept[:650] {
		rest = append(rest, it.ID)
	}
	ix.Delete("c", rest...)
	if st := ix.Stats().PerCollection[0]; st.Mode != ModeFlat || st.Vectors != 50 || st.Quantized {
		t.Fatalf("want flat with 50: %+v", st)
	}
	sameHits(t, mustSearch(t, ix, kept[660].Vector, 10, Filter{}), bruteForce(kept[650:], kept[660].Vector, 10, Filter{}))
}

func TestDropAndCollections(t *testing.T) {
	ix := New(Options{ANNThreshold: 50})
	defer ix.Close()
	v := []float32{1, 2, 3}
	for _, name := range []string{"u1/a1/m", "u1/a2/m", "u2/a1/m"} {
		if err := ix.Upsert(name, Item{ID: "x", Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	if got := ix.Collections("u1/"); !slices.Equal(got, []string{"u1/a1/m", "u1/a2/m"}) {
		t.Fatalf("Collections: %v", got)
	}
	ix.DropCollection("u1/a1/m")
	ix.DropCollection("missing")
	if got := ix.Collections(""); !slices.Equal(got, []string{"u1/a2/m", "u2/a1/m"}) {
		t.Fatalf("Collections after drop: %v", got)
	}
	if ix.Len("u1/a1/m") != 0 {
		t.Fatal("dropped collection not empty")
	}
	hits, err := ix.Search(context.Background(), "u1/a1/m", v, 5, Filter{})
	if err != nil || len(hits) != 0 {
		t.Fatalf("search of dropped: %v %v", hits, err)
	}
	// A dropped key starts afresh, with a new dimension if need be.
	if err := ix.Upsert("u1/a1/m", Item{ID: "y", Vector: []float32{1, 0}}); err != nil {
		t.Fatal(err)
	}
	// Dropping a collection whose graph is being built stops the build.
	g := newClustered(8, 5, 1, 1)
	var big []Item
	for i := range 500 {
		big = append(big, makeItem(i, g.next()))
	}
	if err := ix.Upsert("big", big...); err != nil {
		t.Fatal(err)
	}
	ix.DropCollection("big")
	ix.WaitIndexed(context.Background())
	if ix.Stats().Collections != 3 {
		t.Fatalf("stats: %+v", ix.Stats())
	}
}

func TestInvalidInput(t *testing.T) {
	ix := New(Options{})
	ctx := context.Background()
	if err := ix.Upsert("c", Item{ID: "a", Vector: []float32{1, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		items []Item
		want  error
	}{
		{"dimension vs collection", []Item{{ID: "b", Vector: []float32{1, 0}}}, ErrDimensionMismatch},
		{"dimension within batch", []Item{{ID: "b", Vector: []float32{1, 0, 0}}, {ID: "c", Vector: []float32{1}}}, ErrDimensionMismatch},
		{"zero vector", []Item{{ID: "b", Vector: []float32{0, 0, 0}}}, ErrInvalidVector},
		{"NaN", []Item{{ID: "b", Vector: []float32{float32(math.NaN()), 0, 0}}}, ErrInvalidVector},
		{"empty vector", []Item{{ID: "b"}}, ErrInvalidVector},
		{"empty id", []Item{{Vector: []float32{1, 0, 0}}}, ErrInvalidItem},
		{"too many tags", []Item{{ID: "b", Vector: []float32{1, 0, 0}, Tags: make([]string, 256)}}, ErrInvalidItem},
		// A bad item anywhere rejects the whole batch.
		{"atomic batch", []Item{{ID: "ok", Vector: []float32{0, 1, 0}}, {ID: "bad", Vector: []float32{0, 0, 0}}}, ErrInvalidVector},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ix.Upsert("c", tc.items...); !errors.Is(err, tc.want) {
				t.Fatalf("got %v want %v", err, tc.want)
			}
			if ix.Len("c") != 1 {
				t.Fatalf("Len %d after failed upsert", ix.Len("c"))
			}
		})
	}
	if _, err := ix.Search(ctx, "c", []float32{1, 0}, 3, Filter{}); !errors.Is(err, ErrDimensionMismatch) {
		t.Fatalf("search dimension: %v", err)
	}
	if _, err := ix.Search(ctx, "c", []float32{0, 0, 0}, 3, Filter{}); !errors.Is(err, ErrInvalidVector) {
		t.Fatalf("search zero query: %v", err)
	}
	if hits, err := ix.Search(ctx, "c", []float32{1, 0, 0}, 0, Filter{}); err != nil || hits != nil {
		t.Fatalf("k=0: %v %v", hits, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ix.Search(cctx, "c", []float32{1, 0, 0}, 3, Filter{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestTimeBoundsExtremes(t *testing.T) {
	ix := New(Options{})
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	ancient := time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
	err := ix.Upsert("c",
		Item{ID: "far", Vector: []float32{1, 0}, CreatedAt: far},
		Item{ID: "ancient", Vector: []float32{1, 0}, CreatedAt: ancient},
		Item{ID: "undated", Vector: []float32{1, 0}},
	)
	if err != nil {
		t.Fatal(err)
	}
	q := []float32{1, 0}
	if got := ids(mustSearch(t, ix, q, 5, Filter{CreatedAfter: baseTime})); !slices.Equal(got, []string{"far"}) {
		t.Fatalf("after: %v", got)
	}
	if got := ids(mustSearch(t, ix, q, 5, Filter{CreatedBefore: baseTime})); !slices.Equal(got, []string{"ancient", "undated"}) {
		t.Fatalf("before: %v", got)
	}
}
