package sqlite

import (
	"context"
	"database/sql"

	"github.com/engram-memory/engram/domain"
)

var _ domain.UnitOfWork = (*DB)(nil)

// unitKey keys the open unit of work in a context.
type unitKey struct{}

// unit is an open unit of work: one write transaction of one database,
// with its statements prepared once for every store that joins it.
type unit struct {
	db    *DB
	batch *batchTx
}

// InUnitOfWork implements domain.UnitOfWork: every write transaction this
// database's stores (read models, keyword and vector state, checkpoints)
// open under fn's context joins one transaction, committed when fn returns
// nil. A rebuild applies a chunk of the log to all its read models this
// way: one commit and one set of prepared statements per chunk instead of
// one per read model.
func (db *DB) InUnitOfWork(ctx context.Context, fn func(ctx context.Context) error) error {
	if u, ok := ctx.Value(unitKey{}).(*unit); ok && u.db == db {
		return fn(ctx) // already inside one: join it
	}
	return db.WriteTx(ctx, func(tx *sql.Tx) error {
		u := &unit{db: db, batch: db.newBatch(ctx, tx)}
		return fn(context.WithValue(ctx, unitKey{}, u))
	})
}

// joinUnit runs fn in ctx's unit of work of db when there is one (ok), so
// the caller neither begins nor commits.
func (db *DB) joinUnit(ctx context.Context, fn func(*sql.Tx) error) (ok bool, err error) {
	u, found := ctx.Value(unitKey{}).(*unit)
	if !found || u.db != db {
		return false, nil
	}
	return true, fn(u.batch.tx)
}

// batchFor is the statements of tx: the unit's, shared by every store in
// it, when tx is ctx's unit of work, otherwise a set for this batch alone.
func (db *DB) batchFor(ctx context.Context, tx *sql.Tx) *batchTx {
	if u, ok := ctx.Value(unitKey{}).(*unit); ok && u.db == db && u.batch.tx == tx {
		return u.batch
	}
	return db.newBatch(ctx, tx)
}
