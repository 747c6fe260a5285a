package textindex

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/engram-memory/engram/domain"
)

// WriteSnapshot streams the image to its writer, as infra/snapshot.Write
// streams it to the file: it never holds a collection's image whole, so
// the heap it allocates for an agent of 10,000 documents is the offsets
// and per-slot arrays it computes (about half the image here), not the
// postings, terms and ids it writes (a running server saves an image every 10,000 events, and one
// built in a growing buffer cost a copy of every byte per doubling). A
// writer's error ends the image and is returned.
func TestWriteSnapshotStreamsTheImage(t *testing.T) {
	ctx := context.Background()
	p := NewPort(Options{}, 0)
	docs := make([]domain.KeywordDocument, 0, 1000)
	for i := range 10000 {
		docs = append(docs, domain.KeywordDocument{MemoryID: fmt.Sprintf("m%05d", i), UserID: "u", AgentID: "a", Type: "note",
			Tags: []string{fmt.Sprint("t", i%10)}, Text: fmt.Sprintf("heron quarry w%d w%d w%d w%d", i%97, i%89, i%83, i%1000)})
		if len(docs) == cap(docs) {
			if err := p.UpsertDocuments(ctx, docs...); err != nil {
				t.Fatal(err)
			}
			docs = docs[:0]
		}
	}

	var w countingWriter
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := p.WriteSnapshot(&w); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := int64(after.TotalAlloc - before.TotalAlloc)
	if allocated >= w.n {
		t.Errorf("writing an image of %d bytes allocated %d bytes: as much as the image, as if it were held whole", w.n, allocated)
	}

	broken := &failingWriter{after: w.n / 2}
	if err := p.WriteSnapshot(broken); !errors.Is(err, errWriterBroke) {
		t.Fatalf("WriteSnapshot to a writer that fails half way = %v, want its error", err)
	}
	if broken.callsAfterFailing > 0 {
		t.Errorf("WriteSnapshot wrote %d more times after its writer failed", broken.callsAfterFailing)
	}
}

var errWriterBroke = errors.New("writer broke")

// failingWriter takes `after` bytes, then fails every write.
type failingWriter struct {
	after, n          int64
	failed            bool
	callsAfterFailing int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.failed {
		w.callsAfterFailing++
		return 0, errWriterBroke
	}
	if w.n+int64(len(p)) > w.after {
		w.failed = true
		return 0, errWriterBroke
	}
	w.n += int64(len(p))
	return len(p), nil
}
