// Package eventlog holds what every event store adapter shares beyond the
// port itself.
package eventlog

import (
	"context"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
)

// FollowBatch bounds how many events one handler call receives. A batch
// write of memory.MaxBatch memories with their vectors is ~2,000 events;
// a projection applies each call in one transaction (a statement
// preparation, a checkpoint update and a commit each), so one call takes
// two such writes whole instead of cutting each into three.
const FollowBatch = 4096

// Follow implements domain.EventStore.SubscribeAll over an adapter's
// ReadAll: it hands handle every page after position after, and once caught
// up waits for the channel wake returns (the adapter's append signal) or
// for poll, whichever comes first. wake is called before each read, so an
// append that lands after the read still wakes the wait. It returns
// ctx.Err() or handle's error.
func Follow(ctx context.Context, after uint64, poll time.Duration,
	read func(ctx context.Context, after uint64, limit int) ([]domain.Event, error),
	wake func() <-chan struct{},
	handle func(context.Context, []domain.Event) error,
) error {
	for {
		woken := wake()
		events, err := read(ctx, after, FollowBatch)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if len(events) > 0 {
			if err := handle(ctx, events); err != nil {
				return err
			}
			after = events[len(events)-1].Position
			if len(events) == FollowBatch {
				continue
			}
		}
		timer := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-woken:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// ReadRange implements domain.EventStore.ReadRange over an adapter's
// ReadAll: it hands handle the pages after position after, cut at until,
// and fails with domain.ErrLogEndsBefore when a page comes back empty
// before until.
func ReadRange(ctx context.Context, after, until uint64,
	read func(ctx context.Context, after uint64, limit int) ([]domain.Event, error),
	handle func(context.Context, []domain.Event) error,
) error {
	for after < until {
		events, err := read(ctx, after, FollowBatch)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			return fmt.Errorf("read up to position %d: no event after %d: %w", until, after, domain.ErrLogEndsBefore)
		}
		n := len(events)
		for n > 0 && events[n-1].Position > until {
			n--
		}
		if n > 0 {
			if err := handle(ctx, events[:n]); err != nil {
				return err
			}
		}
		if n < len(events) {
			return nil
		}
		after = events[n-1].Position
	}
	return nil
}
