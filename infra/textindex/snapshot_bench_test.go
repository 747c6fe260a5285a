package textindex

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/snapshot"
)

// BenchmarkWriteSnapshot writes the image of one agent of
// ENGRAM_BENCH_MEMORIES (default 20000) short Zipf documents while a
// writer keeps replacing documents of that agent. capture-ns is the step
// writers wait for (WriteSnapshot's capture, timed alone); on a loaded
// machine write-wait-max-ns, the longest of the writer's writes during an
// image, adds the scheduler's delays to it, and write-ns is the writer's
// usual write beside it. body-bytes is the image's size.
func BenchmarkWriteSnapshot(b *testing.B) {
	n := benchMemories(b)
	ctx := context.Background()
	s := newSynthCorpus(3)
	p := NewPort(Options{}, 0)
	doc := zipfDocuments(s)
	upsertInBatches(b, p, doc, n)
	// The writer's documents are prepared beforehand, so it measures
	// waiting and indexing, not the corpus generator.
	writes := make([]domain.KeywordDocument, 4096)
	for i := range writes {
		writes[i] = doc(i * 7 % n)
	}
	var (
		imaging   atomic.Bool
		stop      = make(chan struct{})
		done      sync.WaitGroup
		mu        sync.Mutex
		worst     time.Duration
		usual     time.Duration
		usualN    int
		bodyBytes int64
	)
	done.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			during := imaging.Load()
			start := time.Now()
			if err := p.UpsertDocuments(ctx, writes[i%len(writes)]); err != nil {
				b.Error(err)
				return
			}
			took := time.Since(start)
			mu.Lock()
			if during {
				worst = max(worst, took)
			} else {
				usual, usualN = usual+took, usualN+1
			}
			mu.Unlock()
			time.Sleep(50 * time.Microsecond) // a steady writer, not a saturating one
		}
	})
	for b.Loop() {
		imaging.Store(true)
		w := &countingWriter{}
		if err := p.WriteSnapshot(w); err != nil {
			b.Fatal(err)
		}
		imaging.Store(false)
		bodyBytes = w.n
	}
	close(stop)
	done.Wait()
	const captures = 20
	start := time.Now()
	for range captures {
		p.snapshotMu.Lock()
		images, _ := p.capture()
		release(images)
		p.snapshotMu.Unlock()
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/captures, "capture-ns")
	b.ReportMetric(float64(worst.Nanoseconds()), "write-wait-max-ns")
	if usualN > 0 {
		b.ReportMetric(float64(usual.Nanoseconds())/float64(usualN), "write-ns")
	}
	b.ReportMetric(float64(bodyBytes), "body-bytes")
}

// countingWriter discards what it is written and counts it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)

// BenchmarkSnapshotRead reads the image of one agent of
// ENGRAM_BENCH_MEMORIES (default 20000) short Zipf documents from its
// mapped snapshot file, as a start does: "read" alone, "search" with one
// search after it (a local CLI search), and "write-search" with a
// replaced document and a new one before the search (a search that
// catches up a capture). B/op and allocs/op are the heap the index takes
// beyond the mapping; cpu-ns/op is the process's user and system time.
func BenchmarkSnapshotRead(b *testing.B) {
	n := benchMemories(b)
	ctx := context.Background()
	s := newSynthCorpus(3)
	p := NewPort(Options{}, 0)
	doc := zipfDocuments(s)
	for i := range n {
		if err := p.UpsertDocuments(ctx, doc(i)); err != nil {
			b.Fatal(err)
		}
	}
	f := imageOf(b, p)
	defer f.Close()
	scope := domain.IndexScope{UserID: "u", AgentID: "a"}
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = s.query()
	}
	replaced, added := doc(n/2), doc(n)
	for _, mode := range []string{"read", "search", "write-search"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU()
			i := 0
			for b.Loop() {
				r, err := ReadSnapshot(f.Body, Options{}, 0)
				if err != nil {
					b.Fatal(err)
				}
				if mode == "write-search" {
					if err := r.UpsertDocuments(ctx, replaced, added); err != nil {
						b.Fatal(err)
					}
				}
				if mode != "read" {
					if _, err := r.SearchKeyword(ctx, domain.KeywordQuery{Scope: scope, Text: queries[i%len(queries)], Limit: 10}); err != nil {
						b.Fatal(err)
					}
				}
				i++
			}
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's user and system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchMemories is the corpus size of the snapshot benchmarks:
// ENGRAM_BENCH_MEMORIES, 20000 by default.
func benchMemories(b *testing.B) int {
	v := os.Getenv("ENGRAM_BENCH_MEMORIES")
	if v == "" {
		return 20000
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// upsertInBatches writes documents 0 to n-1 of doc into p, a thousand
// per call.
func upsertInBatches(b *testing.B, p *Port, doc func(i int) domain.KeywordDocument, n int) {
	b.Helper()
	batch := make([]domain.KeywordDocument, 0, 1000)
	for i := range n {
		batch = append(batch, doc(i))
		if len(batch) == cap(batch) || i == n-1 {
			if err := p.UpsertDocuments(context.Background(), batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// imageOf writes p's image through infra/snapshot and opens it mapped,
// as a restart reads it.
func imageOf(b *testing.B, p *Port) *snapshot.File {
	b.Helper()
	dir := b.TempDir()
	if err := snapshot.Write(dir, snapshot.Header{Kind: "keyword", Version: SnapshotVersion, Checkpoint: 1, EventID: "e1"}, p.WriteSnapshot); err != nil {
		b.Fatal(err)
	}
	f, err := snapshot.Open(dir, "keyword", SnapshotVersion)
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// zipfDocuments makes document i of one agent: a short Zipf text of s
// (the next one at each call), one of 100 tags, created i seconds after
// the epoch.
func zipfDocuments(s *synthCorpus) func(i int) domain.KeywordDocument {
	return func(i int) domain.KeywordDocument {
		return domain.KeywordDocument{MemoryID: fmt.Sprintf("m%07d", i), UserID: "u", AgentID: "a", Type: "note",
			Tags: []string{fmt.Sprint("t", i%100)}, CreatedAt: time.Unix(int64(i), 0), Text: s.text()}
	}
}

// BenchmarkSearchAfterWritesPastAnImage searches one agent of
// ENGRAM_BENCH_MEMORIES (default 20000) short Zipf documents after a
// tenth more were written to it: "heap", an index built in process;
// "image", the same read from its image before those writes (what a
// server restarted from its images holds after taking them), whose terms
// hold postings past the image's lists (collection.segments, join).
// cpu-ns/op is the process's user and system time per search.
func BenchmarkSearchAfterWritesPastAnImage(b *testing.B) {
	n := benchMemories(b)
	ctx := context.Background()
	s := newSynthCorpus(3)
	built := NewPort(Options{}, 0)
	doc := zipfDocuments(s)
	upsertInBatches(b, built, doc, n)
	f := imageOf(b, built)
	defer f.Close()
	restored, err := ReadSnapshot(f.Body, Options{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	for i := n; i < n+n/10; i++ {
		d := doc(i)
		if err := built.UpsertDocuments(ctx, d); err != nil {
			b.Fatal(err)
		}
		if err := restored.UpsertDocuments(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	queries := make([]string, 4096)
	for i := range queries {
		queries[i] = s.query()
	}
	scope := domain.IndexScope{UserID: "u", AgentID: "a"}
	for _, index := range []struct {
		name string
		port *Port
	}{{"heap", built}, {"image", restored}} {
		b.Run(index.name, func(b *testing.B) {
			cpu0 := processCPU()
			i := 0
			for b.Loop() {
				if _, err := index.port.SearchKeyword(ctx, domain.KeywordQuery{Scope: scope, Text: queries[i%len(queries)], Limit: 10}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
