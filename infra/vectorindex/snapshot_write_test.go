package vectorindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

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

// TestRestoredSlotTableIsUsedInPlace: a collection read from an image
// probes the image's slot table (ID → slot) where it lies, in a flat and
// in a graph collection, instead of hashing every ID into a new table
// (that rebuild was most of reading a 100k-vector image); the first write
// copies the table and leaves the image as it was. A table that does not
// match the collection's live slots is refused.
func TestRestoredSlotTableIsUsedInPlace(t *testing.T) {
	ctx := context.Background()
	const n = 300
	scope := domain.IndexScope{UserID: "u1", AgentID: "a1"}
	space := domain.VectorSpace{Model: "m", Dimensions: 4}
	point := func(i int) domain.VectorPoint {
		return domain.VectorPoint{MemoryID: fmt.Sprintf("m%04d", i), UserID: scope.UserID, AgentID: scope.AgentID, Space: space,
			Vector: []float32{float32(i%17 + 1), float32(i%5 + 1), float32(i % 3), 1}, Type: "fact", CreatedAt: baseTime}
	}
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"flat", Options{}},
		{"graph", Options{ANNThreshold: 100, BuildWhileWriting: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := NewPort(New(tc.opts))
			t.Cleanup(orig.Index().Close)
			for i := range n {
				must(t, orig.UpsertVectors(ctx, point(i)))
			}
			must(t, orig.DeleteMemory(ctx, scope, point(7).MemoryID)) // a graph collection's tombstone
			must(t, orig.Index().WaitIndexed(ctx))
			body := snapshotBytes(t, orig)
			image := bytes.Clone(body)

			loaded := load(t, body, tc.opts, "in-place")
			name := orig.Index().Collections("")[0]
			c := loaded.Index().lookup(name)
			if c.stable != (tc.opts.ANNThreshold > 0) {
				t.Fatalf("restored a collection with stable=%v", c.stable)
			}
			cells := c.slotOf.cells
			at := within(cells, body)
			if at < 0 {
				t.Fatal("the restored slot table is not the image's: it was rebuilt")
			}
			for i := range n {
				if got, want := loaded.Index().contains(name, point(i).MemoryID), i != 7; got != want {
					t.Fatalf("restored collection holds %s: %v, want %v", point(i).MemoryID, got, want)
				}
			}
			must(t, loaded.UpsertVectors(ctx, point(3), point(n)))
			if within(c.slotOf.cells, body) >= 0 || !bytes.Equal(body, image) {
				t.Fatal("the first write changed the image's slot table instead of a copy")
			}
			if st := loaded.Index().Stats().PerCollection[0]; st.Vectors != n {
				t.Fatalf("after replacing one memory and adding one: %d live vectors, want %d", st.Vectors, n)
			}

			// The image's table, changed: each change is refused.
			slots := uint32(c.ids.len())
			first := func(pred func(uint32) bool) int {
				for i, v := range cells {
					if pred(v) {
						return i
					}
				}
				t.Fatal("no such cell")
				return 0
			}
			empty, occupied := first(func(v uint32) bool { return v == 0 }), first(func(v uint32) bool { return v != 0 })
			bad := map[string]func(cells []uint32){
				"a live slot twice":   func(cells []uint32) { cells[empty] = cells[occupied] },
				"a live slot absent":  func(cells []uint32) { cells[occupied] = 0 },
				"a slot past the end": func(cells []uint32) { cells[occupied] = slots + 1 },
			}
			if tc.opts.ANNThreshold > 0 {
				dead := uint32(0)
				for c.ids.off[dead] != noID {
					dead++
				}
				bad["a tombstone"] = func(cells []uint32) { cells[empty] = dead + 1 }
			}
			for what, change := range bad {
				data := bytes.Clone(image)
				change(unsafe.Slice((*uint32)(unsafe.Pointer(&data[at])), len(cells)))
				if _, err := ReadSnapshot(data, tc.opts); !errors.Is(err, ErrSnapshot) {
					t.Errorf("a slot table naming %s: %v, want ErrSnapshot", what, err)
				}
			}
		})
	}
}

// within is the byte offset of s's elements in b, or -1 when they lie
// elsewhere.
func within(s []uint32, b []byte) int {
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if len(s) == 0 || p < lo || p+uintptr(len(s))*4 > lo+uintptr(len(b)) {
		return -1
	}
	return int(p - lo)
}

// TestVersion1ImageIsStillRead: an image written before the slot tables
// were kept (body version 1) is read, its tables rebuilt, and answers and
// takes writes as the original: a start from it is not a refill (which at
// 100k memories takes seconds and leaves an image whose graph is not built
// yet).
func TestVersion1ImageIsStillRead(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"flat", Options{}},
		{"graph", Options{ANNThreshold: 100, BuildWhileWriting: true}},
		{"graph-quantized", Options{ANNThreshold: 100, BuildWhileWriting: true, Quantize: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.FloatDir = t.TempDir()
			w := newSnapWorld(11)
			w.scopes, w.spaces = w.scopes[:1], w.spaces[:1] // one collection: enough for the layout
			orig := NewPort(New(tc.opts))
			t.Cleanup(orig.Index().Close)
			w.ops(ctx, t, 150, orig)
			if st := orig.Index().Stats().PerCollection; len(st) != 1 || (st[0].Mode == ModeFlat) != (tc.opts.ANNThreshold == 0) {
				t.Fatalf("collections %+v, want one, a graph one when there is a threshold", st)
			}
			var v1 bytes.Buffer
			must(t, orig.writeSnapshot(&v1, 1))
			if got := binary.LittleEndian.Uint32(v1.Bytes()); got != 1 {
				t.Fatalf("image of version %d, want 1", got)
			}
			loaded := load(t, v1.Bytes(), tc.opts, "mapped")
			w.compare(ctx, t, orig, loaded)
			w.ops(ctx, t, 50, orig, loaded)
			w.compare(ctx, t, orig, loaded)
		})
	}
}
