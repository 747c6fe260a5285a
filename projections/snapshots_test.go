package projections_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/snapshot"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/textindex"
	"github.com/engram-memory/engram/projections"
)

// An index restored from its image reads the log's tail after it, and the
// id of the event at the image's checkpoint, through the engine's one
// reader of the log, as every other path does (it used to page the log
// with ReadAll).
func TestSnapshotTailIsReadThroughTheEnginesReader(t *testing.T) {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	log := sqlite.NewEventStore(db, 20*time.Millisecond)
	files := snapshot.Dir{Path: filepath.Join(dir, "snapshots"), Versions: map[string]uint32{projections.KeywordProjectionName: textindex.SnapshotVersion}}
	agent := memory.AgentRef{UserID: "u", AgentID: "a"}
	appendPayloads := func(payloads ...domain.Payload) uint64 {
		t.Helper()
		var events []domain.NewEvent
		for _, p := range payloads {
			e, err := domain.MarshalEvent(p, domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}})
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
		}
		res, err := log.Append(ctx, "agent-u-a", domain.ExpectAny, events)
		if err != nil {
			t.Fatal(err)
		}
		return res.LastPosition
	}
	note := func(id, text string) domain.Payload {
		content, _ := json.Marshal(memory.NoteContent{Content: text})
		return &memory.MemoryCreated{AgentRef: agent, MemoryID: id, Type: memory.Note, Content: content, CreatedAt: time.Unix(1700000000, 0)}
	}

	// The first process: an image after the first note, then a second
	// note applied live (a CatchUp would drop the image with the index).
	first := projections.NewKeyword(sqlite.NewKeywordStore(db), textindex.NewPort(textindex.Options{}, 0), true, logger)
	first.UseSnapshots(projections.Snapshots{Files: files})
	engine := projections.NewEngine(log, logger, first)
	appendPayloads(&memory.AgentCreated{AgentRef: agent}, note("m1", "heron"))
	if err := engine.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.SaveSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	pos := appendPayloads(note("m2", "quarry"))
	tail, err := log.ReadAll(ctx, pos-1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Apply(ctx, tail); err != nil {
		t.Fatal(err)
	}

	// The next one starts from the image and catches up with the tail,
	// as a process that runs the engine loads its indexes (Load).
	f, err := snapshot.Open(files.Path, projections.KeywordProjectionName, textindex.SnapshotVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	index, err := textindex.ReadSnapshot(f.Body, textindex.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	next := projections.NewKeyword(sqlite.NewKeywordStore(db), index, true, logger)
	next.UseSnapshots(projections.Snapshots{Files: files, Restored: &domain.IndexSnapshot{Checkpoint: f.Header.Checkpoint, EventID: f.Header.EventID}})
	store := &countingStore{EventStore: log}
	projections.NewEngine(store, logger, next)
	if err := next.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := next.StartedFrom(); !ok {
		t.Fatal("the index was refilled, not started from its image")
	}
	hits, err := index.SearchKeyword(ctx, domain.KeywordQuery{Scope: domain.IndexScope{UserID: "u", AgentID: "a"}, Text: "quarry", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].MemoryID != "m2" {
		t.Fatalf("the tail's note is not in the index caught up from the image: %v", slices.Collect(func(yield func(string) bool) {
			for _, h := range hits {
				yield(h.MemoryID)
			}
		}))
	}
	if r := store.reads.Load(); r != 0 {
		t.Errorf("the index read the log %d times beside the engine's reader, want 0", r)
	}
	if n := store.ranges.Load(); n != 2 {
		t.Errorf("%d reads of a range, want 2: the image's event id and the tail", n)
	}
}
