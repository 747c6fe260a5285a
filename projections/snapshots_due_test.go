package projections

import (
	"context"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/snapshot"
)

// An image is due every 10,000 events until the log the last image covers
// passes 400,000 events, then every 40th of that log: an image costs in
// proportion to the index, so its cost per event stays bounded, and a
// start after a crash re-reads at most a 40th of the log. Events caught up
// with at start count as applied ones, and both bounds can be set.
func TestSnapshotDueFollowsTheLogTheLastImageCovers(t *testing.T) {
	cases := []struct {
		name              string
		every, divisor    uint64
		imaged            uint64 // the last image's checkpoint
		applied, caughtUp uint64 // events since it
		due               bool
	}{
		{name: "a small log: 9,999 events are not enough", imaged: 50_000, applied: 9_999},
		{name: "a small log: every 10,000 events", imaged: 50_000, applied: 10_000, due: true},
		{name: "at 400,000 events a 40th is still 10,000", imaged: 400_000, applied: 10_000, due: true},
		{name: "at 1M events, 10,000 are not enough", imaged: 1_000_000, applied: 10_000},
		{name: "at 1M events, 24,999 are not enough", imaged: 1_000_000, applied: 24_999},
		{name: "at 1M events, every 25,000", imaged: 1_000_000, applied: 25_000, due: true},
		{name: "at 2M events (1M memories), 49,999 are not enough", imaged: 2_000_000, applied: 49_999},
		{name: "at 2M events (1M memories), every 50,000", imaged: 2_000_000, applied: 50_000, due: true},
		{name: "the tail caught up at start counts", imaged: 2_000_000, applied: 20_000, caughtUp: 30_000, due: true},
		{name: "the tail caught up at start alone counts", imaged: 2_000_000, caughtUp: 50_000, due: true},
		{name: "a smaller floor", every: 500, imaged: 5_000, applied: 500, due: true},
		{name: "a smaller floor still grows with the log", every: 500, imaged: 1_000_000, applied: 500},
		{name: "a smaller divisor grows faster", divisor: 10, imaged: 1_000_000, applied: 99_999},
		{name: "a smaller divisor, reached", divisor: 10, imaged: 1_000_000, applied: 100_000, due: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &snapshotState{
				cfg: Snapshots{Files: snapshot.Dir{Path: t.TempDir()}, Every: c.every, Divisor: c.divisor},
				read: func(context.Context, uint64, uint64, int, *domain.EventRegistry, func([]domain.Event) error) error {
					return nil
				},
			}
			s.imaged.Store(c.imaged)
			s.applied(int(c.applied))
			s.caughtUp.Store(c.caughtUp)
			if got := s.due(false); got != c.due {
				t.Errorf("due = %v, want %v (interval %d)", got, c.due, s.interval())
			}
		})
	}
}
