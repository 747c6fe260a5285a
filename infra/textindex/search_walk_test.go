package textindex

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// referenceSearch is the plain BM25 walk Search must agree with bit for
// bit: every posting of every query term, in term then slot order, scored
// with the textbook expression, then the same top-k selection.
func referenceSearch(ix *Index, collection, query string, k int, f Filter) []Hit {
	c := ix.lookup(collection)
	if c == nil || k <= 0 {
		return nil
	}
	terms := queryTerms(query)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.live == 0 || len(terms) == 0 {
		return nil
	}
	scores := make([]float64, c.ids.len())
	var touched []uint32
	n := float64(c.live)
	avgdl := float64(c.totalLen) / n
	if avgdl == 0 {
		avgdl = 1
	}
	for _, term := range terms {
		id, ok := c.termOf(term)
		if !ok || c.df.at(id) == 0 {
			continue
		}
		df := float64(c.df.at(id))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		image, heap := c.segments(id)
		for _, p := range slices.Concat(image.postings, heap.postings) {
			if c.dead.at(p.slot) {
				continue
			}
			// The exact count: a posting's own is 16-bit
			// (TestCountsPast16Bits checks the larger ones).
			tf := float64(p.tf) / fieldScale
			if big, ok := c.bigTF[uint64(p.slot)<<32|uint64(id)]; ok {
				tf = float64(big) / fieldScale
			}
			norm := k1 * (1 - b + b*float64(c.length.at(p.slot))/avgdl)
			if scores[p.slot] == 0 {
				touched = append(touched, p.slot)
			}
			scores[p.slot] += idf * tf * (k1 + 1) / (tf + norm)
		}
	}
	m := c.compile(f)
	top := topK{k: k, c: c}
	for _, slot := range touched {
		if m.match(c, slot) {
			top.offer(slot, scores[slot])
		}
	}
	return top.hits()
}

// synthCorpus makes documents of Zipf-distributed words (so some posting
// lists are long and most documents have tf 1 for most terms), some long
// documents, repeated words and identifiers.
type synthCorpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

func newSynthCorpus(seed uint64) *synthCorpus {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := &synthCorpus{rng: rng, zipf: rand.NewZipf(rng, 1.1, 1, 2999)}
	for i := range 3000 {
		s.vocab = append(s.vocab, fmt.Sprintf("w%dx", i))
	}
	return s
}

func (s *synthCorpus) text() string {
	n := 5 + s.rng.IntN(30)
	if s.rng.IntN(50) == 0 {
		n = 300 + s.rng.IntN(400) // past any per-length table
	}
	words := make([]string, n)
	for i := range words {
		words[i] = s.vocab[s.zipf.Uint64()]
	}
	if s.rng.IntN(4) == 0 {
		words[0] = fmt.Sprintf("svc-%d-deploy", s.rng.IntN(500))
	}
	return strings.Join(words, " ")
}

func (s *synthCorpus) query() string {
	var words []string
	for range 1 + s.rng.IntN(5) {
		if s.rng.IntN(3) == 0 {
			words = append(words, s.vocab[s.rng.IntN(len(s.vocab))])
		} else {
			words = append(words, s.vocab[s.zipf.Uint64()])
		}
	}
	if s.rng.IntN(5) == 0 {
		words = append(words, fmt.Sprintf("svc-%d-deploy", s.rng.IntN(500)))
	}
	return strings.Join(words, " ")
}

// Search agrees exactly (ids, order, scores to the bit) with the reference
// walk, with a weighted metadata field, dead documents, filters and several k.
func TestSearchMatchesReferenceWalk(t *testing.T) {
	s := newSynthCorpus(1)
	ix := New(Options{MetaWeight: 1.75})
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6000 {
		ix.Upsert("c", Doc{ID: fmt.Sprintf("d%05d", i), Text: s.text(), Meta: s.vocab[i%40] + " speaker" + fmt.Sprint(i%3), Type: []string{"note", "fact"}[i%2],
			Tags: []string{fmt.Sprintf("t%d", i%3)}, CreatedAt: t0.Add(time.Duration(i%500) * time.Minute)})
	}
	// Documents past the 16-bit counts of a posting: a 70,000-word one,
	// and one repeating a word 70,000 times.
	ix.Upsert("c", Doc{ID: "huge", Text: strings.Repeat(s.text()+" ", 3000), Type: "note", CreatedAt: t0})
	ix.Upsert("c", Doc{ID: "repeat", Text: strings.Repeat("w0x ", 70000) + "w1x w2x", Type: "fact", CreatedAt: t0})
	check := func(label string) {
		t.Helper()
		defer func(saved int) { sparseMax = saved }(sparseMax)
		for q := range 300 {
			// Both scoring paths: sparse (merge) and dense (score array).
			sparseMax = []int{0, 1 << 30, 1 << 13}[q%3]
			query := s.query()
			f := Filter{}
			switch q % 4 {
			case 1:
				f.Tags = []string{"t1"}
			case 2:
				f.Types, f.CreatedAfter = []string{"fact"}, t0.Add(100*time.Minute)
			}
			for _, k := range []int{1, 10, 50} {
				got, err := ix.Search(context.Background(), "c", query, k, f)
				if err != nil {
					t.Fatal(err)
				}
				want := referenceSearch(ix, "c", query, k, f)
				if len(got) != len(want) {
					t.Fatalf("%s: %q k=%d: %d hits, reference %d", label, query, k, len(got), len(want))
				}
				for i := range got {
					if got[i].ID != want[i].ID || math.Float64bits(got[i].Score) != math.Float64bits(want[i].Score) {
						t.Fatalf("%s: %q k=%d: hit %d is %s %v, reference %s %v", label, query, k, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
					}
				}
			}
		}
	}
	check("live only")
	// Dead slots (below the compaction threshold) and replaced documents.
	for i := range 1000 {
		if i%3 == 0 {
			ix.Delete("c", fmt.Sprintf("d%05d", i))
		} else if i%3 == 1 {
			ix.Upsert("c", Doc{ID: fmt.Sprintf("d%05d", i), Text: s.text(), Type: "note", CreatedAt: t0})
		}
	}
	check("with dead slots")
}

// BenchmarkSearch measures one agent of ENGRAM_BENCH_MEMORIES (default
// 100000) short Zipf documents, 8 searches at a time, k = 50 as hybrid
// search asks; cpu-ns/op is CPU time per search (steadier than wall time on
// a shared machine).
func BenchmarkSearch(b *testing.B) {
	n := 100000
	if v := os.Getenv("ENGRAM_BENCH_MEMORIES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	s := newSynthCorpus(2)
	before := heapAlloc()
	ix := New(Options{})
	docs := make([]Doc, 0, 1000)
	for i := range n {
		docs = append(docs, Doc{ID: fmt.Sprintf("m%07d", i), Text: s.text(), Type: "note", Tags: []string{fmt.Sprint("t", i%100)}, CreatedAt: time.Unix(int64(i), 0)})
		if len(docs) == cap(docs) {
			ix.Upsert("c", docs...)
			docs = docs[:0]
		}
	}
	ix.Upsert("c", docs...)
	docs = nil
	held := heapAlloc() - before
	queries := make([]string, 4096)
	for i := range queries {
		queries[i] = s.query()
	}
	// memory reports the heap the index holds per document, and the share
	// of its parts (by their slices' capacities).
	b.Run("memory", func(b *testing.B) {
		for b.Loop() {
		}
		c := ix.lookup("c")
		var postings, blocks, docTerms int
		for id := range c.newLists { // a collection built in process: every term is added
			postings += cap(c.newLists[id]) * int(unsafe.Sizeof(posting{}))
			blocks += cap(c.newBlocks[id]) * int(unsafe.Sizeof(block{}))
		}
		for _, terms := range c.docTerms.tail {
			docTerms += int(unsafe.Sizeof(terms)) + cap(terms)*int(unsafe.Sizeof(terms[0]))
		}
		perDoc := func(bytes int) float64 { return float64(bytes) / float64(n) }
		b.ReportMetric(perDoc(int(held)), "heap-B/doc")
		b.ReportMetric(perDoc(postings), "postings-B/doc")
		b.ReportMetric(perDoc(blocks), "blocks-B/doc")
		b.ReportMetric(perDoc(docTerms), "docterms-B/doc")
		b.ReportMetric(perDoc(int(held)-postings-blocks-docTerms), "rest-B/doc")
	})
	b.Run("warm", func(b *testing.B) { benchWarm(b, ix, queries) })
	b.Run("latency", func(b *testing.B) { benchLatency(b, ix, queries, Filter{}) })
	// A tag carried by 1% of the documents: the heap fills slowly, so
	// pruning has little to cut.
	b.Run("latency-filtered", func(b *testing.B) { benchLatency(b, ix, queries, Filter{Tags: []string{"t7"}}) })
	// Under the load benchmark the vector search and HTTP work between
	// two keyword searches evict the index from the caches; cold evicts
	// them (walks 64 MiB) before each timed search.
	b.Run("cold", func(b *testing.B) {
		evict := make([]byte, 64<<20)
		var sink byte
		var spent time.Duration
		i := 0
		for b.Loop() {
			b.StopTimer()
			for j := 0; j < len(evict); j += 64 {
				evict[j]++
				sink += evict[j]
			}
			b.StartTimer()
			t0 := time.Now()
			if _, err := ix.Search(context.Background(), "c", queries[i%len(queries)], 50, Filter{}); err != nil {
				b.Fatal(err)
			}
			spent += time.Since(t0)
			i++
		}
		b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "search-ns/op")
		_ = sink
	})
}

// benchLatency runs one search at a time and reports the median and 99th
// percentile of single searches: the tail is what pruning must cut (a
// query of common words walks long posting lists). The cpu- figures are
// the searching thread's CPU time, which the neighbours' load on a shared
// machine does not inflate as it does wall time.
func benchLatency(b *testing.B, ix *Index, queries []string, f Filter) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var took, cpu []time.Duration
	i := 0
	for b.Loop() {
		t0, c0 := time.Now(), threadCPU(b)
		if _, err := ix.Search(context.Background(), "c", queries[i%len(queries)], 50, f); err != nil {
			b.Fatal(err)
		}
		took, cpu = append(took, time.Since(t0)), append(cpu, threadCPU(b)-c0)
		i++
	}
	for _, d := range []struct {
		name string
		ds   []time.Duration
	}{{"", took}, {"cpu-", cpu}} {
		slices.Sort(d.ds)
		b.ReportMetric(float64(d.ds[len(d.ds)/2].Nanoseconds()), d.name+"p50-ns")
		b.ReportMetric(float64(d.ds[len(d.ds)*99/100].Nanoseconds()), d.name+"p99-ns")
	}
}

// heapAlloc is the live heap after two collections (the second empties
// sync.Pools).
func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func threadCPU(b *testing.B) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

func benchWarm(b *testing.B, ix *Index, queries []string) {
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(queries))
		for pb.Next() {
			if _, err := ix.Search(context.Background(), "c", queries[i%len(queries)], 50, Filter{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.StopTimer()
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := (ru1.Utime.Nano() + ru1.Stime.Nano()) - (ru0.Utime.Nano() + ru0.Stime.Nano())
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
