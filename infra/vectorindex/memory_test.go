package vectorindex

import (
	"context"
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

// TestMemoryWithinBudget fills 20k×384 (with a finished graph) in batches of
// 1000, as a projection replay would, and checks that the heap the index
// holds stays within 1.5× the raw float32 bytes, and that Stats' estimate
// agrees with the measurement.
func TestMemoryWithinBudget(t *testing.T) {
	n, dim := 20000, 384
	if raceEnabled {
		n = 4000
	}
	before := heapInUse()
	// A small efConstruction only speeds the build up: every node has the
	// same fixed-size adjacency whatever the beam width.
	ix := New(Options{ANNThreshold: n / 2, EfConstruction: 24})
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

	raw := float64(n * dim * 4)
	ratio := float64(held) / raw
	estRatio := float64(st.HeldBytes) / float64(st.VectorBytes)
	t.Logf("%d×%d: raw %.1f MiB, held %.1f MiB (%.3f×), Stats estimate %.1f MiB (%.3f×), mode %s",
		n, dim, raw/(1<<20), float64(held)/(1<<20), ratio, float64(st.HeldBytes)/(1<<20), estRatio, st.PerCollection[0].Mode)
	if st.PerCollection[0].Mode != ModeHNSW {
		t.Fatalf("graph not built: %+v", st.PerCollection[0])
	}
	if ratio > 1.5 {
		t.Fatalf("index holds %.3f× the raw vector bytes, budget 1.5×", ratio)
	}
	if d := float64(st.HeldBytes)/float64(held) - 1; d > 0.1 || d < -0.1 {
		t.Fatalf("Stats.HeldBytes %d is %.0f%% off the measured %d", st.HeldBytes, 100*d, held)
	}
}
