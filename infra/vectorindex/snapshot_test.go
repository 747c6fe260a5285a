package vectorindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/engram-memory/engram/domain"
)

// snapWorld drives the same port operations on any number of ports: the
// memories of three agents in two spaces, with types, tags and creation
// times searches filter on.
type snapWorld struct {
	rng    *rand.Rand
	scopes []domain.IndexScope
	spaces []domain.VectorSpace
	next   int
}

func newSnapWorld(seed uint64) *snapWorld {
	return &snapWorld{
		rng:    rand.New(rand.NewPCG(seed, 1)),
		scopes: []domain.IndexScope{{UserID: "u1", AgentID: "a1"}, {UserID: "u1", AgentID: "a2"}, {UserID: "u2", AgentID: "a1"}},
		spaces: []domain.VectorSpace{{Model: "small", Dimensions: 12}, {Model: "large", Dimensions: 24}},
	}
}

func (w *snapWorld) vector(dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(w.rng.NormFloat64())
	}
	return v
}

// points makes n points per scope and space; replace > 0 reuses that many
// of the oldest ids (a changed vector: a tombstone and a new slot in a
// graph collection).
func (w *snapWorld) points(n, replace int) []domain.VectorPoint {
	var out []domain.VectorPoint
	for _, sc := range w.scopes {
		for _, sp := range w.spaces {
			for i := range n {
				id := w.next + i
				if i < replace {
					id = w.rng.IntN(max(1, w.next))
				}
				out = append(out, domain.VectorPoint{
					MemoryID: fmt.Sprintf("mem-%05d", id), UserID: sc.UserID, AgentID: sc.AgentID, Space: sp,
					Type: testTypes[id%4], Tags: []string{fmt.Sprintf("t%d", id%7), fmt.Sprintf("g%d", id%3)},
					CreatedAt: baseTime.Add(time.Duration(id) * time.Minute), Forgotten: id%11 == 0,
					Vector: w.vector(sp.Dimensions),
				})
			}
		}
	}
	w.next += n
	return out
}

// ops is a mixed batch of writes: new points, replaced ones, deletes,
// forgets and unforgets.
// ops applies the same writes to every port; tests use BuildWhileWriting so
// that waiting for the graphs takes no write-quiet pauses.
func (w *snapWorld) ops(ctx context.Context, t *testing.T, n int, ports ...*Port) {
	t.Helper()
	pts := w.points(n, n/5)
	var deletes, forgets []string
	for range max(1, n/10) {
		deletes = append(deletes, fmt.Sprintf("mem-%05d", w.rng.IntN(w.next)))
		forgets = append(forgets, fmt.Sprintf("mem-%05d", w.rng.IntN(w.next)))
	}
	for _, p := range ports {
		for lo := 0; lo < len(pts); lo += 100 {
			if err := p.UpsertVectors(ctx, pts[lo:min(len(pts), lo+100)]...); err != nil {
				t.Fatal(err)
			}
			// A graph inserts a slot deleted before it was indexed
			// without links: waiting keeps both ports' graphs alike.
			must(t, p.Index().WaitIndexed(ctx))
		}
		for i, sc := range w.scopes {
			for j, id := range deletes {
				if (i+j)%2 == 0 {
					must(t, p.DeleteMemory(ctx, sc, id))
				}
			}
			for j, id := range forgets {
				must(t, p.SetForgotten(ctx, sc, id, j%3 != 0))
			}
		}
		must(t, p.Index().WaitIndexed(ctx))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// filters are the port's filters: none, types, tags (one and all-of), a
// time window, forgotten included, and combinations.
func (w *snapWorld) filters() []domain.IndexFilter {
	mid := baseTime.Add(time.Duration(w.next/2) * time.Minute)
	return []domain.IndexFilter{
		{},
		{Types: []string{testTypes[1]}},
		{Types: []string{testTypes[0], testTypes[2]}},
		{Tags: []string{"t3"}},
		{Tags: []string{"t3", "g1"}},
		{CreatedAfter: mid},
		{CreatedBefore: mid},
		{IncludeForgotten: true},
		{Types: []string{testTypes[3]}, Tags: []string{"g2"}, CreatedAfter: baseTime.Add(time.Hour), IncludeForgotten: true},
		{Tags: []string{"never-seen"}},
	}
}

// compare asserts that every port answers every query, filter and count
// exactly as the first.
func (w *snapWorld) compare(ctx context.Context, t *testing.T, ports ...*Port) {
	t.Helper()
	for _, sc := range w.scopes {
		for _, sp := range w.spaces {
			for qi := range 4 {
				q := w.vector(sp.Dimensions)
				for fi, f := range w.filters() {
					query := domain.VectorQuery{Scope: sc, Space: sp, Vector: q, Filter: f, Limit: []int{1, 10, 50, 200}[qi], MinScore: []float64{0, 0, 0.1, 0}[qi]}
					want, err := ports[0].SearchVectors(ctx, query)
					must(t, err)
					for _, p := range ports[1:] {
						got, err := p.SearchVectors(ctx, query)
						must(t, err)
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("%v %v query %d filter %d: got %d hits %v, want %d %v", sc, sp, qi, fi, len(got), hitIDs(got), len(want), hitIDs(want))
						}
					}
				}
			}
			want, err := ports[0].CountVectors(ctx, sc, sp)
			must(t, err)
			for _, p := range ports[1:] {
				if got, err := p.CountVectors(ctx, sc, sp); err != nil || got != want {
					t.Fatalf("%v %v: count %d (%v), want %d", sc, sp, got, err, want)
				}
			}
		}
	}
}

func hitIDs(hits []domain.IndexHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.MemoryID
	}
	return out
}

func snapshotBytes(t *testing.T, p *Port) []byte {
	t.Helper()
	var b bytes.Buffer
	must(t, p.WriteSnapshot(&b))
	return b.Bytes()
}

// load reads body in place (mode "in-place"), from a read-only mapping
// of a file ("mapped": a write into it would crash the test), or from an
// odd address ("copied": the index cannot use it in place and copies).
func load(t *testing.T, body []byte, opts Options, mode string) *Port {
	t.Helper()
	switch mode {
	case "copied":
		buf := make([]byte, len(body)+1)
		copy(buf[1:], body)
		body = buf[1:]
	case "mapped":
		path := filepath.Join(t.TempDir(), "vectors.snap")
		must(t, os.WriteFile(path, body, 0o600))
		data, unmap, err := mapFile(path)
		must(t, err)
		t.Cleanup(unmap) // after Close: cleanups run last-in first-out
		body = data
	}
	p, err := ReadSnapshot(body, opts)
	must(t, err)
	t.Cleanup(p.Index().Close)
	return p
}

// A loaded port answers every query with every filter exactly as the one
// it was written from (ids, scores, order, counts), and goes on taking the
// same writes to the same results and the same image, in every mode:
// empty, flat, graph (walked or scanned), quantised, mid-compaction
// tombstones, forgotten memories.
func TestSnapshotRoundTrip(t *testing.T) {
	ctx := context.Background()
	big := 700
	if raceEnabled {
		big = 150
	}
	for _, tc := range []struct {
		name  string
		opts  Options
		n     int // points per agent and space before the snapshot
		graph bool
	}{
		{"empty", Options{}, 0, false},
		{"flat", Options{}, 60, false},
		{"hnsw", Options{ANNThreshold: 100, BuildWhileWriting: true}, big, true},
		{"hnsw-walk", Options{ANNThreshold: 100, BuildWhileWriting: true, forceWalk: true}, big, true},
		{"hnsw-quantized", Options{ANNThreshold: 100, BuildWhileWriting: true, Quantize: true}, big, true},
		{"hnsw-quantized-walk", Options{ANNThreshold: 100, BuildWhileWriting: true, Quantize: true, forceWalk: true}, big, true},
	} {
		for _, mode := range []string{"in-place", "mapped", "copied"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				tc.opts.FloatDir = t.TempDir()
				w := newSnapWorld(7)
				orig := NewPort(New(tc.opts))
				t.Cleanup(orig.Index().Close)
				if tc.n > 0 {
					w.ops(ctx, t, tc.n, orig)
				}
				body := snapshotBytes(t, orig)
				loaded := load(t, body, tc.opts, mode)
				if st := loaded.Index().Stats(); tc.graph && st.PerCollection[0].Mode != ModeHNSW {
					t.Fatalf("loaded %s collection, want a graph", st.PerCollection[0].Mode)
				}
				if again := snapshotBytes(t, loaded); !bytes.Equal(again, body) {
					t.Fatal("the loaded port's image differs from the one it was loaded from")
				}
				w.compare(ctx, t, orig, loaded)

				for round := range 2 {
					w.ops(ctx, t, max(20, tc.n/3), orig, loaded)
					w.compare(ctx, t, orig, loaded)
					if !bytes.Equal(snapshotBytes(t, orig), snapshotBytes(t, loaded)) {
						t.Fatalf("round %d: after the same writes the images differ", round)
					}
				}
				// Dropping a space and an agent.
				for _, p := range []*Port{orig, loaded} {
					must(t, p.DeleteSpace(ctx, w.scopes[0], w.spaces[1]))
					must(t, p.DeleteAgent(ctx, w.scopes[1]))
				}
				w.compare(ctx, t, orig, loaded)
				if !bytes.Equal(snapshotBytes(t, orig), snapshotBytes(t, loaded)) {
					t.Fatal("after dropping a space and an agent the images differ")
				}
			})
		}
	}
}

// A snapshot taken while writers keep writing is the state between two
// writes: each batch (points in two collections and a forget) is in the
// image entirely or not at all, and the writes go on untouched.
func TestSnapshotWhileWriting(t *testing.T) {
	ctx := context.Background()
	opts := Options{ANNThreshold: 200, Quantize: true, FloatDir: t.TempDir()}
	orig := NewPort(New(opts))
	t.Cleanup(orig.Index().Close)
	w := newSnapWorld(3)
	w.scopes = w.scopes[:1]
	const batch = 10
	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			pts := w.points(batch/2, 0) // batch/2 in each of the two spaces
			for j := range pts {
				pts[j].Forgotten = false
			}
			if err := orig.UpsertVectors(ctx, pts...); err != nil {
				writeErr = err
				return
			}
			if i%4 == 0 {
				// Delete one of this batch's points from both spaces:
				// half-applied, the two counts would differ.
				if err := orig.DeleteMemory(ctx, w.scopes[0], pts[0].MemoryID); err != nil {
					writeErr = err
					return
				}
			}
			written.Add(1)
		}
	})
	for written.Load() < 30 {
		time.Sleep(time.Millisecond)
	}
	var images [][]byte
	for range 5 {
		images = append(images, snapshotBytes(t, orig))
	}
	close(stop)
	wg.Wait()
	must(t, writeErr)
	for i, body := range images {
		p := load(t, body, opts, "in-place")
		small, err := p.CountVectors(ctx, w.scopes[0], w.spaces[0])
		must(t, err)
		large, err := p.CountVectors(ctx, w.scopes[0], w.spaces[1])
		must(t, err)
		if small != large || small == 0 {
			t.Fatalf("image %d: %d and %d points in the two spaces, want equal and some", i, small, large)
		}
		// Every point the image holds is whole: found by its own vector.
		for _, sp := range w.spaces {
			c := p.ix.lookup(collectionOf(w.scopes[0], sp))
			c.mu.RLock()
			for s := range uint32(c.ids.len()) {
				if c.stable && c.isDead(s) {
					continue
				}
				if len(c.ids.at(s)) == 0 {
					t.Errorf("image %d: slot %d has no id", i, s)
				}
			}
			c.mu.RUnlock()
		}
	}
}

// Malformed bodies are refused with ErrSnapshot: every truncation of a
// real image, a wrong version, trailing bytes.
func TestReadSnapshotRejects(t *testing.T) {
	ctx := context.Background()
	opts := Options{ANNThreshold: 30, Quantize: true, FloatDir: t.TempDir()}
	orig := NewPort(New(opts))
	t.Cleanup(orig.Index().Close)
	w := newSnapWorld(5)
	w.scopes = w.scopes[:1]
	w.ops(ctx, t, 40, orig)
	body := snapshotBytes(t, orig)

	cases := map[string][]byte{
		"empty":    {},
		"version":  append(binary.LittleEndian.AppendUint32(nil, SnapshotVersion+1), body[4:]...),
		"trailing": append(bytes.Clone(body), 0),
	}
	for cut := 1; cut < len(body); cut += 1 + len(body)/200 {
		cases[fmt.Sprint("cut-", cut)] = body[:cut]
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := ReadSnapshot(data, opts)
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("got %v, %v; want ErrSnapshot", p, err)
			}
		})
	}
}

// An image whose graph links outside what the graph holds is refused with
// ErrSnapshot, so the start refills instead of searching a broken graph:
// a level-0 link past the last node, an upper link to a node below that
// level, a node above the entry's level.
func TestReadSnapshotRefusesABrokenGraph(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		breakIt func(t *testing.T, g *graph)
		want    string
	}{
		{"a level-0 link past the last node", func(t *testing.T, g *graph) {
			g.links0[3*g.m0+1] = uint32(g.n)
		}, "graph node 3 links"},
		{"an upper link to a node below that level", func(t *testing.T, g *graph) {
			upper := slices.IndexFunc(g.levels, func(l uint8) bool { return l > 0 })
			low := slices.Index(g.levels, 0)
			if upper < 0 || low < 0 {
				t.Fatalf("the fixture's graph has no node above level 0 (levels %v)", g.levels)
			}
			g.block(uint32(upper), 1)[0] = uint32(low)
		}, "on level 1"},
		{"a node above the entry's level", func(t *testing.T, g *graph) {
			g.levels[slices.Index(g.levels, 0)] = uint8(g.maxLevel + 1)
		}, "graph node"},
	}
	opts := Options{ANNThreshold: 20, FloatDir: t.TempDir()}
	p := NewPort(New(opts))
	t.Cleanup(p.Index().Close)
	w := newSnapWorld(3)
	w.scopes, w.spaces = w.scopes[:1], w.spaces[:1]
	must(t, p.UpsertVectors(ctx, w.points(200, 0)...))
	must(t, p.Index().WaitIndexed(ctx))
	if _, err := ReadSnapshot(snapshotBytes(t, p), opts); err != nil {
		t.Fatalf("the unbroken image: %v", err)
	}
	names := p.Index().Collections("")
	if len(names) != 1 {
		t.Fatalf("collections %v, want one", names)
	}
	c := p.Index().lookup(names[0])
	g := c.graph
	if g == nil || g.n < 4 {
		t.Fatal("the fixture's collection has no graph")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.mu.Lock()
			links0, upper, levels := slices.Clone(g.links0), slices.Clone(g.upper), slices.Clone(g.levels)
			tc.breakIt(t, g)
			c.mu.Unlock()
			got, err := ReadSnapshot(snapshotBytes(t, p), opts)
			c.mu.Lock()
			g.links0, g.upper, g.levels = links0, upper, levels // unbroken for the next case
			c.mu.Unlock()
			if !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want ErrSnapshot naming %q", got, err, tc.want)
			}
		})
	}
}

// A collection's live slots in ID order, as an image holds them, are
// refused unless the IDs strictly ascend over every live slot.
func TestCheckIDOrderRefusesAnOrderThatIsNot(t *testing.T) {
	ctx := context.Background()
	opts := Options{FloatDir: t.TempDir()}
	orig := NewPort(New(opts))
	t.Cleanup(orig.Index().Close)
	w := newSnapWorld(4)
	w.scopes, w.spaces = w.scopes[:1], w.spaces[:1]
	must(t, orig.UpsertVectors(ctx, w.points(20, 0)...))
	p, err := ReadSnapshot(snapshotBytes(t, orig), opts)
	must(t, err)
	t.Cleanup(p.Index().Close)
	c := p.Index().lookup(p.Index().Collections("")[0])
	if len(c.idOrder) < 3 {
		t.Fatalf("the read collection's ID order: %v", c.idOrder)
	}
	cases := []struct {
		name   string
		change func(order []uint32) []uint32
		ok     bool
	}{
		{"as read", func(o []uint32) []uint32 { return o }, true},
		{"two swapped", func(o []uint32) []uint32 { o[1], o[2] = o[2], o[1]; return o }, false},
		{"one repeated", func(o []uint32) []uint32 { o[2] = o[1]; return o }, false},
		{"one missing", func(o []uint32) []uint32 { return o[1:] }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &decoder{}
			if got := d.checkIDOrder(c, tc.change(slices.Clone(c.idOrder))); got != tc.ok || (!got && !errors.Is(d.err, ErrSnapshot)) {
				t.Fatalf("checkIDOrder = %v (%v), want %v", got, d.err, tc.ok)
			}
		})
	}
}

// FuzzReadSnapshot: any body is refused with an error or loaded into an
// index that can be searched, written and snapshotted without a panic.
func FuzzReadSnapshot(f *testing.F) {
	ctx := context.Background()
	for _, opts := range []Options{{}, {ANNThreshold: 20}, {ANNThreshold: 20, Quantize: true}} {
		opts.FloatDir = f.TempDir()
		p := NewPort(New(opts))
		w := newSnapWorld(9)
		w.scopes, w.spaces = w.scopes[:1], w.spaces[:1]
		for _, pt := range w.points(30, 0) {
			if err := p.UpsertVectors(ctx, pt); err != nil {
				f.Fatal(err)
			}
		}
		if err := p.DeleteMemory(ctx, w.scopes[0], "mem-00003"); err != nil {
			f.Fatal(err)
		}
		if err := p.Index().WaitIndexed(ctx); err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		if err := p.WriteSnapshot(&b); err != nil {
			f.Fatal(err)
		}
		p.Index().Close()
		f.Add(b.Bytes())
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadSnapshot(data, Options{ANNThreshold: 20, BuildWhileWriting: true, FloatDir: dir})
		if err != nil {
			return
		}
		defer p.Index().Close()
		w := newSnapWorld(1)
		for _, sc := range w.scopes[:1] {
			for _, sp := range w.spaces[:1] {
				for _, f := range w.filters() {
					_, _ = p.SearchVectors(ctx, domain.VectorQuery{Scope: sc, Space: sp, Vector: w.vector(sp.Dimensions), Filter: f, Limit: 5})
				}
			}
		}
		for _, name := range p.Index().Collections("") {
			c := p.Index().lookup(name)
			q := make([]float32, max(1, c.dim))
			q[0] = 1
			_, _ = p.Index().Search(ctx, name, q, 5, Filter{Tags: []string{"t1"}})
			_ = p.Index().Upsert(name, Item{ID: "new", Vector: q})
			p.Index().Delete(name, "mem-00001")
		}
		_ = p.Index().WaitIndexed(ctx)
		var b bytes.Buffer
		_ = p.WriteSnapshot(&b)
	})
}

// A snapshot taken while a graph is being built holds the published part
// and the level generator's state at that point: the loaded port finishes
// the build exactly as the original does.
func TestSnapshotMidBuild(t *testing.T) {
	ctx := context.Background()
	opts := Options{ANNThreshold: 100, BuildWhileWriting: true}
	for attempt, n := 0, 2000; ; attempt, n = attempt+1, n*2 {
		orig := NewPort(New(opts))
		w := newSnapWorld(11)
		w.scopes, w.spaces = w.scopes[:1], w.spaces[:1]
		must(t, orig.UpsertVectors(ctx, w.points(n, 0)...))
		// Wait for a first publication of part of the graph.
		var st CollectionStats
		for st.Indexed == 0 {
			time.Sleep(time.Millisecond)
			st = orig.Index().Stats().PerCollection[0]
		}
		body := snapshotBytes(t, orig)
		loaded := load(t, body, opts, "in-place")
		if st := loaded.Index().Stats().PerCollection[0]; st.Indexed == st.Vectors {
			orig.Index().Close()
			if attempt == 4 {
				t.Fatalf("the graph of %d vectors was built before the snapshot could catch it", n)
			}
			continue // built before the snapshot: try a bigger one
		}
		must(t, orig.Index().WaitIndexed(ctx))
		must(t, loaded.Index().WaitIndexed(ctx))
		if !bytes.Equal(snapshotBytes(t, orig), snapshotBytes(t, loaded)) {
			t.Fatal("the loaded port finished the graph differently")
		}
		w.compare(ctx, t, orig, loaded)
		orig.Index().Close()
		return
	}
}

// A loaded collection finds its items without a slot table: by binary
// search in the image's live slots in ID order. A flat collection's first
// write builds the table (its deletes move slots); a graph collection's
// writes keep the ID order, and its table holds only the slots appended
// since the image (a command-line search that catches up a few captures
// builds no table of the whole collection). Either way it holds exactly
// the original's items, tombstoned and swap-removed ones gone.
func TestLoadedCollectionFindsIDsInTheImagesIDOrder(t *testing.T) {
	ctx := context.Background()
	for _, opts := range []Options{{}, {ANNThreshold: 50, BuildWhileWriting: true}} {
		w := newSnapWorld(3)
		w.scopes, w.spaces = w.scopes[:1], w.spaces[:1]
		orig := NewPort(New(opts))
		t.Cleanup(orig.Index().Close)
		w.ops(ctx, t, 120, orig) // replaces, deletes (tombstones or swap-removes)
		loaded := load(t, snapshotBytes(t, orig), opts, "mapped")
		name := orig.Index().Collections("")[0]
		c := loaded.Index().lookup(name)
		if c.idOrder == nil || c.slotOf.n != 0 {
			t.Fatalf("ANN threshold %d: loaded with %d slot table entries and no ID order", opts.ANNThreshold, c.slotOf.n)
		}
		same := func(stage string) {
			for i := range w.next + 5 {
				id := fmt.Sprintf("mem-%05d", i)
				if got, want := loaded.Index().contains(name, id), orig.Index().contains(name, id); got != want {
					t.Fatalf("ANN threshold %d, %s: contains(%s) = %v, want %v", opts.ANNThreshold, stage, id, got, want)
				}
			}
		}
		same("loaded")
		imageSlots := c.ids.len()
		w.ops(ctx, t, 10, orig, loaded) // image items replaced, deleted
		w.ops(ctx, t, 10, orig, loaded) // and some of those again
		switch appended := liveFrom(c, imageSlots); {
		case !c.stable && (c.idOrder != nil || c.slotOf.n != c.live()):
			t.Fatalf("flat: after a write, %d slot table entries for %d live items", c.slotOf.n, c.live())
		case c.stable && (c.idOrder == nil || c.slotOf.n != appended):
			t.Fatalf("graph: after a write, ID order kept %v, %d slot table entries for the %d live slots appended since the image",
				c.idOrder != nil, c.slotOf.n, appended)
		}
		same("after a write")
		w.compare(ctx, t, orig, loaded)
	}
}

// liveFrom counts c's live slots from slot on.
func liveFrom(c *collection, slot int) int {
	n := 0
	for s := slot; s < c.ids.len(); s++ {
		if c.ids.off[s] != noID {
			n++
		}
	}
	return n
}

// An image of body format 1 (written by the build before the IDs in order,
// testdata/vectors-format1.body: newSnapWorld(3) and 40 points of ops in
// a flat port) is still read, its slot table rebuilt, and answers as a
// port given the same writes; its next image is of the current format.
func TestReadsAnImageOfFormatOne(t *testing.T) {
	ctx := context.Background()
	body, err := os.ReadFile("testdata/vectors-format1.body")
	must(t, err)
	if v := binary.LittleEndian.Uint32(body); v != 1 {
		t.Fatalf("the fixture is of format %d", v)
	}
	w := newSnapWorld(3)
	orig := NewPort(New(Options{}))
	t.Cleanup(orig.Index().Close)
	w.ops(ctx, t, 40, orig)
	loaded := load(t, body, Options{}, "mapped")
	if !loaded.ImageOutdated() {
		t.Error("a port read from format 1 does not report its image outdated")
	}
	for _, name := range loaded.Index().Collections("") {
		if c := loaded.Index().lookup(name); c.idOrder != nil || c.slotOf.n != c.live() {
			t.Fatalf("%s: %d slot table entries for %d live items", name, c.slotOf.n, c.live())
		}
	}
	w.compare(ctx, t, orig, loaded)
	again := snapshotBytes(t, loaded)
	if !bytes.Equal(again, snapshotBytes(t, orig)) {
		t.Fatal("the image of the port read from format 1 is not the current format's image of the same writes")
	}
	current := load(t, again, Options{}, "mapped")
	if current.ImageOutdated() {
		t.Error("a port read from the current format reports its image outdated")
	}
	w.compare(ctx, t, orig, current)
}

// A snapshot's catch-up deletes every memory it re-reads, mostly ones
// captured after the image: a delete of IDs a restored collection does not
// hold copies none of its image's arrays and builds no slot table. A flat
// collection's appends then copy none of its image's vectors either (they
// go to the heap tail) and keep its ID order (they move no slot); no
// collection's appends copy its image's IDs (the arena's tail); a delete or a replacement of an image item, which
// changes vectors in place, copies them first (the image is a read-only
// mapping: a write into it would crash the test). The restored port
// answers as the original given the same writes throughout.
func TestCatchUpWritesCopyNoImageVectors(t *testing.T) {
	ctx := context.Background()
	for _, opts := range []Options{{}, {ANNThreshold: 50, BuildWhileWriting: true}} {
		w := newSnapWorld(5)
		orig := NewPort(New(opts))
		t.Cleanup(orig.Index().Close)
		w.ops(ctx, t, 60, orig)
		loaded := load(t, snapshotBytes(t, orig), opts, "mapped")
		each := func(check func(c *collection) string) {
			t.Helper()
			for _, name := range loaded.Index().Collections("") {
				c := loaded.Index().lookup(name)
				c.mu.RLock()
				problem := check(c)
				c.mu.RUnlock()
				if problem != "" {
					t.Fatalf("ANN threshold %d, %s: %s", opts.ANNThreshold, name, problem)
				}
			}
		}
		for _, p := range []*Port{orig, loaded} {
			must(t, p.DeleteMemory(ctx, w.scopes[0], "mem-captured-after-the-image"))
		}
		each(func(c *collection) string {
			if !c.inPlace || c.idOrder == nil || c.slotOf.n != 0 {
				return fmt.Sprintf("a delete of an ID it does not hold: in place %v, ID order kept %v, %d slot table entries", c.inPlace, c.idOrder != nil, c.slotOf.n)
			}
			return ""
		})
		captured := w.points(1, 0)
		for _, p := range []*Port{orig, loaded} {
			must(t, p.UpsertVectors(ctx, captured...))
		}
		each(func(c *collection) string {
			if c.vecs.base == nil || c.idOrder == nil {
				return fmt.Sprintf("an append: image vectors copied %v, ID order dropped %v", c.vecs.base == nil, c.idOrder == nil)
			}
			for _, s := range c.idOrder {
				if id := c.ids.at(s); unsafe.SliceData(id) != unsafe.SliceData(c.imageIDs.at(s)) {
					return fmt.Sprintf("an append copied the image's IDs (%s)", id)
				}
			}
			return ""
		})
		w.compare(ctx, t, orig, loaded)
		replaced := w.points(2, 2)
		for _, p := range []*Port{orig, loaded} {
			for _, sc := range w.scopes {
				must(t, p.DeleteMemory(ctx, sc, "mem-00003"))
			}
			must(t, p.UpsertVectors(ctx, replaced...))
		}
		w.compare(ctx, t, orig, loaded)
	}
}
