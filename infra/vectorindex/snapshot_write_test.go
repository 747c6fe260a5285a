package vectorindex

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

// TestFirstWriteAfterRestoreCopiesNoVectors: a graph collection restored
// from a read-only mapping of its image appends its first write's vector
// after the mapped ones rather than copying them all to the heap first (at
// 100k vectors of 100 dimensions that copy was 40 MB and ~50 ms of CPU,
// paid by the first write after every restore), in full precision and
// quantised. The restored port then answers and images as the original
// given the same writes (TestSnapshotRoundTrip checks that for every mode
// and filter, over many writes).
func TestFirstWriteAfterRestoreCopiesNoVectors(t *testing.T) {
	ctx := context.Background()
	const n, dim = 200, 1024
	scope := domain.IndexScope{UserID: "u1", AgentID: "a1"}
	space := domain.VectorSpace{Model: "m", Dimensions: dim}
	for _, quantize := range []bool{false, true} {
		t.Run(fmt.Sprintf("quantize=%v", quantize), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			point := func(i int) domain.VectorPoint {
				v := make([]float32, dim)
				for j := range v {
					v[j] = float32(rng.NormFloat64())
				}
				return domain.VectorPoint{MemoryID: fmt.Sprintf("m%04d", i), UserID: scope.UserID, AgentID: scope.AgentID, Space: space,
					Vector: v, Type: "fact", Tags: []string{"t"}, CreatedAt: baseTime.Add(time.Duration(i) * time.Minute)}
			}
			// A small graph: the test is about the arrays, not the graph.
			opts := Options{ANNThreshold: 100, M: 4, EfConstruction: 16, BuildWhileWriting: true, Quantize: quantize, FloatDir: t.TempDir()}
			orig := NewPort(New(opts))
			t.Cleanup(orig.Index().Close)
			pts := make([]domain.VectorPoint, n)
			for i := range pts {
				pts[i] = point(i)
			}
			must(t, orig.UpsertVectors(ctx, pts...))
			must(t, orig.Index().WaitIndexed(ctx))
			// The restored port's graph build holds off while it is
			// written (writeQuiet), so that what it allocates is not
			// counted as the write's.
			quiet := opts
			quiet.BuildWhileWriting = false
			loaded := load(t, snapshotBytes(t, orig), quiet, "mapped")
			if st := loaded.Index().Stats().PerCollection; len(st) != 1 || st[0].Mode != ModeHNSW || !st[0].InPlace {
				t.Fatalf("restored %+v, want one graph collection read in place", st)
			}
			arena := uint64(n * dim * 4) // the float32 vectors, or the int8 codes
			if quantize {
				arena = n * dim
			}

			first := point(n)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			must(t, loaded.UpsertVectors(ctx, first))
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > arena/2 {
				t.Errorf("the first write after the restore allocated %d bytes, want well under the %d of the vectors it follows", alloc, arena)
			} else {
				t.Logf("the first write after the restore allocated %d bytes beside %d of vectors", alloc, arena)
			}

			must(t, orig.UpsertVectors(ctx, first))
			for _, p := range []*Port{orig, loaded} {
				must(t, p.Index().WaitIndexed(ctx))
			}
			query := domain.VectorQuery{Scope: scope, Space: space, Vector: first.Vector, Limit: 10}
			want, err := orig.SearchVectors(ctx, query)
			must(t, err)
			got, err := loaded.SearchVectors(ctx, query)
			must(t, err)
			if len(want) == 0 || want[0].MemoryID != first.MemoryID || !reflect.DeepEqual(got, want) {
				t.Fatalf("after the write the restored port answers %v, the original %v (want the written point first)", hitIDs(got), hitIDs(want))
			}
			if !bytes.Equal(snapshotBytes(t, loaded), snapshotBytes(t, orig)) {
				t.Fatal("after the same write the images differ")
			}
		})
	}
}
