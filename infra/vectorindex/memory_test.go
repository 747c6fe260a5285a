package vectorindex

import (
	"context"
	"fmt"
	"runtime"
	"testing"
)

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // a second cycle also empties sync.Pools
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
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
			n, dim := tc.n, tc.dim
			if raceEnabled {
				n /= 5
			}
			ratio, estRatio := measureHeldRatio(t, n, dim, tc.quantize)
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
