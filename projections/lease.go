package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/internal/pause"
)

// Leasing makes projections whose store several nodes share run on one
// node at a time. A leased projection is applied only by the node holding
// its lease; the other nodes wait for the lease and meanwhile follow the
// checkpoint kept in the shared store, so their WaitFor (read-your-writes,
// the consistency token) answers when the holder has applied a position.
// When the holder dies, a waiting node acquires the lease and resumes at
// the shared checkpoint; the store's Apply skips what is at or below it,
// so no event is skipped or applied twice.
//
// Followers do not poll for the holder's progress: the shared store
// announces each committed checkpoint, rebuild record and lease change
// (Changes), and a slow poll is only the safety net for an announcement
// missed while the listening connection was down.
type Leasing struct {
	Leases domain.ProjectionLeases
	// Rebuilds records the live rebuilds of the leased projections
	// (RebuildLive): any node requests one, the holder runs it.
	Rebuilds domain.ProjectionRebuilds
	// Changes wakes this node when another commits a change to a leased
	// projection's shared state.
	Changes domain.ProjectionChanges
	// Node is this node's name, as Leases names holders.
	Node string
	// Projections are the leased projections' names.
	Projections []string
	// Follow is how often a node without a lease reads the shared
	// checkpoint although nothing announced a change (0:
	// DefaultFollowInterval). While a WaitFor waits, it reads every
	// waitedFollowInterval.
	Follow time.Duration
}

// DefaultFollowInterval is Leasing.Follow's default: the safety net's
// period, which bounds how stale a follower may be when an announcement
// was lost.
const DefaultFollowInterval = 5 * time.Second

// waitedFollowInterval is the safety net's period while a WaitFor waits:
// a lost announcement delays a read-your-writes wait by at most this.
const waitedFollowInterval = 100 * time.Millisecond

// holderRefresh is the least time between two questions of a follower
// about who holds a lease when announcements of checkpoints wake it.
const holderRefresh = time.Second

// LeaseStatus is who holds a leased projection's lease, as this node last
// saw it.
type LeaseStatus struct {
	// Holder names the holding node ("" when none holds it).
	Holder string `json:"holder"`
	// HeldHere: this node holds it and applies the projection.
	HeldHere bool `json:"held_here"`
}

// follower is a leased projection that keeps more of its shared state in
// memory than the checkpoint (the vector projection: the agents' spaces,
// which searches read): on a node that does not hold the lease, Follow
// brings that memory up to the shared state and returns the checkpoint it
// is current to.
type follower interface {
	Follow(ctx context.Context) (uint64, error)
}

// followOnce brings this node's view of p up to the shared store once:
// its checkpoint, then whether it is being rebuilt. In that order: the
// holder records a rebuild as running before it resets the checkpoint, so
// a reset checkpoint read here is never taken for the projection's
// progress.
func (e *Engine) followOnce(ctx context.Context, p Projection) error {
	var pos uint64
	var err error
	if f, ok := p.(follower); ok {
		pos, err = f.Follow(ctx)
	} else {
		pos, err = p.Position(ctx)
	}
	if err != nil {
		return err
	}
	rebuild, err := e.leasing.Rebuilds.Get(ctx, p.Name())
	if err != nil {
		return err
	}
	e.setSharedRebuild(p.Name(), rebuild.State == domain.RebuildRunning)
	e.advance(p.Name(), pos)
	return nil
}

// setSharedRebuild records whether the shared store says name is being
// rebuilt; the waits look again when that changes, since they leave it
// out or take it in.
func (e *Engine) setSharedRebuild(name string, rebuilding bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live.shared[name] == rebuilding {
		return
	}
	e.live.shared[name] = rebuilding
	close(e.changed)
	e.changed = make(chan struct{})
}

// UseLeases makes the projections l names leased; call it before Run.
func (e *Engine) UseLeases(l Leasing) error {
	if l.Leases == nil || l.Rebuilds == nil || l.Changes == nil || l.Node == "" {
		return errors.New("projections: leasing needs the leases, the rebuild records, the change announcements and this node's name")
	}
	for _, name := range l.Projections {
		if !slices.Contains(e.Names(), name) {
			return fmt.Errorf("projections: cannot lease unknown projection %q (have %v)", name, e.Names())
		}
	}
	if l.Follow <= 0 {
		l.Follow = DefaultFollowInterval
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leasing = &l
	e.live.shared = make(map[string]bool, len(l.Projections))
	for _, name := range l.Projections {
		e.leaseStatus[name] = &LeaseStatus{}
	}
	return nil
}

// leased reports whether the named projection runs under a lease.
func (e *Engine) leased(name string) bool {
	return e.leasing != nil && slices.Contains(e.leasing.Projections, name)
}

// runLeased applies p while this node holds its lease, and waits for the
// lease (following the shared checkpoint) while it does not, until ctx
// ends.
func (e *Engine) runLeased(ctx context.Context, f *logFollower, p Projection) error {
	name := p.Name()
	for {
		lease, err := e.awaitLease(ctx, p)
		if err != nil {
			return err
		}
		// The previous holder's last batches are in the shared store, not
		// yet in this node's memory.
		if err := e.followOnce(ctx, p); err != nil && ctx.Err() == nil {
			e.logger.Warn("leased projection: reading the shared state at takeover", "projection", name, "error", err)
		}
		e.setHolder(name, e.leasing.Node)
		e.logger.Info("projection lease acquired; this node applies it", "projection", name, "node", e.leasing.Node)
		held, stop := context.WithCancel(ctx)
		go func() {
			select {
			case <-lease.Lost():
				stop()
			case <-held.Done():
			}
		}()
		rebuilds := make(chan struct{})
		go func() { defer close(rebuilds); e.runRequestedRebuilds(held, p.Name()) }()
		err = e.run(held, f, []Projection{p})
		stop()
		<-rebuilds
		releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if rerr := lease.Release(releaseCtx); rerr != nil {
			e.logger.Warn("projection lease: release", "projection", name, "error", rerr)
		}
		cancel()
		e.setHolder(name, "")
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			e.logger.Error("leased projection stopped; giving its lease up", "projection", name, "error", err)
			if !pause.For(ctx, e.retryDelay) {
				return ctx.Err()
			}
			continue
		}
		e.logger.Warn("projection lease lost; this node stopped applying it and waits to take it back", "projection", name)
	}
}

// awaitLease acquires p's lease, following the shared checkpoint until it
// is granted; a failing lease service is retried. It returns once the
// following has stopped, so nothing but the holder's batches changes the
// projection's memory after.
func (e *Engine) awaitLease(ctx context.Context, p Projection) (domain.Lease, error) {
	followCtx, stop := context.WithCancel(ctx)
	followed := make(chan struct{})
	defer func() { stop(); <-followed }()
	go func() { defer close(followed); e.follow(followCtx, p) }()
	for {
		lease, err := e.leasing.Leases.Acquire(ctx, p.Name())
		if err == nil {
			return lease, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e.logger.Warn("projection lease: acquire failed; retrying", "projection", p.Name(), "error", err)
		if !pause.For(ctx, e.retryDelay) {
			return nil, ctx.Err()
		}
	}
}

// follow moves this node's view of p to the checkpoint in the shared
// store, and refreshes who holds its lease, at each announced change and
// at the safety net's period, until ctx ends.
func (e *Engine) follow(ctx context.Context, p Projection) {
	var asked time.Time
	for {
		changed, leaseChanged := e.announced(p.Name()), e.announced(domain.LeaseChange(p.Name()))
		if err := e.followOnce(ctx, p); err != nil && ctx.Err() == nil {
			e.logger.Warn("leased projection: reading the shared checkpoint", "projection", p.Name(), "error", err)
		}
		if time.Since(asked) >= holderRefresh {
			asked = time.Now()
			if holder, err := e.leasing.Leases.Holder(ctx, p.Name()); err == nil {
				e.setHolder(p.Name(), holder)
			}
		}
		interval := e.leasing.Follow
		if e.waiters.Load() > 0 {
			interval = waitedFollowInterval
		}
		e.mu.Lock()
		nudge := e.nudge
		e.mu.Unlock()
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-changed:
		case <-leaseChanged:
		case <-nudge:
		case <-timer.C:
		}
		timer.Stop()
		select {
		case <-leaseChanged: // (also when both were announced at once)
			asked = time.Time{}
		default:
		}
	}
}

// announced returns a channel closed at the next announced change of key
// (a projection's name or domain.LeaseChange); take it before reading the shared
// state, so a change committed after the read is not missed.
func (e *Engine) announced(key string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := e.announcements[key]
	if ch == nil {
		ch = make(chan struct{})
		e.announcements[key] = ch
	}
	return ch
}

// announce wakes whoever waits on key's announcements; "" wakes all
// (Changes says so when it starts listening, since it may have missed
// some).
func (e *Engine) announce(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, ch := range e.announcements {
		if key == "" || k == key {
			close(ch)
			delete(e.announcements, k)
		}
	}
}

// listen feeds the announcements of Changes until ctx ends, listening
// again after a failure; meanwhile the followers' safety net polls.
func (e *Engine) listen(ctx context.Context) {
	for {
		err := e.leasing.Changes.Listen(ctx, e.announce)
		if ctx.Err() != nil {
			return
		}
		e.logger.Warn("leased projections: listening for changes failed; polling until it listens again", "error", err)
		if !pause.For(ctx, e.retryDelay) {
			return
		}
	}
}

func (e *Engine) setHolder(name, holder string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.leaseStatus[name]; st != nil {
		st.Holder, st.HeldHere = holder, holder != "" && holder == e.leasing.Node
	}
}
