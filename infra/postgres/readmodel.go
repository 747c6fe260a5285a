package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
)

// tableModel is the plumbing every PostgreSQL read model store shares: its
// checkpoint key (a row of projection_checkpoints) and its tables, which
// Reset empties.
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
// checkpoint forgotten in one transaction.
func (m tableModel) Reset(ctx context.Context) error {
	return pgx.BeginFunc(ctx, m.db.Pool, func(tx pgx.Tx) error {
		for _, t := range m.tables {
			if _, err := tx.Exec(ctx, `DELETE FROM `+t); err != nil {
				return fmt.Errorf("postgres: reset %s: %w", t, err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM projection_checkpoints WHERE name = $1`, m.name); err != nil {
			return fmt.Errorf("postgres: reset checkpoint %s: %w", m.name, err)
		}
		return nil
	})
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
// events parses each of its statements once.
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
		port := newTx(batchTx{tx})
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
		if last == uint64(done) {
			return nil
		}
		if beforeCommit != nil {
			if err := beforeCommit(ctx); err != nil {
				return fmt.Errorf("%s: index writes up to %d: %w", name, last, err)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE projection_checkpoints SET position = $2 WHERE name = $1`, name, int64(last)); err != nil {
			return fmt.Errorf("postgres: save checkpoint %s: %w", name, err)
		}
		return nil
	})
}

// batchTx is the transaction of one batch, which every read model's
// write port wraps.
type batchTx struct{ tx pgx.Tx }

// run runs query for its effect alone.
func (b batchTx) run(ctx context.Context, query string, args ...any) error {
	_, err := b.tx.Exec(ctx, query, args...)
	return err
}

// exec runs query and returns the number of rows it changed.
func (b batchTx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := b.tx.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

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
