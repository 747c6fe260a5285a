package projections_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/snapshot"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/infra/textindex"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/projections"
)

// An index restored from its image reads the log's tail after it, and the
// id of the event at the image's checkpoint, through the engine's one
// reader of the log, as every other path does (it used to page the log
// with ReadAll).
func TestSnapshotTailIsReadThroughTheEnginesReader(t *testing.T) {
	ctx := context.Background()
	sl := newSnapshotLog(t)
	db, log, files, logger, agent := sl.db, sl.log, sl.files, sl.logger, sl.agent
	appendPayloads, note := sl.append, sl.note

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
	next, index := sl.restore(projections.Snapshots{})
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

// snapshotLog is a SQLite log and snapshot directory for a keyword
// projection's images, with one agent to write notes to.
type snapshotLog struct {
	t      *testing.T
	db     *sqlite.DB
	log    *sqlite.EventStore
	files  snapshot.Dir
	logger *slog.Logger
	agent  memory.AgentRef
}

func newSnapshotLog(t *testing.T) *snapshotLog {
	t.Helper()
	dir := sqlitetest.Dir(t)
	db, err := sqlite.Open(context.Background(), dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &snapshotLog{
		t:      t,
		db:     db,
		log:    sqlite.NewEventStore(db, 20*time.Millisecond),
		files:  snapshot.Dir{Path: filepath.Join(dir, "snapshots"), Versions: map[string]uint32{projections.KeywordProjectionName: textindex.SnapshotVersion}},
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		agent:  memory.AgentRef{UserID: "u", AgentID: "a"},
	}
}

// append appends payloads to the agent's stream; it returns the last
// one's position.
func (l *snapshotLog) append(payloads ...domain.Payload) uint64 {
	l.t.Helper()
	var events []domain.NewEvent
	for _, p := range payloads {
		e, err := domain.MarshalEvent(p, domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}})
		if err != nil {
			l.t.Fatal(err)
		}
		events = append(events, e)
	}
	res, err := l.log.Append(context.Background(), "agent-u-a", domain.ExpectAny, events)
	if err != nil {
		l.t.Fatal(err)
	}
	return res.LastPosition
}

func (l *snapshotLog) note(id, text string) domain.Payload {
	content, _ := json.Marshal(memory.NoteContent{Content: text})
	return &memory.MemoryCreated{AgentRef: l.agent, MemoryID: id, Type: memory.Note, Content: content, CreatedAt: time.Unix(1700000000, 0)}
}

// restore opens the keyword image in files and returns a projection
// restored from it.
func (l *snapshotLog) restore(cfg projections.Snapshots) (*projections.Keyword, *textindex.Port) {
	l.t.Helper()
	f, err := snapshot.Open(l.files.Path, projections.KeywordProjectionName, textindex.SnapshotVersion)
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { f.Close() })
	index, err := textindex.ReadSnapshot(f.Body, textindex.Options{}, 0)
	if err != nil {
		l.t.Fatal(err)
	}
	next := projections.NewKeyword(sqlite.NewKeywordStore(l.db), index, true, l.logger)
	cfg.Files, cfg.Restored = l.files, &domain.IndexSnapshot{Checkpoint: f.Header.Checkpoint, EventID: f.Header.EventID}
	next.UseSnapshots(cfg)
	return next, index
}

// The interval to the next image grows with the log the last image
// covers, whether this process saved that image or started from it.
func TestSnapshotIntervalGrowsFromTheLastImage(t *testing.T) {
	ctx := context.Background()
	sl := newSnapshotLog(t)
	cfg := projections.Snapshots{Every: 1, Divisor: 2}
	first := projections.NewKeyword(sqlite.NewKeywordStore(sl.db), textindex.NewPort(textindex.Options{}, 0), true, sl.logger)
	first.UseSnapshots(projections.Snapshots{Files: sl.files, Every: cfg.Every, Divisor: cfg.Divisor})
	engine := projections.NewEngine(sl.log, sl.logger, first)
	if got := projections.SnapshotInterval(first); got != 1 {
		t.Fatalf("before any image the interval is %d, want Every (1)", got)
	}
	pos := sl.append(&memory.AgentCreated{AgentRef: sl.agent}, sl.note("m1", "heron"), sl.note("m2", "quarry"), sl.note("m3", "lantern"),
		sl.note("m4", "ember"), sl.note("m5", "orchard"), sl.note("m6", "tundra"), sl.note("m7", "meadow"), sl.note("m8", "falcon"), sl.note("m9", "cobalt"))
	if err := engine.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.SaveSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := projections.SnapshotInterval(first), pos/2; got != want {
		t.Errorf("after an image at %d the interval is %d, want %d", pos, got, want)
	}

	next, _ := sl.restore(cfg)
	projections.NewEngine(sl.log, sl.logger, next)
	if got := projections.SnapshotInterval(next); got != 1 {
		t.Fatalf("before its start the restored projection's interval is %d, want Every (1)", got)
	}
	if err := next.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := next.StartedFrom(); !ok {
		t.Fatal("the index was refilled, not started from its image")
	}
	if got, want := projections.SnapshotInterval(next), pos/2; got != want {
		t.Errorf("started from an image at %d the interval is %d, want %d", pos, got, want)
	}
}

// An index started from an image of an older body format, which it reads
// at a cost the current format avoids (a vector image of format 1
// rebuilds its slot tables at every read), saves an image in the current
// format at its stop even when it applied and caught up nothing, as a
// command-line search does: otherwise every later search of the stack
// paid that cost until a server's stop or 100 events renewed the image.
// An index started from an image of the current format saves none.
func TestAnImageOfAnOlderFormatIsRenewedAtTheStop(t *testing.T) {
	formatOne, err := os.ReadFile("../infra/vectorindex/testdata/vectors-format1.body")
	if err != nil {
		t.Fatal(err)
	}
	current := func() []byte {
		p, err := vectorindex.ReadSnapshot(formatOne, vectorindex.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Index().Close()
		var b bytes.Buffer
		if err := p.WriteSnapshot(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := sqlite.Open(ctx, sqlitetest.Dir(t), sqlite.Options{}) // an empty state, which no case writes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, tc := range []struct {
		name      string
		image     []byte
		wantSaved bool
	}{
		{"format 1", formatOne, true},
		{"the current format", current, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			port, err := vectorindex.ReadSnapshot(tc.image, vectorindex.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(port.Index().Close)
			files := snapshot.Dir{Path: filepath.Join(dir, "snapshots"), Versions: map[string]uint32{projections.VectorsProjectionName: vectorindex.SnapshotVersion}}
			p := projections.NewVectors(sqlite.NewVectorStore(db), port, true, logger)
			p.UseSnapshots(projections.Snapshots{Files: files, Restored: &domain.IndexSnapshot{}}) // the image of an empty log
			engine := projections.NewEngine(sqlite.NewEventStore(db, 20*time.Millisecond), logger, p)
			if err := p.Load(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ok := p.StartedFrom(); !ok {
				t.Fatal("the index was refilled, not started from its image")
			}
			if err := engine.SaveSnapshots(ctx); err != nil {
				t.Fatal(err)
			}
			f, err := snapshot.Open(files.Path, projections.VectorsProjectionName, vectorindex.SnapshotVersion)
			if saved := err == nil; saved != tc.wantSaved {
				t.Fatalf("an image saved at the stop: %v (%v), want %v", saved, err, tc.wantSaved)
			}
			if f == nil {
				return
			}
			defer f.Close()
			if v := binary.LittleEndian.Uint32(f.Body); v != vectorindex.SnapshotVersion {
				t.Fatalf("the image saved is of body format %d, want %d", v, vectorindex.SnapshotVersion)
			}
		})
	}
}
