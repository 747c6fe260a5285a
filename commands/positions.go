package commands

import (
	"context"
	"sync/atomic"
)

// PositionTracker collects the log positions of the writes made under one
// context (one API request), so the request's response can name the
// position a reader on another node must wait for.
type PositionTracker struct {
	last atomic.Uint64
	// outer is the tracker of the enclosing context, if any: a write
	// tracked here (one MCP tool call) is tracked there too (the HTTP
	// request the call came in).
	outer *PositionTracker
}

type positionTrackerKey struct{}

// TrackPositions returns a context under which every write this package
// waits for records its position in the returned tracker, and in ctx's
// tracker too if ctx has one.
func TrackPositions(ctx context.Context) (context.Context, *PositionTracker) {
	outer, _ := ctx.Value(positionTrackerKey{}).(*PositionTracker)
	t := &PositionTracker{outer: outer}
	return context.WithValue(ctx, positionTrackerKey{}, t), t
}

// Last is the highest position written under the tracker's context, 0 when
// nothing was written.
func (t *PositionTracker) Last() uint64 { return t.last.Load() }

func (t *PositionTracker) observe(position uint64) {
	if t.outer != nil {
		t.outer.observe(position)
	}
	for {
		cur := t.last.Load()
		if position <= cur || t.last.CompareAndSwap(cur, position) {
			return
		}
	}
}

// observePosition records position in ctx's tracker, if it has one.
func observePosition(ctx context.Context, position uint64) {
	if t, ok := ctx.Value(positionTrackerKey{}).(*PositionTracker); ok {
		t.observe(position)
	}
}
