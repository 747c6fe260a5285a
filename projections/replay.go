package projections

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/engram-memory/engram/domain"
)

// The bulk replay path of Rebuild and CatchUp. It reads the log through
// the engine's one reader, as the live follower and a live projection
// catching up do, once, decoded once (readLog), and applies each chunk as
// the live handler applies a batch (applyBatch). The paths differ only in
// their parameters: a replay knows the whole range up front, so it reads
// up to the head in full chunks, one ahead of the apply; it does not go
// through the router (there is nothing to park: a failure ends the
// replay); and the read models of one database apply a chunk in one
// transaction (domain.UnitOfWork).

// Chunk sizes: how many events a replay reads and applies at a time.
// Offline, large enough that a transaction's fixed costs (begin,
// checkpoint, commit, preparing statements) vanish per event, small enough
// that a chunk with its embeddings stays a few megabytes. A live rebuild
// holds the database's one writer for a chunk at a time, which the
// server's appends wait for: smaller chunks keep that wait to tens of
// milliseconds.
const (
	replayChunk     = 4096
	liveReplayChunk = 512
)

// unitOfWorker is a projection whose store can join a unit of work; the
// projections returning the same unit apply a replayed chunk in it.
type unitOfWorker interface {
	UnitOfWork() domain.UnitOfWork
}

// unitOfWorkOf is the unit of work store offers, or nil.
func unitOfWorkOf(store any) domain.UnitOfWork {
	if s, ok := store.(domain.UnitOfWorkStore); ok {
		return s.UnitOfWork()
	}
	return nil
}

// derivedIndex is a projection whose index keeps nothing across restarts
// and is filled from the projection's durable state when it starts (the
// embedded keyword and vector indexes). A replay applies the state alone
// — inserting into the index event by event costs more than building it
// once — then drops the index and, unless the process serves nothing,
// refills it from the state in bulk (Load; the vector graph then builds in
// the background while searches scan what it does not cover yet).
type derivedIndex interface {
	// indexFromState reports whether the index is derived from the state.
	indexFromState() bool
	// statePosition is the state's checkpoint, read without filling the
	// index (Position fills it first, which a replay would throw away).
	statePosition(ctx context.Context) (uint64, error)
	// applyTo applies events to the state and checkpoint, and to the
	// index with writeIndex (a replay applies them without).
	applyTo(ctx context.Context, events []domain.Event, writeIndex bool) error
	// dropIndex empties the index and marks it to be refilled by Load.
	dropIndex(ctx context.Context) error
	// Load refills a dropped index from the state.
	Load(ctx context.Context) error
}

// RebuildOffline is Rebuild for a process that serves nothing (`engram
// projections rebuild`): the in-process indexes are left empty instead of
// refilled, since the process that serves next fills them from the
// rebuilt state when it starts.
func (e *Engine) RebuildOffline(ctx context.Context, names ...string) error {
	return e.rebuild(ctx, false, names)
}

// applyGroup is the projections that apply a batch together: those of
// one unit of work in one transaction, any other alone (unit nil).
type applyGroup struct {
	unit        domain.UnitOfWork
	projections []Projection
	// stateOnly: a derived index (derivedIndex) gets its state and
	// checkpoint alone, as a replay, which refills the index once at the
	// end, applies it; live, the index is written with its state.
	stateOnly bool
}

// replay applies the log after the lowest checkpoint of selected up to
// head to the selected projections, chunk by chunk; each projection skips
// what it applied already.
// With refill, the derived in-process indexes are filled from the state
// at the end; without, they are left empty and refilled at the next start.
func (e *Engine) replay(ctx context.Context, selected []Projection, head uint64, refill bool, chunk int) (err error) {
	positions, err := replayPositions(ctx, selected)
	if err != nil {
		return err
	}
	from := head
	for i, p := range selected {
		e.advance(p.Name(), positions[i])
		from = min(from, positions[i])
	}
	if from >= head {
		return nil
	}
	// A derived index holds none of what the replay applies to the state:
	// it is dropped whatever happens, and refilled from the state now (on
	// success, with refill) or by the projection's next Load.
	defer func() {
		if dropErr := e.dropDerivedIndexes(context.WithoutCancel(ctx), selected, refill && err == nil); err == nil {
			err = dropErr
		}
	}()
	groups := replayGroups(selected)
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	chunks := e.readChunks(readCtx, from, head, chunk)
	for c := range chunks {
		if c.err != nil {
			return fmt.Errorf("projections: replay: read log after %d: %w", from, c.err)
		}
		for _, g := range groups {
			if err := e.applyBatch(ctx, g, c.events); err != nil {
				return err
			}
		}
		from = c.events[len(c.events)-1].Position
	}
	return ctx.Err()
}

// checkpointed is a projection whose position, as a replay reads it, is
// a row of a checkpoint table (ok false: the projection is asked).
type checkpointed interface {
	checkpointKey() (table domain.CheckpointTable, name string, ok bool)
}

// keyOf is store's checkpoint row, when it has one.
func keyOf(store any) (domain.CheckpointTable, string, bool) {
	k, ok := store.(domain.CheckpointKeyed)
	if !ok {
		return nil, "", false
	}
	table, name := k.CheckpointKey()
	return table, name, true
}

// replayPositions is where a replay starts each of selected: a derived
// index's state position, any other projection's Position. The
// projections whose checkpoints share a table are read in one statement
// (a reader's catch-up at open asks eight of one database); a failure
// names the first projection of the statement that failed, in order.
func replayPositions(ctx context.Context, selected []Projection) ([]uint64, error) {
	positions := make([]uint64, len(selected))
	errs := make([]error, len(selected))
	type row struct {
		at   int
		name string
	}
	shared := map[domain.CheckpointTable][]row{}
	var tables []domain.CheckpointTable
	var asked []int
	for i, p := range selected {
		if c, ok := p.(checkpointed); ok {
			if table, name, ok := c.checkpointKey(); ok {
				if _, seen := shared[table]; !seen {
					tables = append(tables, table)
				}
				shared[table] = append(shared[table], row{i, name})
				continue
			}
		}
		asked = append(asked, i)
	}
	for _, table := range tables {
		rows := shared[table]
		if len(rows) == 1 { // nothing to share: asked as before
			asked = append(asked, rows[0].at)
			continue
		}
		names := make([]string, len(rows))
		for j, r := range rows {
			names[j] = r.name
		}
		read, err := table.Checkpoints(ctx, names)
		if err != nil {
			errs[rows[0].at] = err
			continue
		}
		for _, r := range rows {
			positions[r.at] = read[r.name]
		}
	}
	for _, i := range asked {
		position := selected[i].Position
		if d, ok := selected[i].(derivedIndex); ok && d.indexFromState() {
			position = d.statePosition
		}
		positions[i], errs[i] = position(ctx)
	}
	for i, p := range selected {
		if errs[i] != nil {
			return nil, fmt.Errorf("projections: %s checkpoint: %w", p.Name(), errs[i])
		}
	}
	return positions, nil
}

// dropDerivedIndexes drops the derived indexes of selected and, with
// refill, fills them from the state.
func (e *Engine) dropDerivedIndexes(ctx context.Context, selected []Projection, refill bool) error {
	for _, p := range selected {
		d, ok := p.(derivedIndex)
		if !ok || !d.indexFromState() {
			continue
		}
		if err := d.dropIndex(ctx); err != nil {
			return err
		}
		if refill {
			if err := d.Load(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// replayGroups groups the projections by the unit of work they join,
// keeping their order; a replay applies derived indexes' state alone.
func replayGroups(selected []Projection) []applyGroup {
	var groups []applyGroup
	byUnit := map[domain.UnitOfWork]int{}
	for _, p := range selected {
		var unit domain.UnitOfWork
		if u, ok := p.(unitOfWorker); ok {
			unit = u.UnitOfWork()
		}
		if i, ok := byUnit[unit]; ok && unit != nil {
			groups[i].projections = append(groups[i].projections, p)
			continue
		}
		if unit != nil {
			byUnit[unit] = len(groups)
		}
		groups = append(groups, applyGroup{unit: unit, projections: []Projection{p}, stateOnly: true})
	}
	return groups
}

// applyBatch applies events to the group's projections, in one unit of
// work when they share one, and only once that has succeeded reports
// their progress (the checkpoints it advanced). It is the one way a batch
// reaches a projection: the live handler (batches from the follower, or
// read from the log while a projection catches up), CatchUp and the
// rebuilds (chunks read ahead of it) differ only in where the batches come
// from and in the group.
func (e *Engine) applyBatch(ctx context.Context, g applyGroup, events []domain.Event) error {
	applyAll := func(ctx context.Context) error {
		for _, p := range g.projections {
			var err error
			if d, ok := p.(derivedIndex); ok && g.stateOnly && d.indexFromState() {
				err = d.applyTo(ctx, events, false)
			} else {
				err = p.Apply(ctx, events)
			}
			if err != nil {
				if e.storage != nil {
					err = e.storage.Check(err)
				}
				return fmt.Errorf("projections: %s from %d: %w", p.Name(), events[0].Position, err)
			}
		}
		return nil
	}
	var err error
	if g.unit != nil {
		err = g.unit.InUnitOfWork(ctx, applyAll)
	} else {
		err = applyAll(ctx)
	}
	if err != nil {
		return err
	}
	for _, p := range g.projections {
		e.applied(p.Name(), len(events))
		e.advance(p.Name(), events[len(events)-1].Position)
	}
	return nil
}

// replayRead is one chunk of the log, or the error that ended reading.
type replayRead struct {
	events []domain.Event
	err    error
}

// readChunks reads the log after from up to head in decoded chunks
// (readLog), one chunk ahead of the projections: the next chunk is read
// and decoded while the previous one is applied, on two cores. The channel
// closes after the last chunk, an error, or when ctx ends.
func (e *Engine) readChunks(ctx context.Context, from, head uint64, chunk int) <-chan replayRead {
	out := make(chan replayRead, 1)
	go func() {
		defer close(out)
		err := e.readLog(ctx, from, head, chunk, e.events, func(events []domain.Event) error {
			select {
			case out <- replayRead{events: events}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil && ctx.Err() == nil {
			select {
			case out <- replayRead{err: err}:
			case <-ctx.Done():
			}
		}
	}()
	return out
}

// following is the bound of a read that never ends: it follows the log.
const following = math.MaxUint64

// readLog is the one reader of the log behind the projections: the live
// follower, a live projection catching up on its own, CatchUp and the
// rebuilds differ only in its parameters, and the index projections read
// the tail after their image through it too (logReader). It hands handle
// the events after position after, in log order, each decoded once by
// events (the engine's registry; nil decodes nothing: the snapshots'
// catch-up decodes the few types it looks at itself), in chunks of at
// most chunk events; handle's events are not to be changed (the follower
// shares them between projections). A read to following goes through the
// store's subscription (SubscribeAll): it hands each page as soon as the
// store has it, then follows what is appended, until ctx ends. A read up
// to a position (until) needs no waiting: it reads the
// range the log holds (ReadRange; on PostgreSQL no LISTEN connection),
// joins the store's pages into full chunks, and returns nil once it has
// handed the last event at or below until. until is a position the engine
// has seen (the head, the follower's), so a log that ends before it fails
// (domain.ErrLogEndsBefore) rather than waiting for an event that may
// never come. It returns ctx's error, the store's, or handle's.
func (e *Engine) readLog(ctx context.Context, after, until uint64, chunk int, events *domain.EventRegistry, handle func([]domain.Event) error) error {
	if after >= until {
		return nil
	}
	var pending []domain.Event
	read := func(_ context.Context, page []domain.Event) error {
		if events != nil {
			events.DecodeAll(page)
		}
		if len(pending) == 0 {
			pending = page
		} else {
			pending = append(pending, page...)
		}
		for len(pending) >= chunk || len(pending) > 0 && until == following {
			c := min(chunk, len(pending))
			if err := handle(pending[:c:c]); err != nil {
				return err
			}
			pending = pending[c:]
		}
		return nil
	}
	if until == following {
		return e.store.SubscribeAll(ctx, after, read)
	}
	if err := e.store.ReadRange(ctx, after, until, read); err != nil {
		return err
	}
	if len(pending) > 0 {
		return handle(pending[:len(pending):len(pending)])
	}
	return nil
}

// logReader is the engine's one reader of the log (Engine.readLog), which
// the engine hands the projections that read the log themselves
// (logReading).
type logReader func(ctx context.Context, after, until uint64, chunk int, events *domain.EventRegistry, handle func([]domain.Event) error) error

// logReading is a projection that reads the log itself: an index
// projection catching its restored index up with the events after the
// image (snapshotState.tail).
type logReading interface {
	readLogWith(read logReader)
}

// cut is the number of events at or below head.
func cut(events []domain.Event, head uint64) int {
	for i, ev := range events {
		if ev.Position > head {
			return i
		}
	}
	return len(events)
}

// ErrUnknownProjection: no projection has that name.
var ErrUnknownProjection = errors.New("unknown projection")

// ErrRebuilding: the projection is being rebuilt already.
var ErrRebuilding = errors.New("being rebuilt already")

// liveRebuilds is the engine's state of projections rebuilt while the
// others serve (RebuildLive).
type liveRebuilds struct {
	mu sync.Mutex
	// gates pause a projection's live handler while it is rebuilt.
	gates map[string]*sync.Mutex
	// rebuilding names the projections being rebuilt: visibility waits
	// leave them out, Status reports them.
	rebuilding map[string]bool
	// rebuilt names the projections rebuilt since their live handler
	// last ran (see pauseWhileRebuilt).
	rebuilt map[string]bool
	// shared names the leased projections the shared store says are
	// being rebuilt (by the lease holder, which may be another node).
	shared map[string]bool
}

func (l *liveRebuilds) gate(name string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gates == nil {
		l.gates = map[string]*sync.Mutex{}
	}
	g := l.gates[name]
	if g == nil {
		g = &sync.Mutex{}
		l.gates[name] = g
	}
	return g
}

// pauseWhileRebuilt is the outermost middleware of a projection's live
// handler: a batch waits while RebuildLive holds the projection's gate,
// then applies what the rebuild did not (Apply skips events at or below
// the rebuilt checkpoint). After a rebuild that stopped part-way (an
// error, a cancelled request) the checkpoint is behind the batch: the gap
// is replayed first, or those events would never be applied.
func (e *Engine) pauseWhileRebuilt(p Projection) message.HandlerMiddleware {
	gate := e.live.gate(p.Name())
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			gate.Lock()
			defer gate.Unlock()
			if e.live.takeRebuilt(p.Name()) {
				if err := e.replayBefore(msg, p); err != nil {
					e.live.markRebuilt(p.Name()) // the redelivered batch tries again
					return nil, err
				}
			}
			return h(msg)
		}
	}
}

// replayBefore replays into p the log up to the event before msg's batch.
func (e *Engine) replayBefore(msg *message.Message, p Projection) error {
	return e.replay(msg.Context(), []Projection{p}, batchOf(msg)[0].Position-1, true, liveReplayChunk)
}

func (l *liveRebuilds) markRebuilt(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rebuilt == nil {
		l.rebuilt = map[string]bool{}
	}
	l.rebuilt[name] = true
}

// takeRebuilt reports whether name was rebuilt since its handler last
// looked, and forgets it.
func (l *liveRebuilds) takeRebuilt(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	was := l.rebuilt[name]
	delete(l.rebuilt, name)
	return was
}

// isRebuildingLocked reports whether name is being rebuilt live, here or
// by the node holding its lease; e.mu is held.
func (e *Engine) isRebuildingLocked(name string) bool {
	return e.live.rebuilding[name] || e.live.shared[name]
}

// RebuildLive rebuilds the named projection while Run serves the others:
// its live handler pauses, it is reset and the log replayed into it up to
// the head, then its handler resumes with what was appended meanwhile. A
// leased projection is rebuilt so by the node holding its lease, which
// this node asks through the shared store (see rebuildLeased).
// Until it returns, the projection's reads see its partial state (an
// in-process index is empty until the replay refills it at the end),
// writes' visibility waits leave it out (so they neither hang for the
// whole rebuild nor wait on a projection that cannot reach them before it
// ends) and Status reports it as rebuilding. It returns the events
// replayed. Only one live rebuild of a projection runs at a time.
func (e *Engine) RebuildLive(ctx context.Context, name string) (uint64, error) {
	if e.leased(name) {
		return e.rebuildLeased(ctx, name)
	}
	return e.rebuildHere(ctx, name)
}

// rebuildHere is RebuildLive run on this node.
func (e *Engine) rebuildHere(ctx context.Context, name string) (uint64, error) {
	selected, err := e.select_([]string{name})
	if err != nil {
		return 0, err
	}
	p := selected[0]
	e.mu.Lock()
	if e.live.rebuilding[name] {
		e.mu.Unlock()
		return 0, fmt.Errorf("projections: %s: %w", name, ErrRebuilding)
	}
	if e.live.rebuilding == nil {
		e.live.rebuilding = map[string]bool{}
	}
	e.live.rebuilding[name] = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.live.rebuilding, name)
		close(e.changed) // waits that left it out look again
		e.changed = make(chan struct{})
		e.mu.Unlock()
	}()
	gate := e.live.gate(name)
	gate.Lock()
	defer gate.Unlock()
	defer e.live.markRebuilt(name)
	if err := p.Reset(ctx); err != nil {
		return 0, fmt.Errorf("projections: reset %s: %w", name, err)
	}
	e.mu.Lock()
	e.positions[name] = 0
	e.mu.Unlock()
	head, err := e.store.Head(ctx)
	if err != nil {
		return 0, err
	}
	return head, e.replay(ctx, selected, head, true, liveReplayChunk)
}
