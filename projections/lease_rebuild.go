package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/internal/pause"
)

// A live rebuild of a leased projection: any node records the request in
// the shared store (Leasing.Rebuilds); the node holding the projection's
// lease runs it as a local live rebuild (rebuildHere: reset, replay,
// resume) after recording it as running, which every follower reads with
// the checkpoint and so leaves the projection out of its visibility waits
// and reports it rebuilding, as the holder does. A holder that loses its
// lease part-way leaves the record running; the next holder starts it
// again from the reset, so a half-built projection is never taken for a
// whole one, and the resumed live handler replays any gap, so no event is
// skipped. A request while one is open is refused (ErrRebuilding), naming
// it.

// rebuildRecheck is how often the requesting node reads the rebuild
// record although nothing was announced (the safety net); the holder
// looks for requests at the followers' safety-net period
// (Leasing.Follow), since it costs every idle holder queries.
const rebuildRecheck = time.Second

// rebuildLeased records a rebuild of the leased projection name and waits
// until the lease holder has run it, returning the events it replayed.
// When ctx ends first the rebuild goes on; only the wait stops.
func (e *Engine) rebuildLeased(ctx context.Context, name string) (uint64, error) {
	requested, opened, err := e.leasing.Rebuilds.Request(ctx, name, e.leasing.Node)
	if err != nil {
		return 0, fmt.Errorf("projections: %s: %w", name, err)
	}
	if !opened {
		return 0, fmt.Errorf("projections: %s: %w (requested by %s, %s)", name, ErrRebuilding, requested.RequestedBy, describeOpen(requested))
	}
	e.logger.Info("live rebuild of a leased projection requested; its lease holder runs it", "projection", name, "rebuild", requested.ID)
	for {
		changed := e.announced(name)
		current, err := e.leasing.Rebuilds.Get(ctx, name)
		if err != nil && ctx.Err() == nil {
			e.logger.Warn("live rebuild: reading its record", "projection", name, "error", err)
		}
		if err == nil && current.ID != requested.ID {
			return 0, fmt.Errorf("projections: %s: rebuild %s vanished from the shared store (now %s)", name, requested.ID, current.ID)
		}
		if !current.State.Open() && current.ID == requested.ID {
			// This node answers now: its own view must agree at once,
			// not when its follower reads the record again.
			e.setSharedRebuild(name, false)
		}
		switch current.State {
		case domain.RebuildDone:
			return current.Events, nil
		case domain.RebuildFailed:
			return 0, fmt.Errorf("projections: %s: the live rebuild on %s failed: %s", name, current.Node, current.Error)
		}
		if !e.waitAnnounced(ctx, changed, rebuildRecheck) {
			return 0, fmt.Errorf("projections: %s: waiting for the live rebuild %s (it goes on): %w", name, requested.ID, ctx.Err())
		}
	}
}

func describeOpen(r domain.ProjectionRebuild) string {
	if r.State == domain.RebuildRunning {
		return "running on " + r.Node
	}
	return "waiting for the lease holder"
}

// runRequestedRebuilds runs the rebuilds of the leased projection name
// that are requested, or were left running by a holder that lost the
// lease, while this node holds its lease (until ctx ends).
func (e *Engine) runRequestedRebuilds(ctx context.Context, name string) {
	for {
		changed := e.announced(name)
		rebuild, err := e.leasing.Rebuilds.Get(ctx, name)
		switch {
		case err != nil && ctx.Err() == nil:
			e.logger.Warn("live rebuild: reading the requests", "projection", name, "error", err)
		case err == nil && rebuild.State.Open():
			if e.runRequestedRebuild(ctx, name, rebuild) {
				continue
			}
		}
		if !e.waitAnnounced(ctx, changed, e.leasing.Follow) {
			return
		}
	}
}

// runRequestedRebuild runs one recorded rebuild here and records its
// outcome; it reports whether it did (not when ctx ended: the lease is
// lost or the node stops, and the next holder starts it again).
func (e *Engine) runRequestedRebuild(ctx context.Context, name string, rebuild domain.ProjectionRebuild) bool {
	node := e.leasing.Node
	if err := e.leasing.Rebuilds.Start(ctx, name, rebuild.ID, node); err != nil {
		if ctx.Err() == nil {
			e.logger.Warn("live rebuild: recording its start", "projection", name, "error", err)
			pause.For(ctx, e.retryDelay)
		}
		return false
	}
	if rebuild.State == domain.RebuildRunning {
		e.logger.Warn("live rebuild left part-way by the previous lease holder; starting it again", "projection", name, "previous", rebuild.Node)
	}
	e.logger.Info("live rebuild of a leased projection started here", "projection", name, "rebuild", rebuild.ID, "requested_by", rebuild.RequestedBy)
	start := time.Now()
	events, err := e.rebuildHere(ctx, name)
	if ctx.Err() != nil {
		return false
	}
	failure := ""
	if err != nil {
		failure = err.Error()
		e.logger.Error("live rebuild failed", "projection", name, "error", err)
	}
	if err := e.leasing.Rebuilds.Finish(ctx, name, rebuild.ID, node, events, failure); err != nil {
		// Still running in the record: the next look starts it again.
		e.logger.Warn("live rebuild: recording its end", "projection", name, "error", err)
		pause.For(ctx, e.retryDelay)
		return false
	}
	e.setSharedRebuild(name, false)
	e.logger.Info("live rebuild of a leased projection done", "projection", name, "events", events, "seconds", time.Since(start).Seconds())
	return true
}

// waitAnnounced waits for changed, or at most d; it reports false when
// ctx ended.
func (e *Engine) waitAnnounced(ctx context.Context, changed <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	case <-t.C:
	}
	return true
}
