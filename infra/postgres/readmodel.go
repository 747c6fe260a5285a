package postgres

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/engram-memory/engram/domain"
)

// tableModel is the plumbing every PostgreSQL read model store shares: its
// checkpoint key (a row of projection_checkpoints) and its tables, which
// Reset empties and Export writes in the order given.
type tableModel struct {
	db     *DB
	name   string
	tables []string
}

// Checkpoint implements domain.ReadModelStore.
func (m tableModel) Checkpoint(ctx context.Context) (uint64, error) {
	var pos int64
	err := m.db.Pool.QueryRow(ctx, `SELECT position FROM projection_checkpoints WHERE name = $1`, m.name).Scan(&pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: checkpoint %s: %w", m.name, err)
	}
	return uint64(pos), nil
}

// Reset implements domain.ReadModelStore: the tables are emptied and the
// checkpoint forgotten in one transaction. TRUNCATE, not DELETE: a DELETE
// leaves every row behind as a dead version until vacuum, which the
// rebuild that follows then steps over in every index lookup. TRUNCATE
// locks the tables until the commit: during a live rebuild readers wait
// for this short transaction, not for the rebuild.
func (m tableModel) Reset(ctx context.Context) error {
	return pgx.BeginFunc(ctx, m.db.Pool, func(tx pgx.Tx) error {
		// A batch a node is applying (one that lost its lease a moment
		// ago) holds the checkpoint row: wait for it, so its rows are
		// emptied too, not left behind a forgotten checkpoint.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM projection_checkpoints WHERE name = $1 FOR UPDATE`, m.name); err != nil {
			return fmt.Errorf("postgres: reset checkpoint %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, `TRUNCATE `+strings.Join(m.tables, ", ")); err != nil {
			return fmt.Errorf("postgres: reset %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM projection_checkpoints WHERE name = $1`, m.name); err != nil {
			return fmt.Errorf("postgres: reset checkpoint %s: %w", m.name, err)
		}
		return AnnounceChange(ctx, tx, m.name)
	})
}

// Export writes the read model as JSON lines {"table":…,"row":{…}}, rows
// in primary-key order and columns in name order (encoding/json sorts map
// keys), times in UTC at a fixed width, all tables from one snapshot: equal
// states give equal bytes, which the replay tests compare. The format is
// the SQLite stores' (infra/sqlite/export_tables.go); the values are each
// backend's own (booleans, numbers as stored), so an export compares equal
// to another export of the same backend, not across backends.
func (m tableModel) Export(ctx context.Context, w io.Writer) error {
	tx, err := m.db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("postgres: export %s: %w", m.name, err)
	}
	defer tx.Rollback(ctx)
	bw := bufio.NewWriter(w)
	for _, t := range m.tables {
		if err := exportTable(ctx, tx, bw, t); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// exportTime is how Export writes a time: the SQLite stores' layout.
const exportTime = "2006-01-02T15:04:05.000000000Z"

func exportTable(ctx context.Context, tx pgx.Tx, w *bufio.Writer, table string) error {
	var key []string
	err := tx.QueryRow(ctx, `SELECT array_agg(a.attname::text ORDER BY array_position(i.indkey::int2[], a.attnum))
		FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1::regclass AND i.indisprimary`, table).Scan(&key)
	if err != nil {
		return fmt.Errorf("postgres: export %s: primary key: %w", table, err)
	}
	rows, err := tx.Query(ctx, `SELECT * FROM `+table+` ORDER BY `+strings.Join(key, ", "))
	if err != nil {
		return fmt.Errorf("postgres: export %s: %w", table, err)
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	for rows.Next() {
		values, err := rows.Values()
		if err != nil {
			return fmt.Errorf("postgres: export %s: %w", table, err)
		}
		row := make(map[string]any, len(fields))
		for i, f := range fields {
			switch v := values[i].(type) {
			case time.Time:
				values[i] = v.UTC().Format(exportTime)
			case []byte:
				values[i] = string(v)
			}
			row[f.Name] = values[i]
		}
		line, err := json.Marshal(struct {
			Table string         `json:"table"`
			Row   map[string]any `json:"row"`
		}{table, row})
		if err != nil {
			return fmt.Errorf("postgres: export %s: %w", table, err)
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: export %s: %w", table, err)
	}
	return nil
}

// applyBatch is domain.ReadModelStore.Apply for the read model whose
// checkpoint is name: the events after the checkpoint are applied through
// one transaction, wrapped by newTx as the read model's write port, and
// the checkpoint advances in the same transaction.
//
// The checkpoint row is locked (FOR UPDATE) before anything is read, so
// two nodes delivering the same batch apply it once: the second waits for
// the first to commit, then sees the new checkpoint and skips the events.
// Statements are prepared once per connection: pgx's default query mode
// caches a prepared statement for each SQL text, so a batch of a thousand
// events parses each of its statements once. The writes that return
// nothing are pipelined (batchTx): they go to the server together, before
// the next read and at the end, so an error of one of them may be reported
// at a later event of the batch; the transaction fails whole either way.
func applyBatch[Tx any](ctx context.Context, db *DB, name string, events []domain.Event,
	newTx func(batchTx) Tx, apply func(context.Context, Tx, domain.Event) error) error {
	return applyBatchThen(ctx, db, name, events, newTx, apply, nil)
}

// applyBatchThen is applyBatch with beforeCommit (when not nil) called
// after the last event and before the commit: the index projections'
// writes to their remote index, made while the checkpoint row is locked,
// so two nodes never write the index for one batch at once.
func applyBatchThen[Tx any](ctx context.Context, db *DB, name string, events []domain.Event,
	newTx func(batchTx) Tx, apply func(context.Context, Tx, domain.Event) error, beforeCommit func(context.Context) error) error {
	if len(events) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO projection_checkpoints (name, position) VALUES ($1, 0) ON CONFLICT (name) DO NOTHING`, name); err != nil {
			return fmt.Errorf("postgres: checkpoint %s: %w", name, err)
		}
		var done int64
		if err := tx.QueryRow(ctx, `SELECT position FROM projection_checkpoints WHERE name = $1 FOR UPDATE`, name).Scan(&done); err != nil {
			return fmt.Errorf("postgres: checkpoint %s: %w", name, err)
		}
		b := batchTx{tx: tx, pending: &pgx.Batch{}}
		port := newTx(b)
		last := uint64(done)
		for _, e := range events {
			if e.Position <= uint64(done) {
				continue
			}
			if err := apply(ctx, port, e); err != nil {
				return fmt.Errorf("%s: apply %s at %d: %w", name, e.Type, e.Position, err)
			}
			last = e.Position
		}
		if ender, ok := any(port).(batchEnder); ok {
			if err := ender.endBatch(ctx); err != nil {
				return fmt.Errorf("%s: apply the batch up to %d: %w", name, last, err)
			}
		}
		if err := b.flush(ctx); err != nil {
			return fmt.Errorf("%s: apply the batch up to %d: %w", name, last, err)
		}
		if last == uint64(done) {
			return nil
		}
		if beforeCommit != nil {
			if err := beforeCommit(ctx); err != nil {
				return fmt.Errorf("%s: index writes up to %d: %w", name, last, err)
			}
		}
		// The followers are told in the same round trip, at the commit.
		if _, err := tx.Exec(ctx, `WITH saved AS (UPDATE projection_checkpoints SET position = $2 WHERE name = $1 RETURNING name)
			SELECT pg_notify($3, name) FROM saved`, name, int64(last), changesChannel); err != nil {
			return fmt.Errorf("postgres: save checkpoint %s: %w", name, err)
		}
		return nil
	})
}

// batchEnder is a write port that collects writes of its own (rows for a
// multi-row statement) and queues them when the batch's events are
// applied, before the batch's last flush.
type batchEnder interface {
	endBatch(ctx context.Context) error
}

// batchTx is the transaction of one batch, which every read model's
// write port wraps. Writes that return nothing (run) are queued and sent
// together, one round trip for many; whatever reads (exec, queryRow)
// sends the queue first, so it sees every earlier write.
type batchTx struct {
	tx      pgx.Tx
	pending *pgx.Batch // shared by the copies of the value
}

// maxPending bounds the writes queued before they are sent.
const maxPending = 512

// run queues query, which is run for its effect alone.
func (b batchTx) run(ctx context.Context, query string, args ...any) error {
	b.pending.Queue(query, args...)
	if b.pending.Len() >= maxPending {
		return b.flush(ctx)
	}
	return nil
}

// flush sends the queued writes and reports the first that failed.
func (b batchTx) flush(ctx context.Context) error {
	if b.pending.Len() == 0 {
		return nil
	}
	err := b.tx.SendBatch(ctx, b.pending).Close()
	b.pending.QueuedQueries = nil
	return err
}

// runCounted queues query like run; counted receives the number of rows
// it changed when the queue is sent.
func (b batchTx) runCounted(ctx context.Context, counted func(rows int64), query string, args ...any) error {
	b.pending.Queue(query, args...).Exec(func(tag pgconn.CommandTag) error {
		counted(tag.RowsAffected())
		return nil
	})
	if b.pending.Len() >= maxPending {
		return b.flush(ctx)
	}
	return nil
}

// exec runs query after the queued writes, in the same round trip, and
// returns the number of rows it changed.
func (b batchTx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	var rows int64
	if err := b.runCounted(ctx, func(n int64) { rows = n }, query, args...); err != nil {
		return 0, err
	}
	return rows, b.flush(ctx)
}

// queryRow runs query for one row.
func (b batchTx) queryRow(ctx context.Context, query string, args ...any) pgx.Row {
	if err := b.flush(ctx); err != nil {
		return failedRow{err}
	}
	return b.tx.QueryRow(ctx, query, args...)
}

// query runs query for its rows, after the queued writes.
func (b batchTx) query(ctx context.Context, query string, args ...any) (pgx.Rows, error) {
	if err := b.flush(ctx); err != nil {
		return nil, err
	}
	return b.tx.Query(ctx, query, args...)
}

// failedRow is a row whose query could not run.
type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }

// timeOrZero reads a nullable TIMESTAMPTZ back: NULL is the zero time,
// anything else is returned in UTC like the SQLite stores return it.
func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// utcOrNil is a nullable time in UTC.
func utcOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
