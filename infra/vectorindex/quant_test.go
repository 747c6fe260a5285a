package vectorindex

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"
)

// The codes of a unit vector reproduce its dot products to within the
// rounding of the per-vector scale: each component is off by at most
// scale/2, so a dot with a unit query by at most (scale/2)·Σ|q_i|
// ≤ (scale/2)·√dim.
func TestQuantizedDotWithinRoundingBound(t *testing.T) {
	for _, dim := range []int{3, 16, 100, 384, 1536} {
		t.Run(fmt.Sprint(dim), func(t *testing.T) {
			gen := newClustered(dim, 4, 1, uint64(dim))
			codes := make([]int8, dim)
			for range 200 {
				v, q := gen.next(), gen.next()
				v, _ = normalized(v)
				q, _ = normalized(q)
				scale := quantizeInto(codes, v)
				got, want := scale*dotCodes(q, codes), dot(q, v)
				bound := scale / 2 * float32(math.Sqrt(float64(dim)))
				if d := float32(math.Abs(float64(got - want))); d > bound {
					t.Fatalf("quantised dot %.5f, exact %.5f: off by %.5f, bound %.5f", got, want, d, bound)
				}
			}
		})
	}
}

func TestQuantizeZeroVector(t *testing.T) {
	codes := []int8{1, 2, 3}
	if s := quantizeInto(codes, []float32{0, 0, 0}); s != 0 || codes[0] != 0 || codes[1] != 0 || codes[2] != 0 {
		t.Fatalf("scale %v codes %v", s, codes)
	}
}

// Hits of a quantised collection carry the exact cosine (rescored from the
// full-precision vectors), not the codes' approximation.
func TestQuantizedHitsCarryExactScores(t *testing.T) {
	ix := New(Options{ANNThreshold: 100, Quantize: true})
	defer ix.Close()
	items := fill(t, ix, 500, 32, 3)
	ix.WaitIndexed(context.Background())
	if st := ix.Stats(); !st.PerCollection[0].Quantized || st.FileBytes != 500*32*4 {
		t.Fatalf("not quantised: %+v", st)
	}
	q := newClustered(32, 4, 1, 9).next()
	sameHits(t, mustSearch(t, ix, q, 10, Filter{}), bruteForce(items, q, 10, Filter{}))
}

// When the float file cannot be created the collection keeps its floats on
// the heap, says why in Stats, and searches stay exact.
func TestQuantizeFallsBackWhenFloatDirUnusable(t *testing.T) {
	ix := New(Options{ANNThreshold: 100, Quantize: true, FloatDir: filepath.Join(t.TempDir(), "missing")})
	defer ix.Close()
	items := fill(t, ix, 300, 16, 4)
	ix.WaitIndexed(context.Background())
	st := ix.Stats().PerCollection[0]
	if st.Quantized || st.QuantizeError == "" || st.Mode != ModeHNSW {
		t.Fatalf("want an unquantised graph collection with the error: %+v", st)
	}
	q := newClustered(16, 4, 1, 5).next()
	if r := recall(mustSearch(t, ix, q, 10, Filter{}), bruteForce(items, q, 10, Filter{})); r < 0.9 {
		t.Fatalf("recall %.2f", r)
	}
}

// A write whose floats cannot be stored fails and changes nothing.
func TestQuantizedUpsertFailsWholeWhenFloatsCannotBeWritten(t *testing.T) {
	ix := New(Options{ANNThreshold: 100, Quantize: true})
	defer ix.Close()
	fill(t, ix, 200, 16, 4)
	ix.WaitIndexed(context.Background())
	c := ix.lookup("c")
	c.mu.Lock()
	c.floats.f.Close() // the file fails every write from now on
	c.mu.Unlock()
	extra := makeItem(10_000, newClustered(16, 1, 1, 6).next())
	if err := ix.Upsert("c", extra); err == nil {
		t.Fatal("upsert with an unwritable float file succeeded")
	}
	if n := ix.Len("c"); n != 200 || ix.contains("c", extra.ID) {
		t.Fatalf("failed upsert changed the collection: Len %d", n)
	}
}
