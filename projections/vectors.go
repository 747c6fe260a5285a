package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// VectorsProjectionName keys the vector projection's checkpoint.
const VectorsProjectionName = "vectors"

// Vectors maps memory events to vector index points. Its state (the
// agents' active spaces, each memory's metadata and current text hash,
// every recorded vector) is the truth; the index holds, per agent and
// space, the vectors of searchable memories computed from their current
// text, a forgotten memory's flagged so that only searches including
// forgotten memories find them. A vector of another text is kept in the state (the
// text may come back); a vector of another model is kept and indexed (a
// re-embedding in progress, searched once the agent switches).
type Vectors struct {
	state  domain.VectorState
	index  domain.VectorIndex
	logger *slog.Logger
	// loadIndex: the index keeps nothing across restarts (the embedded
	// one), so Position first fills it from the state.
	loadIndex bool
	// events decodes the events no engine decoded (see Events).
	events *domain.EventRegistry

	loadMu sync.Mutex
	loaded bool
	snap   *snapshotState
	// readLog is the engine's reader of the log (readLogWith).
	readLog logReader
	// skipIndex: this process does not search the index (SkipIndex).
	skipIndex bool

	mu     sync.RWMutex
	agents map[domain.IndexScope]domain.VectorSpace
	// followed is the checkpoint the agents were last read at by Follow
	// (ok: at all).
	followed   uint64
	followedOK bool
}

// NewVectors returns the vector projection writing to index. With
// loadIndex, the index is filled from state when the projection starts.
func NewVectors(state domain.VectorState, index domain.VectorIndex, loadIndex bool, logger *slog.Logger) *Vectors {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Vectors{state: state, index: index, logger: logger, loadIndex: loadIndex, events: Events(), agents: map[domain.IndexScope]domain.VectorSpace{}}
}

// UseSnapshots makes an in-process index start from cfg.Restored (when
// set) and be saved in snapshots. Call it before the projection starts.
func (p *Vectors) UseSnapshots(cfg Snapshots) {
	p.snap = &snapshotState{cfg: cfg, restored: cfg.Restored, read: p.readLog}
	if g, ok := p.index.(graphBuilder); ok {
		p.snap.graphs = g
	}
}

// readLogWith implements logReading: the snapshots' tails and event ids
// are read through the engine's reader.
func (p *Vectors) readLogWith(read logReader) {
	p.readLog = read
	p.snap.readLogWith(read)
}

// Name implements Projection.
func (p *Vectors) Name() string { return VectorsProjectionName }

// Position implements Projection. The engine asks before feeding events,
// so this is where the agents (and an in-process index) are loaded.
func (p *Vectors) Position(ctx context.Context) (uint64, error) {
	if !p.skipIndex {
		if err := p.Load(ctx); err != nil {
			return 0, err
		}
	}
	return p.state.VectorsCheckpoint(ctx)
}

// Reset implements Projection: it empties the index and the state. The
// agents' spaces, which searches read (and take for the agent's
// existence), are kept: the replay that follows a reset applies the same
// agent events again, and a search during a live rebuild still knows the
// agent; an in-process index's Load replaces them with the state's.
func (p *Vectors) Reset(ctx context.Context) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	if err := p.index.DropAll(ctx); err != nil {
		return fmt.Errorf("vectors: drop index: %w", err)
	}
	if err := p.state.ResetVectors(ctx); err != nil {
		return err
	}
	if err := p.snap.dropped(ctx, VectorsProjectionName); err != nil {
		return err
	}
	p.loaded = true
	return nil
}

// Apply implements Projection. The index writes are made before the state
// and checkpoint commit; the agents' spaces, which searches read, change
// only after it.
func (p *Vectors) Apply(ctx context.Context, events []domain.Event) error {
	return applyIndexed(ctx, p, p.skipIndex, p.snap, events)
}

// applyTo implements indexProjection; the agents' spaces change with the
// state, whether the index is written or not.
func (p *Vectors) applyTo(ctx context.Context, events []domain.Event, writeIndex bool) error {
	var w indexWrites
	var spaces []func()
	var flush func(context.Context) error
	p.events.DecodeAll(events)
	if writeIndex {
		flush = func(ctx context.Context) error { return w.flush(ctx, nil, p.index, p.logger) }
	}
	err := p.state.ApplyVectors(ctx, events, func(ctx context.Context, tx domain.VectorStateTx, e domain.Event) error {
		return p.apply(ctx, tx, e, &w, &spaces)
	}, flush)
	if err != nil {
		return err
	}
	for _, set := range spaces {
		set()
	}
	return nil
}

// Follow brings the agents' spaces up to the state when another node
// applies this projection (a shared state under a lease): when the
// checkpoint moved, the agents are read again. The checkpoint is read
// first, so the agents are at least as new as the position returned.
func (p *Vectors) Follow(ctx context.Context) (uint64, error) {
	pos, err := p.state.VectorsCheckpoint(ctx)
	if err != nil {
		return 0, err
	}
	p.mu.RLock()
	current := p.followedOK && p.followed == pos
	p.mu.RUnlock()
	if current {
		return pos, nil
	}
	agents, err := p.state.VectorAgents(ctx)
	if err != nil {
		return 0, fmt.Errorf("vectors: follow agents: %w", err)
	}
	spaces := make(map[domain.IndexScope]domain.VectorSpace, len(agents))
	for _, a := range agents {
		spaces[a.Scope()] = a.Space
	}
	p.mu.Lock()
	p.agents, p.followed, p.followedOK = spaces, pos, true
	p.mu.Unlock()
	return pos, nil
}

// checkpointKey implements checkpointed: the state's checkpoint row, when
// a replay reads nothing else (a derived index's state position, or the
// Position of a projection that loads no index).
func (p *Vectors) checkpointKey() (domain.CheckpointTable, string, bool) {
	if !p.indexFromState() && !p.skipIndex {
		return nil, "", false
	}
	return keyOf(p.state)
}

// indexFromState implements derivedIndex.
func (p *Vectors) indexFromState() bool { return p.loadIndex && !p.skipIndex }

// statePosition implements derivedIndex.
func (p *Vectors) statePosition(ctx context.Context) (uint64, error) {
	return p.state.VectorsCheckpoint(ctx)
}

// dropIndex implements derivedIndex.
func (p *Vectors) dropIndex(ctx context.Context) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	p.loaded = false
	if err := p.snap.dropped(ctx, VectorsProjectionName); err != nil {
		return err
	}
	if err := p.index.DropAll(ctx); err != nil {
		return fmt.Errorf("vectors: drop index: %w", err)
	}
	return nil
}

// UnitOfWork implements unitOfWorker.
func (p *Vectors) UnitOfWork() domain.UnitOfWork { return unitOfWorkOf(p.state) }

// AgentSpace reports the agent's active space; ok is false when the user
// has no such agent. It is answered from memory, so it is also the search
// service's agent existence check.
func (p *Vectors) AgentSpace(userID, agentID string) (domain.VectorSpace, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s, ok := p.agents[domain.IndexScope{UserID: userID, AgentID: agentID}]
	return s, ok
}

// Load reads the agents' spaces and fills an in-process index from the
// state, once; Reset makes it a no-op (until a replay drops the index).
func (p *Vectors) Load(ctx context.Context) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	if p.loaded {
		return nil
	}
	if err := p.loadAgents(ctx); err != nil {
		return err
	}
	if !p.loadIndex {
		p.loaded = true
		return nil
	}
	if p.snap != nil && p.snap.restored != nil {
		tag := *p.snap.restored
		p.snap.restored = nil
		err := p.catchUp(ctx, tag)
		if err == nil {
			p.snap.started.Store(&tag)
			p.snap.partial.Store(p.snap.graphs != nil && p.snap.graphs.ImageUnbuilt() > 0)
			if o, ok := p.index.(outdatedImager); ok {
				p.snap.outdated.Store(o.ImageOutdated())
			}
			p.loaded = true
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		p.logger.Warn("vector index snapshot not used: refilling the index from the state", "error", err)
		if err := p.index.DropAll(ctx); err != nil {
			return fmt.Errorf("vectors: drop index: %w", err)
		}
	}
	b := &loadBatch{p: p}
	if err := p.state.LoadVectors(ctx, func(v domain.LoadedVector) error { return b.add(ctx, v) }); err != nil {
		return fmt.Errorf("vectors: load: %w", err)
	}
	if err := b.flush(ctx); err != nil {
		return fmt.Errorf("vectors: load: %w", err)
	}
	p.snap.filled()
	p.loaded = true
	return nil
}

// errModelSwitchedSinceSnapshot: a switch re-indexes an agent's memories
// in another space, which the catch-up does not redo; the index is
// refilled instead (switches are rare).
var errModelSwitchedSinceSnapshot = errors.New("an embedding model switch after the image")

// catchUp brings an index restored from the image tag up to the state
// (snapshotState.catchUp): each changed memory is deleted from the index
// and its current vectors re-read from the state.
func (p *Vectors) catchUp(ctx context.Context, tag domain.IndexSnapshot) error {
	statePos, err := p.state.VectorsCheckpoint(ctx)
	if err != nil {
		return err
	}
	return p.snap.catchUp(ctx, VectorsProjectionName, tag, statePos, p.index, refusedInVectorTail, p.reread, p.logger)
}

// refusedInVectorTail: a model switch re-indexes an agent's memories in
// another space, which the re-reads do not redo.
func refusedInVectorTail(e domain.Event) error {
	payload, err := modelSwitches.Decode(e).Decoded()
	if _, switched := payload.(*memory.AgentModelSwitched); switched || err != nil { // unreadable: refused as well, the index is refilled
		return errModelSwitchedSinceSnapshot
	}
	return nil
}

// modelSwitches decodes the events that switch an agent's model, and no
// other; it never changes.
var modelSwitches = domain.MustEventRegistry([]domain.EventDecoder{domain.DecoderOf[memory.AgentModelSwitched]()})

// reread replaces what the index holds of the changed memories with their
// current vectors in the state.
func (p *Vectors) reread(ctx context.Context, changed changedMemories) error {
	for _, id := range changed.ids {
		if err := p.index.DeleteMemory(ctx, changed.scopes[id], id); err != nil {
			return err
		}
	}
	b := &loadBatch{p: p}
	if err := p.state.LoadVectorsOf(ctx, changed.ids, func(v domain.LoadedVector) error { return b.add(ctx, v) }); err != nil {
		return err
	}
	return b.flush(ctx)
}

// StartedFrom reports the snapshot the index started from (ok false: it
// was filled from the state, or dropped since).
func (p *Vectors) StartedFrom() (domain.IndexSnapshot, bool) { return p.snap.startedFrom() }

// snapshotDue implements snapshotter.
func (p *Vectors) snapshotDue(stopping bool) bool { return p.loadIndex && p.snap.due(stopping) }

// SaveSnapshot writes the index's image now (UseSnapshots; else nothing).
func (p *Vectors) SaveSnapshot(ctx context.Context) error {
	return p.snap.save(ctx, VectorsProjectionName, p.index, p.isLoaded, p.state.VectorsCheckpoint, p.logger)
}

func (p *Vectors) isLoaded() bool {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	return p.loaded
}

// LoadAgents reads only each agent's active space from the state, not the
// vectors: what a keyword search needs (AgentSpace) of a process that
// does not search vectors. Load still loads the index later.
func (p *Vectors) LoadAgents(ctx context.Context) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	if p.loaded {
		return nil
	}
	return p.loadAgents(ctx)
}

func (p *Vectors) loadAgents(ctx context.Context) error {
	agents, err := p.state.VectorAgents(ctx)
	if err != nil {
		return fmt.Errorf("vectors: load agents: %w", err)
	}
	spaces := make(map[domain.IndexScope]domain.VectorSpace, len(agents))
	for _, a := range agents {
		spaces[a.Scope()] = a.Space
	}
	p.mu.Lock()
	p.agents = spaces
	p.mu.Unlock()
	return nil
}
