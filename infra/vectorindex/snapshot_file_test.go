package vectorindex_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/snapshot"
	"github.com/engram-memory/engram/infra/vectorindex"
)

// TestSnapshotOpenedFromDiskIsUsedInPlace: an image written through
// infra/snapshot and opened from its file (mapped) is read in place by
// ReadSnapshot, not copied to the heap, whatever the lengths of the
// header's strings; and it answers as the original.
func TestSnapshotOpenedFromDiskIsUsedInPlace(t *testing.T) {
	ctx := context.Background()
	scope := domain.IndexScope{UserID: "u1", AgentID: "a1"}
	space := domain.VectorSpace{Model: "m", Dimensions: 4}
	orig := vectorindex.NewPort(vectorindex.New(vectorindex.Options{}))
	t.Cleanup(orig.Index().Close)
	for i := range 50 {
		pt := domain.VectorPoint{
			MemoryID: fmt.Sprintf("m%02d", i), UserID: scope.UserID, AgentID: scope.AgentID, Space: space,
			Vector: []float32{float32(i + 1), 1, float32(i % 7), 2}, Type: "fact", Tags: []string{"t"}, CreatedAt: time.Unix(int64(i), 0),
		}
		if err := orig.UpsertVectors(ctx, pt); err != nil {
			t.Fatal(err)
		}
	}
	query := domain.VectorQuery{Scope: scope, Space: space, Vector: []float32{3, 1, 2, 2}, Limit: 5}
	want, err := orig.SearchVectors(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	for _, eventID := range []string{"", "e1", "0192f5c4-1d2e-7a3b-8c4d-5e6f7a8b9c0d"} {
		dir := t.TempDir()
		h := snapshot.Header{Kind: "vectors", Version: vectorindex.SnapshotVersion, Checkpoint: 9, EventID: eventID}
		if err := snapshot.Write(dir, h, func(w io.Writer) error { return orig.WriteSnapshot(w) }); err != nil {
			t.Fatal(err)
		}
		f, err := snapshot.Open(dir, "vectors", vectorindex.SnapshotVersion)
		if err != nil {
			t.Fatal(err)
		}
		p, err := vectorindex.ReadSnapshot(f.Body, vectorindex.Options{})
		if err != nil {
			t.Fatal(err)
		}
		stats := p.Index().Stats()
		if len(stats.PerCollection) != 1 || !stats.PerCollection[0].InPlace {
			t.Errorf("event id %q: collections %+v, want one read in place from the mapping", eventID, stats.PerCollection)
		}
		got, err := p.SearchVectors(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("event id %q: restored search %v, want %v", eventID, got, want)
		}
		p.Index().Close()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
