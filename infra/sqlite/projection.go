package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/engram-memory/engram/domain"
)

// Checkpoint returns the last position the named projection applied.
func (db *DB) Checkpoint(ctx context.Context, name string) (uint64, error) {
	var pos uint64
	err := db.read.QueryRowContext(ctx, `SELECT position FROM projection_checkpoints WHERE name = ?`, name).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: checkpoint %s: %w", name, err)
	}
	return pos, nil
}

// ApplyEvents applies the events after the projection's checkpoint with
// apply, and advances the checkpoint, in one transaction: a batch is
// applied exactly once however often it is delivered. beforeCommit (nil:
// none) runs after the last apply and before the commit: an index
// projection writes its index there, so an index write that fails rolls
// the batch back and the checkpoint stays behind the index, never ahead;
// a read model writes what it held back there (applyBatch, batchEnder).
func (db *DB) ApplyEvents(ctx context.Context, name string, events []domain.Event, apply func(*sql.Tx, domain.Event) error, beforeCommit func(context.Context) error) error {
	return db.WriteTx(ctx, func(tx *sql.Tx) error {
		b := db.batchFor(ctx, tx)
		var done uint64
		err := b.queryRow(`SELECT position FROM projection_checkpoints WHERE name = ?`, name).Scan(&done)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: checkpoint %s: %w", name, err)
		}
		last := done
		for _, e := range events {
			if e.Position <= done {
				continue
			}
			if err := apply(tx, e); err != nil {
				return fmt.Errorf("%s: apply %s at %d: %w", name, e.Type, e.Position, err)
			}
			last = e.Position
		}
		if last == done {
			return nil
		}
		if beforeCommit != nil {
			if err := beforeCommit(ctx); err != nil {
				return fmt.Errorf("%s: end the batch at %d: %w", name, last, err)
			}
		}
		err = b.run(`INSERT INTO projection_checkpoints (name, position) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position`, name, last)
		if err != nil {
			return fmt.Errorf("sqlite: save checkpoint %s: %w", name, err)
		}
		return nil
	})
}

// ResetProjection empties the projection's tables and forgets its checkpoint.
func (db *DB) ResetProjection(ctx context.Context, name string, tables ...string) error {
	return db.WriteTx(ctx, func(tx *sql.Tx) error {
		for _, t := range tables {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t); err != nil {
				return fmt.Errorf("sqlite: reset %s: %w", t, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM projection_checkpoints WHERE name = ?`, name); err != nil {
			return fmt.Errorf("sqlite: reset checkpoint %s: %w", name, err)
		}
		return nil
	})
}

// Checkpoints implements domain.CheckpointTable: the table holds one row
// per projection, so it is read whole, in one statement (a start reads
// every read projection's checkpoint: one statement instead of one each).
func (db *DB) Checkpoints(ctx context.Context, names []string) (map[string]uint64, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT name, position FROM projection_checkpoints`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: checkpoints: %w", err)
	}
	defer rows.Close()
	all := map[string]uint64{}
	for rows.Next() {
		var name string
		var pos uint64
		if err := rows.Scan(&name, &pos); err != nil {
			return nil, fmt.Errorf("sqlite: checkpoints: %w", err)
		}
		all[name] = pos
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: checkpoints: %w", err)
	}
	out := make(map[string]uint64, len(names))
	for _, n := range names {
		out[n] = all[n]
	}
	return out, nil
}
