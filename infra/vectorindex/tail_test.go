package vectorindex

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// pauseBuilds takes every graph build slot, so no indexer makes progress
// until the returned function gives them back.
func pauseBuilds(ix *Index) (resume func()) {
	for range cap(ix.buildSlots) {
		ix.buildSlots <- struct{}{}
	}
	return func() {
		for range cap(ix.buildSlots) {
			<-ix.buildSlots
		}
	}
}

// A write is searchable as soon as Upsert returns, however far behind the
// graph build is: a memory searched by its own vector is the top hit,
// whether its slot is beyond the graph (build paused) or the graph covers
// part of the collection.
func TestWrittenVectorIsTopHitWhileGraphBehind(t *testing.T) {
	gen := newClustered(32, 20, 1, 5)
	ix := New(Options{ANNThreshold: 300, MaxTail: -1})
	defer ix.Close()
	resume := pauseBuilds(ix)
	next := 0
	write := func(t *testing.T, n int) {
		t.Helper()
		for range n {
			it := makeItem(next, gen.next())
			next++
			if err := ix.Upsert("c", it); err != nil {
				t.Fatal(err)
			}
			hits := mustSearch(t, ix, it.Vector, 10, Filter{})
			if len(hits) == 0 || hits[0].ID != it.ID || hits[0].Score < 0.999 {
				t.Fatalf("%s searched by its own vector right after its write: top hits %v", it.ID, ids(hits))
			}
		}
	}
	behind := func(t *testing.T) {
		t.Helper()
		cs := ix.Stats().PerCollection[0]
		if cs.Mode != ModeBuilding || cs.Indexed >= cs.Vectors {
			t.Fatalf("graph not behind the writes: %+v", cs)
		}
	}

	t.Run("graph empty, build paused", func(t *testing.T) {
		write(t, 600)
		behind(t)
	})
	t.Run("graph partly built, build paused again", func(t *testing.T) {
		resume()
		if err := ix.WaitIndexed(context.Background()); err != nil {
			t.Fatal(err)
		}
		resume = pauseBuilds(ix)
		write(t, 400)
		behind(t)
	})
	resume()
}

// With a tail bound, a writer that outruns a paused build waits in Upsert
// until the build catches up, and the write is then searchable.
func TestUpsertWaitsWhenTailExceedsBound(t *testing.T) {
	gen := newClustered(32, 20, 1, 6)
	ix := New(Options{ANNThreshold: 200, MaxTail: 100})
	defer ix.Close()
	var items []Item
	for i := range 400 {
		items = append(items, makeItem(i, gen.next()))
	}
	// The first 200 cross the threshold: they are the new graph's backlog
	// and never wait. The graph catches up with them before the test.
	if err := ix.Upsert("c", items[:200]...); err != nil {
		t.Fatal(err)
	}
	if err := ix.WaitIndexed(context.Background()); err != nil {
		t.Fatal(err)
	}
	resume := pauseBuilds(ix)
	defer func() {
		if resume != nil {
			resume()
		}
	}()
	// Up to the bound, writes do not wait for the paused build either.
	if err := ix.Upsert("c", items[200:300]...); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ix.Upsert("c", items[300:]...) }()
	select {
	case err := <-done:
		t.Fatalf("Upsert beyond the tail bound returned (%v) while the build was paused", err)
	case <-time.After(300 * time.Millisecond):
	}
	resume()
	resume = nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cs := ix.Stats().PerCollection[0]
	if cs.Vectors-cs.Indexed > 100 {
		t.Fatalf("Upsert returned with %d slots beyond the graph, bound 100", cs.Vectors-cs.Indexed)
	}
	last := items[len(items)-1]
	if hits := mustSearch(t, ix, last.Vector, 1, Filter{}); len(hits) != 1 || hits[0].ID != last.ID {
		t.Fatalf("last write not the top hit: %v", ids(hits))
	}
}

// A bulk load (the start-up fill of an in-process index) is not held back
// by the tail bound before the graph has first caught up: it would
// otherwise take as long as the graph build.
func TestBulkLoadIsNotHeldBackBeforeTheGraphCatchesUp(t *testing.T) {
	gen := newClustered(32, 20, 1, 8)
	ix := New(Options{ANNThreshold: 200, MaxTail: 100})
	defer ix.Close()
	resume := pauseBuilds(ix)
	defer resume()
	for i := 0; i < 1000; i += 100 {
		batch := make([]Item, 100)
		for j := range batch {
			batch[j] = makeItem(i+j, gen.next())
		}
		if err := ix.Upsert("c", batch...); err != nil { // would wait for ever with the build paused
			t.Fatal(err)
		}
	}
	if cs := ix.Stats().PerCollection[0]; cs.Vectors != 1000 || cs.Indexed != 0 {
		t.Fatalf("collection after the load: %+v", cs)
	}
}

// Close stops the build and releases writers waiting on the bound.
func TestCloseReleasesWaitingWriters(t *testing.T) {
	gen := newClustered(16, 5, 1, 7)
	ix := New(Options{ANNThreshold: 50, MaxTail: 10})
	var items []Item
	for i := range 100 {
		items = append(items, makeItem(i, gen.next()))
	}
	if err := ix.Upsert("c", items[:50]...); err != nil {
		t.Fatal(err)
	}
	if err := ix.WaitIndexed(context.Background()); err != nil {
		t.Fatal(err)
	}
	resume := pauseBuilds(ix)
	done := make(chan error, 1)
	go func() { done <- ix.Upsert("c", items[50:]...) }()
	time.Sleep(50 * time.Millisecond)
	closed := make(chan struct{})
	go func() { ix.Close(); close(closed) }()
	resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-closed
}

func TestBuildDeferral(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const quiet = 250 * time.Millisecond
	tests := []struct {
		name      string
		sinceLast time.Duration
		newSlots  int
		bound     int
		want      time.Duration
	}{
		{"written just now, small new tail: hold off for the rest of the quiet time", 50 * time.Millisecond, 10, 100, 200 * time.Millisecond},
		{"quiet for long enough: build", quiet, 10, 100, 0},
		{"new tail at half the bound: build, so writers never wait for the hold-off", 0, 50, 100, 0},
		{"no tail bound: never hold off (nothing would end it under steady writes)", 0, 10, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &collection{graph: &graph{n: 1000}, graphBase: 1000, lastWrite: now.Add(-tc.sinceLast)}
			for range 1000 + tc.newSlots {
				c.ids.add("x")
			}
			if got := c.buildDeferral(now, quiet, tc.bound); got != tc.want {
				t.Fatalf("buildDeferral = %v, want %v", got, tc.want)
			}
		})
	}
}

// A write to a graph collection starts its build, which holds off while
// writes keep coming (writeQuiet). Held off, it has copied nothing: a
// short-lived process (a command-line search catching up a few captures)
// exits before the build would run, and a copy of the graph made at once
// was garbage allocated beside its search (10 MB at 100k vectors), which
// started a collection cycle that made the search wait.
func TestDeferredBuildCopiesNoGraph(t *testing.T) {
	gen := newClustered(8, 20, 1, 7)
	ix := New(Options{ANNThreshold: 300})
	defer ix.Close()
	for i := range 800 {
		if err := ix.Upsert("c", makeItem(i, gen.next())); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.WaitIndexed(context.Background()); err != nil {
		t.Fatal(err)
	}
	g := ix.cols["c"].graph
	graphBytes := uint64(len(g.links0)*4 + len(g.levels) + len(g.upperOff)*4 + len(g.upper)*4)

	dump := make([]byte, 1<<20) // allocated before the count starts
	before := heapAllocated()
	if err := ix.Upsert("c", makeItem(800, gen.next())); err != nil {
		t.Fatal(err)
	}
	waitIndexerParked(t, ix, dump)
	if got := heapAllocated() - before; got >= graphBytes/2 {
		t.Fatalf("a write and its held-off build allocated %d bytes; the graph is %d bytes: the build copied it before it could run", got, graphBytes)
	}
	if cs := ix.Stats().PerCollection[0]; cs.Indexed != 800 || cs.Vectors != 801 {
		t.Fatalf("the held-off build inserted something: %+v", cs)
	}
}

// heapAllocated is the bytes the process has allocated on the heap so far
// (runtime/metrics' count lags behind: it is updated as spans are swept).
func heapAllocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// waitIndexerParked waits until an indexer of ix is blocked in a select
// (holding off for its writers, or waiting for a build slot), read from
// the goroutine dump (into buf): its first argument is ix.
func waitIndexerParked(t *testing.T, ix *Index, buf []byte) {
	t.Helper()
	frame := fmt.Appendf(nil, "vectorindex.(*Index).runIndexer(%p", ix)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for g := range bytes.SplitSeq(buf[:runtime.Stack(buf, true)], []byte("\n\n")) {
			if bytes.Contains(g, frame) && bytes.Contains(g, []byte("[select")) {
				return
			}
		}
	}
	t.Fatal("no indexer of the index blocked in a select within 10s")
}
