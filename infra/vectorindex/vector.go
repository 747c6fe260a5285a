package vectorindex

import (
	"math"

	"github.com/viterin/vek/vek32"
)

// inverseNorm returns 1/|v|, or ok=false when v cannot be normalised (zero,
// NaN or infinite components).
func inverseNorm(v []float32) (inv float64, ok bool) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 || math.IsNaN(ss) || math.IsInf(ss, 0) {
		return 0, false
	}
	return 1 / math.Sqrt(ss), true
}

// scaleInto writes v*inv into dst. Vectors that are already unit length (the
// normal case: providers return normalised embeddings) are copied bit for bit
// so that stored scores equal the caller's own dot products.
func scaleInto(dst, v []float32, inv float64) {
	if math.Abs(inv-1) < 1e-6 {
		copy(dst, v)
		return
	}
	for i, x := range v {
		dst[i] = float32(float64(x) * inv)
	}
}

// normalized returns a unit-length copy of v.
func normalized(v []float32) ([]float32, bool) {
	inv, ok := inverseNorm(v)
	if !ok {
		return nil, false
	}
	out := make([]float32, len(v))
	scaleInto(out, v, inv)
	return out, true
}

func dot(a, b []float32) float32 { return vek32.Dot(a, b) }

// clampScore keeps rounding error from pushing a cosine outside [-1, 1].
func clampScore(s float32) float32 {
	if s > 1 {
		return 1
	}
	if s < -1 {
		return -1
	}
	return s
}

// grow makes room for extra more elements. Large vector arenas grow by
// 1/16 instead of append's 1/4 because the spare capacity counts against the
// index's memory budget (≤1.5× the raw vector bytes): 1/8 alone cost up to
// 0.125× of it, which the 100-d default model cannot afford. Copying the
// arena on every 6% of growth stays far cheaper than building its graph.
// Small arenas double so that single inserts do not copy every time.
func grow[T any](s []T, extra int) []T {
	need := len(s) + extra
	if need <= cap(s) {
		return s
	}
	ns := make([]T, len(s), headroom(cap(s), need))
	copy(ns, s)
	return ns
}

func headroom(old, need int) int {
	const smallElems = 1 << 15
	n := old + old/16
	if old < smallElems {
		n = 2 * old
	}
	return max(n, need)
}
