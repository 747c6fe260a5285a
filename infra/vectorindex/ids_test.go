package vectorindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestIDsSurviveChurn replaces and deletes items at random, in flat mode
// (swap-remove), in graph mode (tombstones, compaction) and across the
// switch, and checks after every step that each ID maps to the slot holding
// it, that deleted IDs map to nothing, that searches return the IDs intact,
// and that the ID arena's garbage is reclaimed.
func TestIDsSurviveChurn(t *testing.T) {
	for _, threshold := range []int{-1, 60, 150} {
		t.Run(fmt.Sprint("threshold=", threshold), func(t *testing.T) {
			ix := New(Options{ANNThreshold: threshold})
			defer ix.Close()
			rng := rand.New(rand.NewPCG(5, 9))
			gen := newClustered(8, 10, 1, 3)
			// IDs of 1 to 300 bytes: lengths above 127 take a 2-byte prefix.
			pool := make([]string, 300)
			for i := range pool {
				pool[i] = fmt.Sprintf("%d-%s", i, strings.Repeat("x", rng.IntN(300)))
			}
			vecs := map[string][]float32{}
			for step := range 3000 {
				id := pool[rng.IntN(len(pool))]
				if _, live := vecs[id]; live && rng.IntN(3) == 0 {
					ix.Delete("c", id)
					delete(vecs, id)
				} else {
					v := gen.next()
					if err := ix.Upsert("c", Item{ID: id, Vector: v}); err != nil {
						t.Fatal(err)
					}
					vecs[id] = v
				}
				checkIDs(t, ix.lookup("c"), pool, vecs, step)
			}
			for id, v := range vecs {
				if got := mustSearch(t, ix, v, 1, Filter{}); len(got) != 1 || got[0].ID != id {
					t.Fatalf("search for %.20q's vector: %v", id, got)
				}
			}
		})
	}
}

func checkIDs(t *testing.T, c *collection, pool []string, vecs map[string][]float32, step int) {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.live() != len(vecs) {
		t.Fatalf("step %d: %d live items, want %d", step, c.live(), len(vecs))
	}
	liveBytes := 0
	for _, id := range pool {
		slot, found := c.slotOf.get(&c.ids, id)
		_, want := vecs[id]
		if found != want {
			t.Fatalf("step %d: %.20q found=%v, want %v", step, id, found, want)
		}
		if found && string(c.ids.at(slot)) != id {
			t.Fatalf("step %d: %.20q maps to slot %d holding %.20q", step, id, slot, c.ids.at(slot))
		}
		if want {
			liveBytes += idSize(id)
		}
	}
	if got := c.ids.bytes.len() - c.ids.garbage; got != liveBytes {
		t.Fatalf("step %d: arena accounts %d live bytes, want %d", step, got, liveBytes)
	}
	if c.ids.bytes.len() > 2*liveBytes+4096+400 {
		t.Fatalf("step %d: arena holds %d bytes for %d live", step, c.ids.bytes.len(), liveBytes)
	}
}

// TestIDArenaLimit: a batch whose IDs would overflow the arena is refused
// whole, and fits again once deletes have left enough garbage to reclaim.
func TestIDArenaLimit(t *testing.T) {
	ix := New(Options{ANNThreshold: -1})
	defer ix.Close()
	item := func(id string) Item { return Item{ID: id, Vector: []float32{1, 2, 3}} }
	if err := ix.Upsert("c", item("a")); err != nil {
		t.Fatal(err)
	}
	c := ix.lookup("c")
	c.mu.Lock()
	c.ids.limit = 100 // bytes; "a" takes 2
	c.mu.Unlock()
	long := strings.Repeat("b", 60) // 61 bytes with its length prefix
	if err := ix.Upsert("c", item(long)); err != nil {
		t.Fatal(err)
	}
	if err := ix.Upsert("c", item("new"), item(long+"2")); err == nil || !strings.Contains(err.Error(), "bytes of item IDs") {
		t.Fatalf("overflowing batch: got %v", err)
	}
	if ix.Len("c") != 2 {
		t.Fatalf("Len %d after the refused batch, want 2", ix.Len("c"))
	}
	ix.Delete("c", long)
	if err := ix.Upsert("c", item("new"), item(long+"2")); err != nil {
		t.Fatalf("batch after freeing room: %v", err)
	}
	for _, id := range []string{"a", "new", long + "2"} {
		c.mu.RLock()
		_, ok := c.slotOf.get(&c.ids, id)
		c.mu.RUnlock()
		if !ok {
			t.Fatalf("%.10q lost", id)
		}
	}
	if _, err := ix.Search(context.Background(), "c", []float32{1, 2, 3}, 3, Filter{}); err != nil {
		t.Fatal(err)
	}
}
