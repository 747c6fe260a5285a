package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math/bits"
	"strings"

	"github.com/engram-memory/engram/domain"
)

// applyBatch is domain.ReadModelStore.Apply for a read model (and the
// index projections' Apply of their state) whose checkpoint is name: the
// events after the checkpoint are applied through one transaction,
// wrapped by newTx as the write port, and the checkpoint advances in the
// same transaction. A write port that holds writes back (batchEnder)
// writes them after the last event, then beforeCommit (nil: none) runs,
// as in DB.ApplyEvents.
func applyBatch[Tx any](ctx context.Context, db *DB, name string, events []domain.Event,
	newTx func(*batchTx) Tx, apply func(context.Context, Tx, domain.Event) error, beforeCommit func(context.Context) error) error {
	var b *batchTx
	var tx Tx
	return db.ApplyEvents(ctx, name, events, func(sqlTx *sql.Tx, e domain.Event) error {
		if b == nil || b.tx != sqlTx { // a retried transaction starts afresh
			b = db.batchFor(ctx, sqlTx)
			tx = newTx(b)
		}
		return apply(ctx, tx, e)
	}, func(ctx context.Context) error {
		if ender, ok := any(tx).(batchEnder); ok {
			if err := ender.endBatch(); err != nil {
				return err
			}
		}
		if beforeCommit != nil {
			return beforeCommit(ctx)
		}
		return nil
	})
}

// batchEnder is a write port that holds writes of the batch back and
// writes them when the batch's events are applied, before the checkpoint
// advances in the same transaction: the memories store writes each new
// row once, the audit store and the vector state's vectors many rows per
// statement.
type batchEnder interface {
	endBatch() error
}

// batchTx is the transaction of one batch of events with its statements,
// each prepared once by the writer (writerStmts), not per event nor per
// batch: a batch write of 1000 memories is 2000 events, and parsing SQL
// for each was most of the apply time. Every SQLite read model's write
// port and the log's appends use it.
type batchTx struct {
	ctx    context.Context
	tx     *sql.Tx
	writer *writerStmts
	stmts  map[string]*sql.Stmt // closed with the transaction
}

// newBatch returns the statements of tx, a transaction of db's writer,
// taken from the statements the writer keeps prepared.
func (db *DB) newBatch(ctx context.Context, tx *sql.Tx) *batchTx {
	return &batchTx{ctx: ctx, tx: tx, writer: db.writer, stmts: map[string]*sql.Stmt{}}
}

func (a *batchTx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := a.stmts[query]; ok {
		return st, nil
	}
	st, err := a.writer.inTx(a.ctx, a.tx, query)
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

// queryRow runs a query that returns at most one row; a statement that
// cannot be prepared fails at Scan.
func (a *batchTx) queryRow(query string, args ...any) rowScanner {
	st, err := a.stmt(query)
	if err != nil {
		return failedRow{err}
	}
	return st.QueryRowContext(a.ctx, args...)
}

type rowScanner interface{ Scan(dest ...any) error }

type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }

// maxInsertRows bounds the rows of one multi-row INSERT (rowInserts): a
// statement's fixed costs are spread thin well before it, and its bound
// parameters stay far below SQLite's limit (32,766).
const maxInsertRows = 256

// rowInserts are one table's multi-row INSERT statement texts, one per
// power of two rows up to maxInsertRows. Rows go in by as many full
// statements of the largest size as fit, then at most one of each smaller
// size, so a table has few distinct statements, each prepared once per
// transaction (batchTx), however many rows a batch has.
type rowInserts struct {
	columns int
	texts   []string // texts[i] inserts 1<<i rows
}

// newRowInserts builds the texts prefix + rows of columns placeholders + suffix.
func newRowInserts(prefix string, columns int, suffix string) rowInserts {
	row := "(" + memPlaceholders(columns) + "),"
	ins := rowInserts{columns: columns}
	for rows := 1; rows <= maxInsertRows; rows *= 2 {
		ins.texts = append(ins.texts, prefix+strings.TrimSuffix(strings.Repeat(row, rows), ",")+suffix)
	}
	return ins
}

// flush inserts the held rows, columns values a row, in order, and
// empties held for the rows held next.
func (ins rowInserts) flush(b *batchTx, held *[]any) error {
	values := *held
	for len(values) > 0 {
		i := min(bits.Len(uint(len(values)/ins.columns))-1, len(ins.texts)-1)
		n := ins.columns << i
		if err := b.run(ins.texts[i], values[:n]...); err != nil {
			return err
		}
		values = values[n:]
	}
	*held = (*held)[:0]
	return nil
}
