package textindex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/snapshot"
)

// An index read from its snapshot answers every search exactly as the
// index it was written from (documents, order, scores to the bit), for
// every filter and with or without forgotten memories, and goes on doing
// so as both take the same further writes (replacing, deleting, forgetting
// and compacting on the restored arrays), and through a second image
// taken of the restored index, in every walk of the postings. Images are
// read from a read-only mapping of their file, as a start reads them: a
// write into the image's arrays would crash the test.
func TestSnapshotRestoresAnIndexThatSearchesTheSame(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 27))
		vocab := make([]string, 2+rng.IntN(300))
		for i := range vocab {
			vocab[i] = fmt.Sprintf("w%dz", i)
		}
		word := func(rng *rand.Rand) string { return vocab[rng.IntN(len(vocab))] }
		text := func(rng *rand.Rand) string {
			n := 1 + rng.IntN(10)
			if rng.IntN(400) == 0 {
				n = 17000 // past a posting's 16 bits
			}
			words := make([]string, n)
			for i := range words {
				words[i] = word(rng)
			}
			return strings.Join(words, " ")
		}
		scopes := []domain.IndexScope{{UserID: "u1", AgentID: "a"}, {UserID: "u1", AgentID: "b"}, {UserID: "u2", AgentID: "a"}}
		doc := func(i int, rng *rand.Rand) domain.KeywordDocument {
			s := scopes[i%len(scopes)]
			return domain.KeywordDocument{MemoryID: fmt.Sprintf("m%05d", i), UserID: s.UserID, AgentID: s.AgentID,
				Type: []string{"note", "fact", "belief"}[rng.IntN(3)], Tags: []string{fmt.Sprintf("t%d", rng.IntN(4))}[:rng.IntN(2)],
				CreatedAt: t0.Add(time.Duration(rng.IntN(100)) * time.Hour), Text: text(rng), Meta: word(rng), Forgotten: rng.IntN(8) == 0}
		}
		writes := func(p *Port, n, docs int, rng *rand.Rand) {
			for range n {
				i := rng.IntN(docs)
				s := scopes[i%len(scopes)]
				var err error
				switch rng.IntN(4) {
				case 0:
					err = p.DeleteMemory(ctx, s, fmt.Sprintf("m%05d", i))
				case 1:
					err = p.SetForgotten(ctx, s, fmt.Sprintf("m%05d", i), rng.IntN(2) == 0)
				default:
					err = p.UpsertDocuments(ctx, doc(i, rng))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		opts := Options{MetaWeight: []float64{-1, 0, 2}[rng.IntN(3)]}
		orig := NewPort(opts, 0)
		docs := 50 + rng.IntN(800)
		for i := range docs {
			if err := orig.UpsertDocuments(ctx, doc(i, rng)); err != nil {
				t.Fatal(err)
			}
		}
		writes(orig, docs, docs, rng) // dead slots, compactions, forgotten flags
		restored := mappedImage(t, orig, opts)
		same := func(stage string) {
			// Every walk (merged, dense and pruned), each reading the two
			// segments of a term with postings written past its image's.
			defer func(saved int) { sparseMax = saved }(sparseMax)
			for q := range 60 {
				sparseMax = []int{0, 1 << 30, 1 << 13}[q%3]
				query := domain.KeywordQuery{Scope: scopes[q%len(scopes)], Text: word(rng) + " " + word(rng), Limit: 1 + rng.IntN(40)}
				switch rng.IntN(5) {
				case 0:
					query.Filter.Types = []string{"fact"}
				case 1:
					query.Filter.Tags = []string{"t1"}
				case 2:
					query.Filter.CreatedAfter, query.Filter.CreatedBefore = t0.Add(10*time.Hour), t0.Add(60*time.Hour)
				case 3:
					query.MinScore = 0.2
				}
				query.Filter.IncludeForgotten = rng.IntN(2) == 0
				want, err1 := orig.SearchKeyword(ctx, query)
				got, err2 := restored.SearchKeyword(ctx, query)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d %s: %+v\nrestored: %v\noriginal: %v", seed, stage, query, got, want)
				}
			}
			for _, s := range scopes {
				if a, b := restored.Len(s), orig.Len(s); a != b {
					t.Fatalf("seed %d %s: Len(%v) = %d, original %d", seed, stage, s, a, b)
				}
			}
		}
		same("restored")
		further := rng.Uint64()
		writes(orig, docs, docs, rand.New(rand.NewPCG(further, 1)))
		writes(restored, docs, docs, rand.New(rand.NewPCG(further, 1)))
		same("after further writes")
		// The image of an index read from one, holding both the image's
		// arrays and the writes' since.
		restored = mappedImage(t, restored, opts)
		same("restored again")
		writes(orig, docs/4, docs, rand.New(rand.NewPCG(further, 2)))
		writes(restored, docs/4, docs, rand.New(rand.NewPCG(further, 2)))
		same("restored again, after further writes")
	}
}

func TestReadSnapshotRefusesWhatItCannotRestore(t *testing.T) {
	ctx := context.Background()
	p := NewPort(Options{}, 0)
	if err := p.UpsertDocuments(ctx, domain.KeywordDocument{MemoryID: "m1", UserID: "u", AgentID: "a", Type: "fact", Text: "heron quarry", Meta: "birds"}); err != nil {
		t.Fatal(err)
	}
	var img bytes.Buffer
	if err := p.WriteSnapshot(&img); err != nil {
		t.Fatal(err)
	}
	data := img.Bytes()
	tests := []struct {
		name string
		data []byte
		opts Options
	}{
		{name: "another metadata weight", data: data, opts: Options{MetaWeight: 1}},
		{name: "truncated", data: data[:len(data)-1]},
		{name: "trailing bytes", data: append(bytes.Clone(data), 0)},
		{name: "empty", data: nil},
		{name: "a huge count", data: append(bytes.Clone(data[:4]), 0xff, 0xff, 0xff, 0x7f)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ReadSnapshot(tt.data, tt.opts, 0); !errors.Is(err, errImage) {
				t.Errorf("ReadSnapshot = %v, want a malformed-image error", err)
			}
		})
	}
}

// Images written while other goroutines write (adding, replacing,
// deleting and compacting in the same collections, which start read in
// place from an image) are each a valid index (under -race: the copy
// under the read lock is the only reading of the live arrays).
func TestSnapshotWhileWriting(t *testing.T) {
	ctx := context.Background()
	p := NewPort(Options{}, 0)
	scopes := []domain.IndexScope{{UserID: "u", AgentID: "a"}, {UserID: "u", AgentID: "b"}}
	for i := range 600 {
		s := scopes[i%len(scopes)]
		if err := p.UpsertDocuments(ctx, domain.KeywordDocument{MemoryID: fmt.Sprintf("m%d", i), UserID: s.UserID, AgentID: s.AgentID, Type: "note",
			Tags: []string{"t"}, Text: fmt.Sprintf("heron quarry word%d", i%50)}); err != nil {
			t.Fatal(err)
		}
	}
	p = mappedImage(t, p, Options{})
	done := make(chan struct{})
	var writers sync.WaitGroup
	for w := range 2 {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				s := scopes[rng.IntN(len(scopes))]
				id := fmt.Sprintf("m%d", rng.IntN(600))
				var err error
				if rng.IntN(3) == 0 {
					err = p.DeleteMemory(ctx, s, id)
				} else {
					err = p.UpsertDocuments(ctx, domain.KeywordDocument{MemoryID: id, UserID: s.UserID, AgentID: s.AgentID, Type: "note",
						Text: fmt.Sprintf("heron quarry %d word%d", i, rng.IntN(50)), Forgotten: rng.IntN(5) == 0})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 30 {
		var img bytes.Buffer
		if err := p.WriteSnapshot(&img); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadSnapshot(img.Bytes(), Options{}, 0); err != nil {
			t.Fatalf("an image written during writes: %v", err)
		}
	}
	close(done)
	writers.Wait()
}

// WriteSnapshot encodes outside every lock: writes to the imaged agents
// (adding, replacing, deleting past the compaction threshold, forgetting,
// dropping an agent) complete while its encoding is held at its first
// write (the first agent encoded, the others not yet), and the image is the index as it was captured, byte for byte the
// image of an index that never took those writes. The compaction those
// deletes made due waits for the image and happens at the next delete.
func TestSnapshotIsTheIndexAtItsCapture(t *testing.T) {
	ctx := context.Background()
	a, b, c := domain.IndexScope{UserID: "u", AgentID: "a"}, domain.IndexScope{UserID: "u", AgentID: "b"}, domain.IndexScope{UserID: "u", AgentID: "c"}
	scopes := []domain.IndexScope{a, b, c}
	doc := func(i int, text string) domain.KeywordDocument {
		s := scopes[i%len(scopes)]
		return domain.KeywordDocument{MemoryID: fmt.Sprintf("m%04d", i), UserID: s.UserID, AgentID: s.AgentID, Type: "note",
			Tags: []string{fmt.Sprint("t", i%3)}, Text: text, Forgotten: i%10 == 0}
	}
	fill := func(p *Port) {
		for i := range 1200 {
			if err := p.UpsertDocuments(ctx, doc(i, fmt.Sprintf("heron quarry word%d w%d", i%37, i%11))); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 1200; i += 7 {
			if err := p.DeleteMemory(ctx, scopes[i%len(scopes)], fmt.Sprintf("m%04d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	live, reference := NewPort(Options{}, 0), NewPort(Options{}, 0)
	fill(live)
	fill(reference)
	var want bytes.Buffer
	if err := reference.WriteSnapshot(&want); err != nil {
		t.Fatal(err)
	}

	held := &heldWriter{reached: make(chan struct{}), release: make(chan struct{})}
	imaged := make(chan error, 1)
	go func() { imaged <- live.WriteSnapshot(held) }()
	select {
	case <-held.reached:
	case <-time.After(time.Minute):
		t.Fatal("WriteSnapshot never wrote")
	}
	writes := func(p *Port) error {
		for i := 2; i < 1200; i += 3 { // every memory of c: past the compaction threshold
			if err := p.DeleteMemory(ctx, c, fmt.Sprintf("m%04d", i)); err != nil {
				return err
			}
		}
		for i := 1; i < 1200; i += 30 { // b: replaced, and new
			if err := p.UpsertDocuments(ctx, doc(i, "replaced text"), doc(i+1200, "new text")); err != nil {
				return err
			}
		}
		if err := p.SetForgotten(ctx, b, "m0004", true); err != nil {
			return err
		}
		if err := p.SetForgotten(ctx, b, "m0010", false); err != nil {
			return err
		}
		return p.DeleteAgent(ctx, a)
	}
	wrote := make(chan error, 1)
	go func() { wrote <- writes(live) }()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the writes waited for the image's encoding")
	}
	close(held.release)
	if err := <-imaged; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(held.buf.Bytes(), want.Bytes()) {
		t.Fatalf("the image (%d bytes) is not the index at its capture (%d bytes)", held.buf.Len(), want.Len())
	}

	if n := live.ix.lookup("u/c").nDead; n < 256 {
		t.Fatalf("%d dead slots in c after deleting it all", n)
	}
	if err := live.DeleteMemory(ctx, c, "absent"); err != nil {
		t.Fatal(err)
	}
	if n := live.ix.lookup("u/c").nDead; n != 0 {
		t.Fatalf("a delete after the image left %d dead slots: the compaction it waited for did not happen", n)
	}
	if err := writes(reference); err != nil {
		t.Fatal(err)
	}
	for _, s := range scopes {
		for _, text := range []string{"heron", "replaced text", "new", "word3 w4"} {
			q := domain.KeywordQuery{Scope: s, Text: text, Limit: 1000}
			got, err1 := live.SearchKeyword(ctx, q)
			want, err2 := reference.SearchKeyword(ctx, q)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%v %q after the writes: %v (%v), want %v (%v)", s, text, got, err1, want, err2)
			}
		}
	}
}

// heldWriter holds its first Write until release is closed, keeping what
// it is written.
type heldWriter struct {
	buf              bytes.Buffer
	reached, release chan struct{}
	once             sync.Once
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		close(w.reached)
		<-w.release
	})
	return w.buf.Write(p)
}

// mappedImage writes p's image to a snapshot file and returns the index
// ReadSnapshot reads from its read-only mapping, kept until the test ends.
func mappedImage(t *testing.T, p *Port, opts Options) *Port {
	t.Helper()
	dir := t.TempDir()
	h := snapshot.Header{Kind: "keyword", Version: SnapshotVersion, Checkpoint: 1, EventID: "e1"}
	if err := snapshot.Write(dir, h, p.WriteSnapshot); err != nil {
		t.Fatal(err)
	}
	f, err := snapshot.Open(dir, "keyword", SnapshotVersion)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	restored, err := ReadSnapshot(f.Body, opts, 0)
	if err != nil {
		t.Fatal(err)
	}
	return restored
}

// An image read from its mapped file is used in place: the collection's
// posting lists, blocks, terms and per-document arrays are the file's
// bytes, reading it allocates per collection, not per document or term,
// and the ids a search returns are copies that outlive the mapping.
func TestSnapshotIsReadInPlace(t *testing.T) {
	ctx := context.Background()
	orig := NewPort(Options{}, 0)
	s := newSynthCorpus(5)
	for i := range 1000 {
		scope := domain.IndexScope{UserID: "u", AgentID: []string{"a", "b"}[i%2]}
		if err := orig.UpsertDocuments(ctx, domain.KeywordDocument{MemoryID: fmt.Sprintf("m%05d", i), UserID: scope.UserID, AgentID: scope.AgentID,
			Type: "note", Tags: []string{fmt.Sprint("t", i%7)}, CreatedAt: time.Unix(int64(i), 0), Text: s.text(), Forgotten: i%50 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 1000; i += 13 {
		if err := orig.DeleteMemory(ctx, domain.IndexScope{UserID: "u", AgentID: []string{"a", "b"}[i%2]}, fmt.Sprintf("m%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := snapshot.Write(dir, snapshot.Header{Kind: "keyword", Version: SnapshotVersion, Checkpoint: 1, EventID: "e1"}, orig.WriteSnapshot); err != nil {
		t.Fatal(err)
	}
	f, err := snapshot.Open(dir, "keyword", SnapshotVersion)
	if err != nil {
		t.Fatal(err)
	}
	body := f.Body
	restored, err := ReadSnapshot(body, Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	inBody := func(p unsafe.Pointer) bool {
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(body)))
		return uintptr(p) >= lo && uintptr(p) < lo+uintptr(len(body))
	}
	c := restored.ix.lookup("u/a")
	for name, p := range map[string]unsafe.Pointer{
		"postings": unsafe.Pointer(&c.img.postings[0]), "blocks": unsafe.Pointer(&c.img.blocks[0]),
		"terms": unsafe.Pointer(&c.img.terms.bytes[0]), "term order": unsafe.Pointer(&c.img.order[0]),
		"ids": unsafe.Pointer(&c.ids.base.bytes[0]), "id order": unsafe.Pointer(&c.idOrder[0]),
		"dead flags": unsafe.Pointer(&c.dead.base[0]), "lengths": unsafe.Pointer(&c.length.base[0]),
		"created": unsafe.Pointer(&c.created.base[0]), "document terms": unsafe.Pointer(&c.docTerms.values[0]),
		"tags": unsafe.Pointer(&c.tags.base.values[0]), "document frequencies": unsafe.Pointer(&c.df.base[0]),
	} {
		if !inBody(p) {
			t.Errorf("the restored %s are not read in place", name)
		}
	}
	// Two collections, a few forgotten memories: the count does not grow
	// with the 1,000 documents and their terms (a decode allocated each).
	if allocs := testing.AllocsPerRun(3, func() {
		if _, err := ReadSnapshot(body, Options{}, 0); err != nil {
			t.Fatal(err)
		}
	}); allocs > 200 {
		t.Errorf("reading the image allocates %.0f times", allocs)
	}

	q := domain.KeywordQuery{Scope: domain.IndexScope{UserID: "u", AgentID: "a"}, Text: s.query(), Limit: 20}
	want, err := orig.SearchKeyword(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := restored.SearchKeyword(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatalf("%q finds nothing", q.Text)
	}
	if err := f.Close(); err != nil { // unmaps the body
		t.Fatal(err)
	}
	for i := range got {
		if got[i].MemoryID != want[i].MemoryID {
			t.Fatalf("hit %d after the unmapping: %q, want %q", i, got[i].MemoryID, want[i].MemoryID)
		}
	}
}

// A damaged image (one byte changed anywhere; the file's checksum would
// refuse it first) is refused, or restores an index that searches and
// takes writes, compactions included, without reading out of bounds.
func TestDamagedImageIsRefusedOrHarmless(t *testing.T) {
	ctx := context.Background()
	scope := domain.IndexScope{UserID: "u", AgentID: "a"}
	orig := NewPort(Options{}, 0)
	doc := func(i int, text string) domain.KeywordDocument {
		return domain.KeywordDocument{MemoryID: fmt.Sprintf("m%03d", i), UserID: scope.UserID, AgentID: scope.AgentID, Type: []string{"note", "fact"}[i%2],
			Tags: []string{fmt.Sprint("t", i%3)}, CreatedAt: time.Unix(int64(i), 0), Text: text, Forgotten: i%9 == 0}
	}
	for i := range 300 {
		text := fmt.Sprintf("heron quarry w%d w%d", i%17, i%5)
		if i == 7 {
			text = strings.Repeat("weir ", 17000) // a count past 16 bits
		}
		if err := orig.UpsertDocuments(ctx, doc(i, text)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 300; i += 11 {
		if err := orig.DeleteMemory(ctx, scope, fmt.Sprintf("m%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var img bytes.Buffer
	if err := orig.WriteSnapshot(&img); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(27, 2))
	refused, accepted := 0, 0
	for range 200 {
		data := bytes.Clone(img.Bytes())
		data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
		p, err := ReadSnapshot(data, Options{}, 0)
		if err != nil {
			refused++
			continue
		}
		for _, q := range []domain.KeywordQuery{
			{Scope: scope, Text: "heron w3", Limit: 10},
			{Scope: scope, Text: "weir quarry", Limit: 50, Filter: domain.IndexFilter{Types: []string{"fact"}, Tags: []string{"t1"}, CreatedAfter: time.Unix(10, 0)}},
		} {
			if _, err := p.SearchKeyword(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if accepted++; accepted%5 != 0 {
			continue
		}
		for i := range 300 { // past the compaction threshold
			if err := p.DeleteMemory(ctx, scope, fmt.Sprintf("m%03d", i)); err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 {
				if err := p.UpsertDocuments(ctx, doc(i, "heron replaced")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if refused == 0 || accepted < 5 {
		t.Fatalf("%d damaged images refused, %d restored: the test damages too little or too much", refused, accepted)
	}
}

// A collection whose every document was deleted and compacted away is
// imaged and restored as an empty collection, which takes new documents.
func TestSnapshotOfACollectionCompactedToNothing(t *testing.T) {
	ctx := context.Background()
	scope := domain.IndexScope{UserID: "u", AgentID: "a"}
	p := NewPort(Options{}, 0)
	for i := range 256 {
		if err := p.UpsertDocuments(ctx, domain.KeywordDocument{MemoryID: fmt.Sprint("m", i), UserID: "u", AgentID: "a", Type: "note", Text: "heron quarry"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 256 { // the compaction threshold
		if err := p.DeleteMemory(ctx, scope, fmt.Sprint("m", i)); err != nil {
			t.Fatal(err)
		}
	}
	if c := p.ix.lookup("u/a"); c.ids.len() != 0 {
		t.Fatalf("%d slots left after deleting every document", c.ids.len())
	}
	for round := range 2 {
		p = mappedImage(t, p, Options{})
		q := domain.KeywordQuery{Scope: scope, Text: "heron", Limit: 10}
		if hits, err := p.SearchKeyword(ctx, q); err != nil || len(hits) != round {
			t.Fatalf("round %d: %v (%v), want %d hits", round, hits, err, round)
		}
		if err := p.UpsertDocuments(ctx, domain.KeywordDocument{MemoryID: fmt.Sprint("new", round), UserID: "u", AgentID: "a", Type: "note", Text: "heron"}); err != nil {
			t.Fatal(err)
		}
	}
}

// The first writes to an agent read in place from its image cost what
// they change, not what the agent holds. Every document here holds
// "heron" and "quarry": adding one appends a posting past the image's
// lists of both and changes three document frequencies, and must copy
// neither list (8 bytes a document each) nor the agent's document
// frequencies (4 bytes a term); replacing one adds to that the agent's
// dead flags (a byte a document), which a delete changes in place. A
// term copies its image's list once a block of postings was written past
// it (collection.join), and searches the same throughout.
func TestFirstWritesToAnImageCopyNoWholeAgent(t *testing.T) {
	const docs = 3000
	ctx := context.Background()
	orig := NewPort(Options{}, 0)
	doc := func(i int, text string) domain.KeywordDocument {
		return domain.KeywordDocument{MemoryID: fmt.Sprintf("m%05d", i), UserID: "u", AgentID: "a", Type: "note", CreatedAt: time.Unix(int64(i), 0), Text: text}
	}
	batch := make([]domain.KeywordDocument, 0, 1000)
	for i := range docs {
		batch = append(batch, doc(i, fmt.Sprintf("heron quarry w%d", i)))
		if len(batch) == cap(batch) {
			if err := orig.UpsertDocuments(ctx, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	var restored *Port
	allocated := func(d domain.KeywordDocument) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := restored.UpsertDocuments(ctx, d); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	const perWrite = 16 << 10 // a document's own records, maps and lists growing
	for _, w := range []struct {
		what  string
		doc   domain.KeywordDocument
		bound uint64
	}{
		{"an added document", doc(docs, "heron quarry newword"), perWrite},
		{"a replaced document", doc(7, "heron quarry w8"), perWrite + docs},
	} {
		restored = mappedImage(t, orig, Options{})
		if got := allocated(w.doc); got > w.bound {
			t.Errorf("%s allocated %d bytes, want at most %d (an agent of %d documents)", w.what, got, w.bound, docs)
		}
	}
	// Given the same writes as the original, the index searches the same
	// in every walk, before and after "heron" and "quarry" take a block
	// of postings past the image's and join their two segments on the
	// heap, and through an image of it.
	if err := orig.UpsertDocuments(ctx, doc(7, "heron quarry w8")); err != nil {
		t.Fatal(err)
	}
	same := func(stage string, p *Port) {
		t.Helper()
		// The walks that read a term's segments apart: pruned, and dense
		// with a filter (the merged walk reads them as two lists too; the
		// restore test covers it).
		defer func(saved int) { sparseMax = saved }(sparseMax)
		sparseMax = 0
		for _, q := range []string{"w7", "heron w8", "quarry w5 x3 x120"} {
			for _, f := range []domain.IndexFilter{{}, {Types: []string{"note"}}} {
				query := domain.KeywordQuery{Scope: domain.IndexScope{UserID: "u", AgentID: "a"}, Text: q, Filter: f, Limit: 5}
				want, err1 := orig.SearchKeyword(ctx, query)
				got, err2 := p.SearchKeyword(ctx, query)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: %q (%+v): %v, the original %v", stage, q, f, got, want)
				}
			}
		}
	}
	c := restored.ix.lookup("u/a")
	heron, _ := c.termOf(queryTerms("heron")[0])
	joined := func() bool { image, _ := c.segments(heron); return len(image.postings) == 0 }
	same("after the first writes", restored)
	for i := range blockSize { // the replace wrote the first posting past the image's
		d := doc(docs+1+i, fmt.Sprintf("heron quarry x%d", i))
		if err := orig.UpsertDocuments(ctx, d); err != nil {
			t.Fatal(err)
		}
		if err := restored.UpsertDocuments(ctx, d); err != nil {
			t.Fatal(err)
		}
		if joined() != (i == blockSize-1) {
			t.Fatalf("after %d postings written past the image's, joined = %v", i+2, joined())
		}
	}
	same("once joined", restored)
	same("through an image of it", mappedImage(t, restored, Options{}))
}
