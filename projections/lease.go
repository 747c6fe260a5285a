package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Leasing makes projections whose store several nodes share run on one
// node at a time. A leased projection is applied only by the node holding
// its lease; the other nodes wait for the lease and meanwhile follow the
// checkpoint kept in the shared store, so their WaitFor (read-your-writes,
// the consistency token) answers when the holder has applied a position.
// When the holder dies, a waiting node acquires the lease and resumes at
// the shared checkpoint; the store's Apply skips what is at or below it,
// so no event is skipped or applied twice.
type Leasing struct {
	Leases domain.ProjectionLeases
	// Node is this node's name, as Leases names holders.
	Node string
	// Projections are the leased projections' names.
	Projections []string
	// Follow is how often a node without a lease reads the shared
	// checkpoint while nothing waits on it (0: DefaultFollowInterval): it
	// bounds how stale Status and a read without a consistency token may
	// be there. A WaitFor wakes the followers at once and has them read
	// every waitedFollowInterval while it waits.
	Follow time.Duration
}

// DefaultFollowInterval is Leasing.Follow's default.
const DefaultFollowInterval = 500 * time.Millisecond

// waitedFollowInterval is how often a node without a lease reads the
// shared checkpoint while a WaitFor waits on it: a write answers a few
// milliseconds after the holder applied it, and an idle node polls at the
// slower Follow interval.
const waitedFollowInterval = 5 * time.Millisecond

// holderRefresh is how often a waiting node asks who holds the lease, for
// Status.
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

// followOnce brings this node's view of p up to the shared store once.
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
	e.advance(p.Name(), pos)
	return nil
}

// UseLeases makes the projections l names leased; call it before Run.
func (e *Engine) UseLeases(l Leasing) error {
	if l.Leases == nil || l.Node == "" {
		return errors.New("projections: leasing needs the leases and this node's name")
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
func (e *Engine) runLeased(ctx context.Context, p Projection) error {
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
		err = e.run(held, []Projection{p})
		stop()
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
			if !sleep(ctx, e.retryDelay) {
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
		if !sleep(ctx, e.retryDelay) {
			return nil, ctx.Err()
		}
	}
}

// follow moves this node's view of p to the checkpoint in the shared
// store, and refreshes who holds its lease, until ctx ends.
func (e *Engine) follow(ctx context.Context, p Projection) {
	var asked time.Time
	for {
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
		case <-nudge:
			timer.Stop()
		case <-timer.C:
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

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
