package app

import (
	"context"
)

// RebuildOffline rebuilds the named projections (all when none) in a
// process that serves nothing (`engram projections rebuild`, engram-bench
// replay; projections.Engine.RebuildOffline). With the embedded read
// models, the indexes only queries use are dropped for the replay and
// built once at its end (sqlite.DB.DeferIndexes); a rebuild cut part-way
// leaves them to the next open.
func (s *Core) RebuildOffline(ctx context.Context, names ...string) error {
	if !s.sqliteReadModels {
		return s.Engine.RebuildOffline(ctx, names...)
	}
	if err := s.Engine.CheckNames(names...); err != nil {
		return err
	}
	if len(names) == 0 {
		names = s.Engine.Names()
	}
	if err := s.DB.DeferIndexes(ctx, names); err != nil {
		return err
	}
	if err := s.Engine.RebuildOffline(ctx, names...); err != nil {
		return err
	}
	return s.DB.RestoreIndexes(ctx)
}
