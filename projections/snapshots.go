package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Snapshots configure an in-process index projection's snapshots
// (docs/snapshots.md): images of its index saved in the data directory,
// from which the next start restores the index and re-reads from the state
// only the memories the log changed after the image, instead of refilling
// the index from the whole state.
//
// The index's projection reads the log through its engine's reader for
// the events after an image's checkpoint, and to tag an image with the id
// of the event at its checkpoint: without an engine it saves and uses no
// image.
type Snapshots struct {
	Files domain.IndexSnapshots
	// Restored is the image the index was built from at start (nil: the
	// index starts empty and is refilled).
	Restored *domain.IndexSnapshot
	// Every and Divisor say how many applied events make a new image due:
	// Every (0: DefaultSnapshotEvery), or the checkpoint of the last image
	// divided by Divisor (0: DefaultSnapshotDivisor) when that is more
	// (snapshotState.interval).
	Every, Divisor uint64
	// FinishGraphs: before saving an image, finish the index's graph
	// builds (graphBuilder), so the image holds them whole. For a process
	// that saves only at its close, soon after its open (a command-line
	// search): an image of a graph still being built makes every later
	// start scan the unbuilt part and build it again, and a short process
	// never finishes it. A server saves at once instead (a crash then
	// loses less) and again once its builds have finished.
	FinishGraphs bool
}

// graphBuilder is an in-process index that builds graphs in the
// background (vectorindex.Port): an image taken before a build finished
// holds part of a graph.
type graphBuilder interface {
	// Unbuilt is how many vectors no graph covers yet; ImageUnbuilt the
	// same of the image the index was read from.
	Unbuilt() int
	ImageUnbuilt() int
	// FinishBuilds builds them now, without holding off for writers.
	FinishBuilds(ctx context.Context) error
}

// outdatedImager is an in-process index that still reads images of an
// older body format, at a cost an image in the current one avoids
// (vectorindex.Port: a format-1 image rebuilds its slot tables at every
// read).
type outdatedImager interface {
	ImageOutdated() bool
}

// DefaultSnapshotEvery is Snapshots.Every's default, the fewest events
// between two images: at a few thousand events a second, an image every
// few seconds of writes; a start after a crash then re-reads at most that
// many events' memories.
const DefaultSnapshotEvery = 10000

// DefaultSnapshotDivisor is Snapshots.Divisor's default: past 400,000
// events (200,000 memories of a usual log) the events between two images
// are a 40th of the log the last image covers. An image is the whole
// index, so it costs in proportion to the memories indexed, never more
// than to the events that indexed them: at a fixed interval its cost per
// event grows with the index (at 1M memories, every 10,000 events, about
// a quarter of the ingest's CPU), at an interval in proportion to the log
// it stays bounded (about 5 % at 1M and beyond), and a start after a crash
// re-reads at most a 40th of the log, in proportion to the index as the
// rest of a start is (docs/snapshots.md#when-an-image-is-written).
const DefaultSnapshotDivisor = 40

// DefaultSnapshotTail is the shortest tail caught up with at start that
// makes a process that applied nothing save an image when it stops (see
// due). Re-reading a changed memory costs about 0.1-0.3 ms per index,
// writing the images of a 100,000-memory stack 0.5-1 s: a search that
// follows each of n captures pays n re-reads, and an image every T
// captures costs its write once, so the cost per search, T/2 re-reads
// plus a T-th of a write, is least near T = 100.
const DefaultSnapshotTail = 100

// indexImager is an in-process index that writes its image.
type indexImager interface {
	WriteSnapshot(w io.Writer) error
}

// snapshotter is a projection whose index is saved in snapshots; the
// engine saves one when due, in the background.
type snapshotter interface {
	Name() string
	// snapshotDue: a new image is due (stopping: the process ends, so any
	// change since the last image makes one due).
	snapshotDue(stopping bool) bool
	SaveSnapshot(ctx context.Context) error
}

// snapshotState is what a projection keeps of its snapshots.
type snapshotState struct {
	cfg Snapshots
	// read is the engine's reader of the log (readLogWith).
	read logReader
	// since counts events applied since the last image; refilled is set
	// when the index was refilled or reset since (an image is due at
	// once: the next start would refill it again).
	since    atomic.Uint64
	refilled atomic.Bool
	// caughtUp counts the events after the image the index was caught up
	// with at start (Load), apart from since: see due.
	caughtUp atomic.Uint64
	// imaged is the checkpoint of the last image, saved or started from:
	// the interval to the next one grows with it (interval).
	imaged atomic.Uint64
	// generation changes when the index is dropped or reset: an image
	// being written across that is thrown away.
	generation atomic.Uint64
	// graphs is the index's graph build, when it has one; partial: the
	// image on disk (the one restored, or the last saved) holds graphs
	// that do not cover every vector, so an image is due once they do.
	graphs  graphBuilder
	partial atomic.Bool
	// outdated: the index started from an image of an older body format
	// (outdatedImager), so an image in the current one is due at once. A
	// process that only searches would otherwise read the older format at
	// every start until a server's stop or a tail of DefaultSnapshotTail
	// events renewed it.
	outdated atomic.Bool
	// restored is taken by Load (under the projection's loadMu); started
	// is the image the index started from, once Load used it.
	restored *domain.IndexSnapshot
	started  atomic.Pointer[domain.IndexSnapshot]
}

// startedFrom is the image the index started from (ok false: it was
// refilled from the state).
func (s *snapshotState) startedFrom() (domain.IndexSnapshot, bool) {
	if s == nil {
		return domain.IndexSnapshot{}, false
	}
	tag := s.started.Load()
	if tag == nil {
		return domain.IndexSnapshot{}, false
	}
	return *tag, true
}

func (s *snapshotState) enabled() bool { return s != nil && s.cfg.Files != nil && s.read != nil }

// readLogWith gives the snapshots the engine's reader (s may be nil: no
// snapshots).
func (s *snapshotState) readLogWith(read logReader) {
	if s != nil {
		s.read = read
	}
}

func (s *snapshotState) applied(n int) {
	if s.enabled() {
		s.since.Add(uint64(n))
	}
}

// due: an image is due once the events since the last one, applied here
// or caught up with at start, are as many as between two images
// (interval; the next start would re-read them all again). At a stop, it
// is due when this process applied any event, or caught up with at least
// DefaultSnapshotTail at start; a process that only caught its index up
// with a shorter tail (a local search after a few captures) saves none:
// the next start re-reads that tail again in less time than an image
// takes to write.
func (s *snapshotState) due(stopping bool) bool {
	if !s.enabled() {
		return false
	}
	if s.refilled.Load() || s.outdated.Load() {
		return true
	}
	if s.partial.Load() && (s.cfg.FinishGraphs || s.graphs.Unbuilt() == 0) {
		return true
	}
	since, caughtUp := s.since.Load(), s.caughtUp.Load()
	if stopping && (since > 0 || caughtUp >= DefaultSnapshotTail) {
		return true
	}
	return since+caughtUp >= s.interval()
}

// interval is how many events make the next image due: Every, or the
// last image's checkpoint divided by Divisor when that is more, so the
// images' cost per event stays bounded as the index grows (see
// DefaultSnapshotDivisor).
func (s *snapshotState) interval() uint64 {
	return max(cmpOr(s.cfg.Every, DefaultSnapshotEvery), s.imaged.Load()/cmpOr(s.cfg.Divisor, DefaultSnapshotDivisor))
}

func cmpOr(v, def uint64) uint64 {
	if v == 0 {
		return def
	}
	return v
}

// dropped records that the index was emptied for a rebuild of its state:
// an image in progress is discarded, a restored image is not used, and
// the saved one is deleted, since the rebuilt state may differ from the
// one it was taken of (a rebuild often follows a change of what is
// indexed). Until a new image is saved a start refills the index.
func (s *snapshotState) dropped(ctx context.Context, kind string) error {
	if s == nil {
		return nil
	}
	s.generation.Add(1)
	s.restored = nil
	s.started.Store(nil)
	s.refilled.Store(true)
	s.partial.Store(false)
	s.outdated.Store(false)
	if s.cfg.Files == nil {
		return nil
	}
	if err := s.cfg.Files.DeleteIndexSnapshot(ctx, kind); err != nil {
		return fmt.Errorf("%s: delete its snapshot: %w", kind, err)
	}
	return nil
}

// filled records that the index was filled from the whole state: an
// image is due at once, or the next start would refill it again.
func (s *snapshotState) filled() {
	if s != nil {
		s.refilled.Store(true)
	}
}

// errIndexChanged: the index was dropped while its image was written.
var errIndexChanged = errors.New("the index was dropped while its image was written")

// save writes the index's image tagged with the state's checkpoint, read
// before the image: every index write of an event up to it was made before
// its state committed, so the image holds it. The image may hold later
// writes too (a batch in progress); the next start re-reads the memories
// of every event after the checkpoint from the state, and the engine
// applies again what the state had not committed, so they are harmless.
func (s *snapshotState) save(ctx context.Context, kind string, index any, loaded func() bool, checkpoint func(context.Context) (uint64, error), logger *slog.Logger) error {
	imager, ok := index.(indexImager)
	if !s.enabled() || !ok || !loaded() {
		return nil
	}
	if s.graphs != nil && s.cfg.FinishGraphs && s.graphs.Unbuilt() > 0 {
		start := time.Now()
		if err := s.graphs.FinishBuilds(ctx); err != nil {
			return fmt.Errorf("%s snapshot: %w", kind, err)
		}
		logger.Debug("index graphs built before its image", "index", kind, "took", time.Since(start).Round(time.Millisecond))
	}
	gen := s.generation.Load()
	pos, err := checkpoint(ctx)
	if err != nil {
		return fmt.Errorf("%s snapshot: %w", kind, err)
	}
	tag := domain.IndexSnapshot{Checkpoint: pos}
	if pos > 0 {
		if tag.EventID, err = s.eventID(ctx, pos); err != nil {
			return fmt.Errorf("%s snapshot: %w", kind, err)
		}
	}
	since, caughtUp, refilled := s.since.Load(), s.caughtUp.Load(), s.refilled.Load()
	// Read before the capture: graphs only grow, so the image covers at
	// least this much (slots appended meanwhile are events after it).
	partial := s.graphs != nil && s.graphs.Unbuilt() > 0
	start := time.Now()
	err = s.cfg.Files.SaveIndexSnapshot(ctx, kind, tag, func(w io.Writer) error {
		if err := imager.WriteSnapshot(w); err != nil {
			return err
		}
		if s.generation.Load() != gen || !loaded() {
			return errIndexChanged
		}
		return nil
	})
	if errors.Is(err, errIndexChanged) {
		return nil // a refill follows, which makes the next one due
	}
	if err != nil {
		return err
	}
	s.since.Add(-since)
	s.caughtUp.Add(-caughtUp)
	s.imaged.Store(pos)
	s.partial.Store(partial)
	s.outdated.Store(false)
	if refilled {
		s.refilled.CompareAndSwap(true, false)
	}
	logger.Debug("index snapshot saved", "index", kind, "checkpoint", pos, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// eventID is the id of the log event at pos.
func (s *snapshotState) eventID(ctx context.Context, pos uint64) (string, error) {
	var id string
	err := s.read(ctx, pos-1, pos, 1, nil, func(events []domain.Event) error {
		if events[0].Position == pos {
			id = events[0].ID
		}
		return nil
	})
	if errors.Is(err, domain.ErrLogEndsBefore) || err == nil && id == "" {
		return "", fmt.Errorf("no log event at position %d", pos)
	}
	return id, err
}

// errStaleSnapshot marks why a snapshot cannot be used.
var errStaleSnapshot = errors.New("stale snapshot")

// tail calls fn with the events after the image's checkpoint up to the
// state's position, in pages, after checking that the image is of this
// log and not ahead of the state (a state rebuilt, reset or restored
// since).
func (s *snapshotState) tail(ctx context.Context, tag domain.IndexSnapshot, statePos uint64, fn func([]domain.Event) error) error {
	if err := s.walkTail(ctx, tag, statePos, fn); err != nil {
		return err
	}
	// The tail counts towards the next image (see due).
	if tag.Checkpoint < statePos && s.enabled() {
		s.caughtUp.Add(statePos - tag.Checkpoint)
	}
	return nil
}

func (s *snapshotState) walkTail(ctx context.Context, tag domain.IndexSnapshot, statePos uint64, fn func([]domain.Event) error) error {
	if s.read == nil {
		return fmt.Errorf("%w: the projection has no engine to read the log's tail through", errStaleSnapshot)
	}
	if tag.Checkpoint > statePos {
		return fmt.Errorf("%w: the image is at position %d, the state at %d (reset, rebuilt or restored since)", errStaleSnapshot, tag.Checkpoint, statePos)
	}
	if tag.Checkpoint > 0 {
		id, err := s.eventID(ctx, tag.Checkpoint)
		if err != nil {
			return fmt.Errorf("%w: %w", errStaleSnapshot, err)
		}
		if id != tag.EventID {
			return fmt.Errorf("%w: the image is of another log (event %s at position %d, the image names %s)", errStaleSnapshot, id, tag.Checkpoint, tag.EventID)
		}
	}
	err := s.read(ctx, tag.Checkpoint, statePos, replayChunk, nil, fn)
	if errors.Is(err, domain.ErrLogEndsBefore) {
		return fmt.Errorf("%w: the log ends before the state's position %d: %w", errStaleSnapshot, statePos, err)
	}
	return err
}

// agentDropper is what a catch-up needs of an index besides its re-reads:
// dropping an agent deleted after the image (both index ports have it).
type agentDropper interface {
	DeleteAgent(ctx context.Context, scope domain.IndexScope) error
}

// catchUp brings an index restored from the image tag up to the state at
// statePos, the one catch-up of every index projection: it walks the log
// between them, fails on an event refuse (when set) returns an error for
// (a change the re-reads cannot redo; the caller then refills), drops from
// index every agent deleted there, in log order and before any re-read,
// and then hands reread the memories the other events changed, which it
// replaces in the index with what the state keeps of them.
func (s *snapshotState) catchUp(ctx context.Context, kind string, tag domain.IndexSnapshot, statePos uint64, index agentDropper,
	refuse func(domain.Event) error, reread func(context.Context, changedMemories) error, logger *slog.Logger) error {
	start := time.Now()
	var changed changedMemories
	err := s.tail(ctx, tag, statePos, func(events []domain.Event) error {
		for _, e := range events {
			if refuse != nil {
				if err := refuse(e); err != nil {
					return fmt.Errorf("%w at position %d", err, e.Position)
				}
			}
			payload, err := agentDeletions.Decode(e).Decoded()
			if err != nil {
				return err
			}
			ev, deleted := payload.(*memory.AgentDeleted)
			if !deleted {
				if err := changed.add(e); err != nil {
					return err
				}
				continue
			}
			if err := index.DeleteAgent(ctx, scopeOf(ev.AgentRef)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// A tail that changed no memory (an image as new as its state, as a
	// command line's images mostly are) re-reads nothing: its statement
	// alone would cost a local search a few tenths of a millisecond.
	if len(changed.ids) > 0 {
		if err := reread(ctx, changed); err != nil {
			return err
		}
	}
	s.imaged.Store(tag.Checkpoint)
	logger.Info("index started from its snapshot", "index", kind, "checkpoint", tag.Checkpoint, "state_position", statePos,
		"memories_reread", len(changed.ids), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// changedMemories collects the memories the events after an image changed,
// to re-read from the state: their ids in first-change order and the index
// scope of each. Deleted agents are the catch-up's own walk.
type changedMemories struct {
	ids    []string
	scopes map[string]domain.IndexScope
}

// agentDeletions decodes the events that delete an agent, which a
// catch-up applies itself; it never changes.
var agentDeletions = domain.MustEventRegistry([]domain.EventDecoder{domain.DecoderOf[memory.AgentDeleted]()})

// memoryEvents are the events that change one memory in an index; a
// catch-up reads only the memory they name (memoryRef), so it never
// decodes them whole. It never changes.
var memoryEvents = domain.MustEventRegistry([]domain.EventDecoder{
	domain.DecoderOf[memory.MemoryCreated](), domain.DecoderOf[memory.MemoryEmbedded](), domain.DecoderOf[memory.MemoryUpdated](),
	domain.DecoderOf[memory.MemoryPatched](), domain.DecoderOf[memory.MemoryForgotten](), domain.DecoderOf[memory.MemoryRecovered](),
	domain.DecoderOf[memory.MemoryPurged](),
})

// memoryRef is what every memory event names.
type memoryRef struct {
	memory.AgentRef
	MemoryID string `json:"memory_id"`
}

// add records e's memory, if it names one.
func (c *changedMemories) add(e domain.Event) error {
	if !memoryEvents.Knows(e.Type) {
		return nil
	}
	var ref memoryRef
	if err := json.Unmarshal(e.Payload, &ref); err != nil {
		return fmt.Errorf("%s at %d: %w", e.Type, e.Position, err)
	}
	if c.scopes == nil {
		c.scopes = map[string]domain.IndexScope{}
	}
	if _, seen := c.scopes[ref.MemoryID]; !seen {
		c.ids = append(c.ids, ref.MemoryID)
	}
	c.scopes[ref.MemoryID] = scopeOf(ref.AgentRef)
	return nil
}

// snapshotCheck is how often the engine checks whether an image is due.
const snapshotCheck = time.Second

func (e *Engine) snapshotters() []snapshotter {
	var out []snapshotter
	for _, p := range e.projections {
		if s, ok := p.(snapshotter); ok {
			out = append(out, s)
		}
	}
	return out
}

// saveSnapshotsWhileRunning saves the images that come due, one at a
// time, until ctx ends: a goroutine of its own, so no write waits for an
// image.
func (e *Engine) saveSnapshotsWhileRunning(ctx context.Context) {
	snaps := e.snapshotters()
	if len(snaps) == 0 {
		return
	}
	tick := time.NewTicker(snapshotCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, s := range snaps {
			if s.snapshotDue(false) {
				if err := s.SaveSnapshot(ctx); err != nil && ctx.Err() == nil {
					e.logger.Warn("index snapshot not saved", "projection", s.Name(), "error", err)
				}
			}
		}
	}
}

// SaveSnapshots saves the image of every in-process index that changed
// since its last one: at a clean stop, so the next start restores it
// with nothing to re-read.
func (e *Engine) SaveSnapshots(ctx context.Context) error {
	var errs []error
	for _, s := range e.snapshotters() {
		if s.snapshotDue(true) {
			if err := s.SaveSnapshot(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}
