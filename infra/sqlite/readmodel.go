package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/engram-memory/engram/domain"
)

// applyBatch is domain.ReadModelStore.Apply for a read model whose
// checkpoint is name: the events after the checkpoint are applied through
// one transaction, wrapped by newTx as the read model's write port, and
// the checkpoint advances in the same transaction.
func applyBatch[Tx any](ctx context.Context, db *DB, name string, events []domain.Event,
	newTx func(*batchTx) Tx, apply func(context.Context, Tx, domain.Event) error) error {
	batchOf := batchTxs(ctx)
	var b *batchTx
	var tx Tx
	return db.ApplyEvents(ctx, name, events, func(sqlTx *sql.Tx, e domain.Event) error {
		if next := batchOf(sqlTx); next != b {
			b, tx = next, newTx(next)
		}
		return apply(ctx, tx, e)
	}, nil)
}

// batchTxs returns the batchTx of a batch's transaction: the same one for
// every event of the batch, and a fresh one when a retry runs the batch in
// a new transaction.
func batchTxs(ctx context.Context) func(*sql.Tx) *batchTx {
	var b *batchTx
	return func(tx *sql.Tx) *batchTx {
		if b == nil || b.tx != tx {
			b = newBatchTx(ctx, tx)
		}
		return b
	}
}

// batchTx is the transaction of one batch of events with its statements,
// each prepared once per batch: a batch write of 1000 memories is 2000
// events, and parsing SQL for each was most of the apply time. Every
// SQLite read model's write port uses it.
type batchTx struct {
	ctx   context.Context
	tx    *sql.Tx
	stmts map[string]*sql.Stmt // closed with the transaction
}

func newBatchTx(ctx context.Context, tx *sql.Tx) *batchTx {
	return &batchTx{ctx: ctx, tx: tx, stmts: map[string]*sql.Stmt{}}
}

func (a *batchTx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := a.stmts[query]; ok {
		return st, nil
	}
	st, err := a.tx.PrepareContext(a.ctx, query)
	if err != nil {
		return nil, err
	}
	a.stmts[query] = st
	return st, nil
}

// exec runs query and returns the number of rows it changed.
func (a *batchTx) exec(query string, args ...any) (int64, error) {
	st, err := a.stmt(query)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(a.ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// run runs query for its effect alone.
func (a *batchTx) run(query string, args ...any) error {
	st, err := a.stmt(query)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(a.ctx, args...)
	return err
}

// ExecContext, QueryContext and QueryRowContext are *sql.Tx's methods
// over the batch's prepared statements, for the index stores (vectors.go,
// keyword.go), whose ports are written against *sql.Tx: parsing their SQL
// for every event was 6% of ingest's CPU.
func (a *batchTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := a.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (a *batchTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := a.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext reports a failed prepare through the row, as *sql.Tx
// does: the tx's own QueryRowContext runs the query again and fails the
// same way.
func (a *batchTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := a.stmt(query)
	if err != nil {
		return a.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// exists runs a SELECT 1 query and reports whether it found a row.
func (a *batchTx) exists(query string, args ...any) (bool, error) {
	st, err := a.stmt(query)
	if err != nil {
		return false, err
	}
	var one int
	err = st.QueryRowContext(a.ctx, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
