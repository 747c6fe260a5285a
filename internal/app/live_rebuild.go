package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/engram-memory/engram/projections"
)

// ErrNotLiveRebuildable: the commands decide on this read model's state
// (an append's expected version, a credential, a job's lease), so it
// cannot be emptied while the server takes writes.
var ErrNotLiveRebuildable = errors.New("not rebuildable while the server takes writes")

// commandReadModels are the projections the commands read to decide a
// write; the others only answer reads and searches.
var commandReadModels = []string{projections.AccountsProjectionName, projections.MemoriesProjectionName, projections.JobsProjectionName}

// LiveRebuild rebuilds the named projection while the running engine
// serves the others (projections.Engine.RebuildLive; a leased one on the
// node holding its lease) and returns the events replayed. The read models the commands decide on are refused
// with ErrNotLiveRebuildable: an offline `engram projections rebuild`
// rebuilds them.
func (s *Core) LiveRebuild(ctx context.Context, name string) (uint64, error) {
	if slices.Contains(commandReadModels, name) {
		return 0, fmt.Errorf("projection %s: %w (the commands decide writes on it): stop the server and run `engram projections rebuild %s`", name, ErrNotLiveRebuildable, name)
	}
	return s.Engine.RebuildLive(ctx, name)
}
