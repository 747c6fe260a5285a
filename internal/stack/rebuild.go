package stack

import (
	"context"
	"fmt"

	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

// RebuildOffline rebuilds the named projections (all when none) in a
// process that serves nothing (`engram projections rebuild`, engram-bench
// replay). With the embedded read models and indexes it is a bulk load
// (sqlite.Rebuild): the log is replayed into a fresh database file with
// no secondary indexes and no journal, the indexes are built once, and
// the result replaces the live tables in one synced transaction, so a
// crash at any moment leaves the old or the new complete state. The
// in-process indexes are left empty, for the next serve to fill from the
// rebuilt state. Other backends replay into their stores in place
// (projections.Engine.RebuildOffline).
func (s *Stack) RebuildOffline(ctx context.Context, names ...string) error {
	if !s.bulkRebuild {
		return s.Engine.RebuildOffline(ctx, names...)
	}
	if len(names) == 0 {
		names = s.Engine.Names()
	}
	rebuild, err := s.DB.StartRebuild(ctx, names)
	if err != nil {
		return err
	}
	defer rebuild.Abort()
	fresh := projections.NewEngine(s.Store, s.Logger, s.sqliteProjections(rebuild.Fresh)...)
	if err := fresh.RebuildOffline(ctx, names...); err != nil {
		return err
	}
	if err := rebuild.Commit(ctx); err != nil {
		return fmt.Errorf("projections: swap in the rebuilt %v: %w", names, err)
	}
	return s.Engine.StateReplaced(ctx, names...)
}

// sqliteProjections are the projections over the embedded read models and
// index state in db, feeding the stack's in-process indexes: those of
// Open when db is the stack's database.
func (s *Stack) sqliteProjections(db *sqlite.DB) []projections.Projection {
	return []projections.Projection{
		projections.NewAccounts(sqlite.NewAccounts(db)), projections.NewMemories(sqlite.NewMemories(db)),
		projections.NewKeyword(sqlite.NewKeywordStore(db), s.KeywordIndex, true, s.Logger),
		projections.NewVectors(sqlite.NewVectorStore(db), s.VectorIndex, true, s.Logger),
		projections.NewJobs(sqlite.NewJobs(db)), projections.NewProvenance(sqlite.NewProvenance(db)),
		projections.NewAudit(sqlite.NewAudit(db)), projections.NewSuggestions(sqlite.NewSuggestions(db)),
	}
}
