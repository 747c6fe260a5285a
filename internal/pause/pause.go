// Package pause waits out a delay unless a context ends first: the retry
// and polling loops of the projections and of the background workers
// share it, so it sits below both in the layers.
package pause

import (
	"context"
	"time"
)

// For waits d and reports true, or returns false as soon as ctx ends: a
// loop that paces its retries stops at once when it is told to.
func For(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
