// Package projections turns the event log into read models and search
// indexes. Each projection is a plain mapping from events to operations on
// a port of its own (domain.KeywordIndex, domain.VectorIndex, the read
// model stores); it keeps a durable checkpoint, applies batches
// idempotently and can be rebuilt by replaying the log from the start.
//
// Events reach the projections from one reader of the log, which decodes
// each event once (see follower.go), through a watermill router, one
// handler per projection, with three middlewares: panics become errors
// (Recoverer), a failed batch is retried in place with exponential backoff
// (Retry), and a batch that still fails is parked: handed back to the
// projection's subscriber, which redelivers it with a growing delay, while
// Status reports it. A
// parked batch is never skipped (a read model with a hole would be wrong
// for ever); it is the dead letter an operator sees on /readyz.
package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/engram-memory/engram/domain"
)

// Projection is one read model or index built from the log.
type Projection interface {
	// Name is stable: it keys the checkpoint and names the projection on
	// the command line.
	Name() string
	// Position is the durable checkpoint: the last global position applied.
	Position(ctx context.Context) (uint64, error)
	// Apply applies events in log order and advances the checkpoint in the
	// same atomic step. Events at or below the checkpoint must be ignored,
	// so redelivery is harmless.
	Apply(ctx context.Context, events []domain.Event) error
	// Reset drops all state and the checkpoint.
	Reset(ctx context.Context) error
}

// Engine runs projections and tells writers when their events are visible.
type Engine struct {
	store       domain.EventStore
	projections []Projection
	logger      *slog.Logger
	retryDelay  time.Duration
	// maxPending bounds the events queued for one projection (see
	// follower.go).
	maxPending int

	mu        sync.Mutex
	positions map[string]uint64
	changed   chan struct{}
	stats     map[string]*ProjectionStatus
	// leasing is set by UseLeases; leaseStatus holds its projections'
	// lease holders.
	leasing     *Leasing
	leaseStatus map[string]*LeaseStatus
	// waiters counts the WaitFor calls waiting; nudge is closed (and
	// replaced) when one starts, so the followers of leased projections
	// read the shared checkpoints at once and then often while any wait.
	waiters atomic.Int64
	nudge   chan struct{}
	// announcements are closed when Leasing.Changes announces a change
	// of their key (see announced).
	announcements map[string]chan struct{}
	live          liveRebuilds
	// events decodes each event read once for every projection.
	events *domain.EventRegistry
	// storage, when set (UseStorageGuard), holds failed batches while
	// storage is full.
	storage StorageGuard
}

// StorageGuard knows whether storage is full (see infra/diskspace).
type StorageGuard interface {
	// Check returns err marked with domain.ErrStorageFull when it says
	// there is no space left, and records that storage is full.
	Check(err error) error
	// Full returns why storage is full, nil while it has room.
	Full(ctx context.Context) error
	// Changed returns a channel closed at the next change of Full.
	Changed() <-chan struct{}
	// WaitForSpace returns once storage has room, or with ctx's error.
	WaitForSpace(ctx context.Context) error
}

// UseStorageGuard makes a batch that failed for want of space wait, without
// retries, until g says storage has room again (a retry on a full disk only
// grows the files that filled it), and makes a wait for visibility give up
// at once while storage is full. Call it before Run.
func (e *Engine) UseStorageGuard(g StorageGuard) { e.storage = g }

// Delivery tuning: quick retries in the handler, then parking with a
// redelivery delay that doubles from retryDelay up to maxRetryDelay.
const (
	quickRetries       = 3
	quickRetryInterval = 50 * time.Millisecond
	maxRetryDelay      = 30 * time.Second
)

// NewEngine returns an engine over store for the given projections. The
// projections that read the log themselves read it through the engine's
// reader.
func NewEngine(store domain.EventStore, logger *slog.Logger, projections ...Projection) *Engine {
	e := &Engine{
		store:       store,
		projections: projections,
		logger:      logger,
		retryDelay:  250 * time.Millisecond,
		maxPending:  maxPending,
		positions:   make(map[string]uint64, len(projections)),
		changed:     make(chan struct{}),
		stats:       make(map[string]*ProjectionStatus, len(projections)),
		leaseStatus: make(map[string]*LeaseStatus),
		nudge:       make(chan struct{}),
		events:      Events(),

		announcements: make(map[string]chan struct{}),
	}
	for _, p := range projections {
		if r, ok := p.(logReading); ok {
			r.readLogWith(e.readLog)
		}
	}
	return e
}

// Names lists the projections in the order they were given.
func (e *Engine) Names() []string {
	names := make([]string, len(e.projections))
	for i, p := range e.projections {
		names[i] = p.Name()
	}
	return names
}

// Run feeds every projection from its checkpoint until ctx ends; a
// leased projection (UseLeases) only while this node holds its lease.
func (e *Engine) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	f := newFollower(ctx, e)
	defer f.wait()
	defer cancel()
	snapshotsDone := make(chan struct{})
	go func() { defer close(snapshotsDone); e.saveSnapshotsWhileRunning(ctx) }()
	defer func() { cancel(); <-snapshotsDone }()
	var own, leased []Projection
	for _, p := range e.projections {
		if e.leased(p.Name()) {
			leased = append(leased, p)
		} else {
			own = append(own, p)
		}
	}
	if len(leased) == 0 {
		return e.run(ctx, f, own)
	}
	errs := make(chan error, len(leased)+1)
	running := len(leased)
	if len(own) > 0 {
		running++
		go func() { errs <- e.run(ctx, f, own) }()
	}
	for _, p := range leased {
		go func() { errs <- e.runLeased(ctx, f, p) }()
	}
	listening := make(chan struct{})
	go func() { defer close(listening); e.listen(ctx) }()
	defer func() { <-listening }()
	// The first to stop (the context ended, or the router failed) stops
	// the others.
	first := <-errs
	cancel()
	for range running - 1 {
		<-errs
	}
	return first
}

// run applies projections live from their checkpoints, fed by f, until
// ctx ends or the router fails.
func (e *Engine) run(ctx context.Context, f *logFollower, projections []Projection) error {
	// Watermill logs every handler's start and stop at info; for an operator
	// they are start-up noise, so they go to debug. Its errors stay errors.
	wmLogger := newRouterLog(watermill.NewSlogLoggerWithLevelMapping(e.logger.With("component", "watermill"),
		map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug}))
	defer wmLogger.close()
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, wmLogger)
	if err != nil {
		return fmt.Errorf("projections: router: %w", err)
	}
	retry := middleware.Retry{
		MaxRetries: quickRetries, InitialInterval: quickRetryInterval, MaxInterval: time.Second, Multiplier: 2,
		// A batch of a stopping engine is not retried: it is redelivered
		// from the checkpoint at the next start.
		// Nor is one that failed for want of space: it waits for space.
		ShouldRetry: func(p middleware.RetryParams) bool {
			return !errors.Is(p.Err, context.Canceled) && !errors.Is(p.Err, domain.ErrStorageFull)
		},
	}
	positions, err := e.positionsOf(ctx, projections)
	if err != nil {
		return err
	}
	// The follower serves from the lowest checkpoint, unless it serves
	// already (these are leased projections taken over): a projection
	// behind it catches up on its own.
	members := f.join(positions)
	defer func() {
		for _, m := range members {
			m.leave()
		}
	}()
	for i, p := range projections {
		sub := &memberSubscriber{e: e, m: members[i], from: positions[i], retryDelay: e.retryDelay, maxRetryDelay: maxRetryDelay}
		h := router.AddConsumerHandler(p.Name(), p.Name(), sub, e.handler(p))
		// Outermost first: park what the retries could not apply; retry
		// each failed attempt, counted, whether an error or a recovered panic.
		h.AddMiddleware(e.pauseWhileRebuilt(p), e.parkOnFailure(p.Name()), retry.Middleware, e.countFailures(p.Name()), middleware.Recoverer)
	}
	// The router stops only when closed, not when its context ends. It is
	// closed once it runs: a close before would wait the whole
	// CloseTimeout for handlers that never start (AddConsumerHandler
	// counts them), and keep its handlers from starting meanwhile.
	// Once ctx ends the close is waited for: it logs after Run returns,
	// and nothing of the engine may still log once it has stopped (the
	// caller's log may be gone by then).
	runReturned, closed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(closed)
		<-ctx.Done()
		select {
		case <-router.Running():
			router.Close()
		case <-runReturned: // Run failed before running: nothing to close
		}
	}()
	err = router.Run(ctx)
	close(runReturned)
	if ctx.Err() != nil {
		<-closed
	}
	if err != nil {
		return err
	}
	return ctx.Err()
}

// positionsOf reads the projections' checkpoints, all at once. Asking a
// projection with an in-process index loads that index first (Position),
// and the keyword and vector indexes restored from their images then
// catch up the log written after them, each through its own port, state
// and checkpoint: at once they take about the longer one's wall time
// instead of the sum of both. A failure fails the start as when they ran
// in turn (the first projection's in order), once every one has returned;
// an index that could not use its image falls back within its own Load.
func (e *Engine) positionsOf(ctx context.Context, projections []Projection) ([]uint64, error) {
	positions := make([]uint64, len(projections))
	errs := make([]error, len(projections))
	var wg sync.WaitGroup
	for i, p := range projections {
		wg.Go(func() { positions[i], errs[i] = p.Position(ctx) })
	}
	wg.Wait()
	for i, p := range projections {
		if errs[i] != nil {
			return nil, fmt.Errorf("projections: %s checkpoint: %w", p.Name(), errs[i])
		}
		e.advance(p.Name(), positions[i])
	}
	return positions, nil
}

// handler applies a delivered batch to p alone, index and state, through
// the one apply path (applyBatch).
func (e *Engine) handler(p Projection) message.NoPublishHandlerFunc {
	live := applyGroup{projections: []Projection{p}}
	return func(msg *message.Message) error {
		return e.applyBatch(msg.Context(), live, batchOf(msg))
	}
}

// countFailures records every failed attempt in Status.
func (e *Engine) countFailures(name string) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err != nil {
				e.fail(name, err)
				e.logger.Warn("projection apply failed; will retry", "projection", name, "error", err)
			}
			return out, err
		}
	}
}

// parkOnFailure counts the batches the quick retries could not apply;
// returning the error nacks the message, so the subscriber parks it and
// redelivers it later.
func (e *Engine) parkOnFailure(name string) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err != nil && msg.Context().Err() == nil {
				e.mu.Lock()
				st := e.statLocked(name)
				st.Parked++
				if st.ParkedSince == nil {
					now := time.Now().UTC()
					st.ParkedSince = &now
				}
				e.mu.Unlock()
				if errors.Is(err, domain.ErrStorageFull) {
					e.logger.Error("projection batch held until storage has room again; it is not retried before", "projection", name, "error", err)
				} else {
					e.logger.Error("projection batch parked; it is redelivered with a growing delay until it applies", "projection", name, "error", err)
				}
			}
			return out, err
		}
	}
}

func (e *Engine) statLocked(name string) *ProjectionStatus {
	st := e.stats[name]
	if st == nil {
		st = &ProjectionStatus{}
		e.stats[name] = st
	}
	return st
}

func (e *Engine) advance(name string, pos uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if pos <= e.positions[name] && pos != 0 {
		return
	}
	e.positions[name] = pos
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *Engine) applied(name string, events int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.statLocked(name)
	st.Batches++
	st.Events += uint64(events)
	st.Error, st.ParkedSince = "", nil
}

func (e *Engine) fail(name string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.statLocked(name)
	st.FailedAttempts++
	st.Error = err.Error()
}

// lowest returns the smallest position the named projections (all when
// none are named) have reached, leaving out those being rebuilt live, and
// a channel closed at the next change.
func (e *Engine) lowest(names []string) (uint64, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var low uint64
	first := true
	for _, p := range e.projections {
		if len(names) > 0 && !slices.Contains(names, p.Name()) || e.isRebuildingLocked(p.Name()) {
			continue
		}
		if pos := e.positions[p.Name()]; first || pos < low {
			low, first = pos, false
		}
	}
	if first { // every one is being rebuilt: nothing to wait for
		return math.MaxUint64, e.changed
	}
	return low, e.changed
}

// WaitFor blocks until every projection has applied the event at position,
// so a write is visible to every read that follows (read-your-writes).
func (e *Engine) WaitFor(ctx context.Context, position uint64) error {
	return e.WaitForProjections(ctx, position)
}

// WaitForProjections blocks until the named projections (all when none
// are named) have applied the event at position.
func (e *Engine) WaitForProjections(ctx context.Context, position uint64, names ...string) error {
	if low, _ := e.lowest(names); low >= position {
		return nil
	}
	if e.leasing != nil {
		e.waiters.Add(1)
		defer e.waiters.Add(-1)
		e.mu.Lock()
		close(e.nudge)
		e.nudge = make(chan struct{})
		e.mu.Unlock()
	}
	for {
		low, changed := e.lowest(names)
		if low >= position {
			return nil
		}
		var storageChanged <-chan struct{}
		if e.storage != nil {
			storageChanged = e.storage.Changed()
			if full := e.storage.Full(ctx); full != nil {
				// The projections hold until space is freed: waiting out
				// the caller's bound would only keep it longer.
				return storageFullWait(position, low, full)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("projections: waiting for position %d (at %d): %w", position, low, ctx.Err())
		case <-changed:
		case <-storageChanged:
		}
	}
}

// Rebuilding reports whether the named projection is being rebuilt live
// (RebuildLive), here or by the node holding its lease: its reads see a
// partial state until the rebuild ends.
func (e *Engine) Rebuilding(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.isRebuildingLocked(name)
}

// storageFullWait is the answer to a wait for position that cannot end
// while storage is full: 503 not_yet_consistent for a client that waits
// for it, wrapping full (domain.ErrStorageFull) for a writer that must
// say its write is stored.
func storageFullWait(position, low uint64, full error) error {
	e := domain.Errorf(domain.KindNotYetConsistent, "the read models cannot apply position %d (they are at %d) while the server's storage is full; retry once space is freed", position, low)
	e.Err = full
	return e.WithDetail(domain.DetailRetryAfterSeconds, 10)
}

// Status reports each projection's position and delivery metrics.
func (e *Engine) Status() map[string]ProjectionStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]ProjectionStatus, len(e.projections))
	for _, p := range e.projections {
		var st ProjectionStatus
		if s := e.stats[p.Name()]; s != nil {
			st = *s
		}
		st.Position = e.positions[p.Name()]
		if ls := e.leaseStatus[p.Name()]; ls != nil {
			lease := *ls
			st.Lease = &lease
		}
		st.Rebuilding = e.isRebuildingLocked(p.Name())
		out[p.Name()] = st
	}
	return out
}

// ProjectionStatus is one projection's progress and delivery metrics
// since the engine started.
type ProjectionStatus struct {
	Position uint64 `json:"position"`
	// Error is the last failure, cleared when a batch applies.
	Error          string `json:"error,omitempty"`
	Batches        uint64 `json:"batches_applied"`
	Events         uint64 `json:"events_applied"`
	FailedAttempts uint64 `json:"failed_attempts"`
	// Parked counts batches the quick retries could not apply; while the
	// current one is parked, ParkedSince says since when.
	Parked      uint64     `json:"batches_parked"`
	ParkedSince *time.Time `json:"parked_since,omitempty"`
	// Lease is set for a leased projection (Leasing): who applies it.
	Lease *LeaseStatus `json:"lease,omitempty"`
	// Rebuilding: RebuildLive is replaying the log into it; its reads
	// are partial and writes' visibility waits leave it out meanwhile.
	Rebuilding bool `json:"rebuilding,omitempty"`
}

// CatchUp brings the named projections (all when names is empty) up to
// the whole log as it stands now, through the bulk replay path (see
// replay.go), then returns.
func (e *Engine) CatchUp(ctx context.Context, names ...string) error {
	selected, err := e.select_(names)
	if err != nil {
		return err
	}
	head, err := e.store.Head(ctx)
	if err != nil {
		return err
	}
	return e.replay(ctx, selected, head, true, replayChunk)
}

// Rebuild drops the named projections (all when names is empty) and replays
// the whole log into them.
func (e *Engine) Rebuild(ctx context.Context, names ...string) error {
	return e.rebuild(ctx, true, names)
}

func (e *Engine) rebuild(ctx context.Context, refill bool, names []string) error {
	selected, err := e.select_(names)
	if err != nil {
		return err
	}
	for _, p := range selected {
		if err := p.Reset(ctx); err != nil {
			return fmt.Errorf("projections: reset %s: %w", p.Name(), err)
		}
		e.mu.Lock()
		e.positions[p.Name()] = 0
		e.mu.Unlock()
	}
	head, err := e.store.Head(ctx)
	if err != nil {
		return err
	}
	return e.replay(ctx, selected, head, refill, replayChunk)
}

// CheckNames fails with ErrUnknownProjection unless every name is one of
// the engine's projections.
func (e *Engine) CheckNames(names ...string) error {
	_, err := e.select_(names)
	return err
}

func (e *Engine) select_(names []string) ([]Projection, error) {
	if len(names) == 0 {
		return e.projections, nil
	}
	var out []Projection
	for _, n := range names {
		found := false
		for _, p := range e.projections {
			if p.Name() == n {
				out = append(out, p)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("projections: %w %q (have %v)", ErrUnknownProjection, n, e.Names())
		}
	}
	return out, nil
}
