package vectorindex

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// Writers (upserts, replacements, deletes, drops) and readers (searches,
// stats) run together over collections that cross the ANN threshold, build
// graphs in the background and compact. Run with -race.
func TestConcurrentReadersAndWriters(t *testing.T) {
	const dim = 16
	ix := New(Options{ANNThreshold: 300, CompactFraction: 0.2})
	defer ix.Close()
	ctx := context.Background()
	names := []string{"u/a/m", "u/b/m"}
	var writers, wg sync.WaitGroup
	var stopped atomic.Bool
	var searches atomic.Int64

	for w, name := range names {
		writers.Go(func() {
			gen := newClustered(dim, 10, 1, uint64(w))
			for i := range 1500 {
				it := makeItem(i, gen.next())
				if err := ix.Upsert(name, it); err != nil {
					t.Error(err)
					return
				}
				switch {
				case i%7 == 0 && i > 0: // replace an older item's vector
					old := makeItem(i-1, gen.next())
					if err := ix.Upsert(name, old); err != nil {
						t.Error(err)
					}
				case i%5 == 0 && i > 10: // delete: tombstones, then compaction
					ix.Delete(name, fmt.Sprintf("mem-%06d", i-10))
				}
			}
		})
	}
	wg.Go(func() { // a collection that comes and goes
		gen := newClustered(dim, 3, 1, 9)
		for i := 0; !stopped.Load(); i++ {
			var batch []Item
			for j := range 400 {
				batch = append(batch, makeItem(j, gen.next()))
			}
			if err := ix.Upsert("u/tmp/m", batch...); err != nil {
				t.Error(err)
			}
			ix.DropCollection("u/tmp/m")
		}
	})
	for r := range 4 {
		wg.Go(func() {
			gen := newClustered(dim, 10, 1, uint64(100+r))
			filters := []Filter{{}, {Types: []string{"goal"}}, {Tags: []string{"odd"}}, {Tags: []string{"m1"}}}
			for !stopped.Load() {
				for _, name := range append(names, "u/tmp/m") {
					f := filters[int(searches.Load())%len(filters)]
					hits, err := ix.Search(ctx, name, gen.next(), 10, f)
					if err != nil {
						t.Error(err)
						return
					}
					for i := 1; i < len(hits); i++ {
						if hits[i].Score > hits[i-1].Score {
							t.Errorf("unordered hits %v", hits)
							return
						}
					}
					searches.Add(1)
				}
				ix.Stats()
				ix.Len(names[0])
			}
		})
	}
	writers.Wait()
	stopped.Store(true)
	wg.Wait()
	if err := ix.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		st := statsOf(ix, name)
		t.Logf("%s: %+v", name, st)
		if st.Vectors != ix.Len(name) || st.Mode != ModeHNSW || st.Tombstones*5 > st.Indexed {
			t.Fatalf("%s: %+v", name, st)
		}
	}
	t.Logf("%d searches", searches.Load())
}

func statsOf(ix *Index, name string) CollectionStats {
	for _, cs := range ix.Stats().PerCollection {
		if cs.Name == name {
			return cs
		}
	}
	return CollectionStats{}
}
