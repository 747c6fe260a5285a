package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
)

// Rebuilds is domain.ProjectionRebuilds on the projection_rebuilds table:
// one row per projection, its latest live rebuild. Every change notifies
// the nodes (see Changes) in its own transaction.
type Rebuilds struct {
	db *DB
}

var _ domain.ProjectionRebuilds = (*Rebuilds)(nil)

// NewRebuilds returns the rebuild records kept in db.
func NewRebuilds(db *DB) *Rebuilds { return &Rebuilds{db: db} }

// Request implements domain.ProjectionRebuilds. The row is locked while
// it is read and replaced, so of two nodes requesting at once one opens
// the rebuild and the other is answered with it.
func (r *Rebuilds) Request(ctx context.Context, projection, node string) (domain.ProjectionRebuild, bool, error) {
	var out domain.ProjectionRebuild
	var opened bool
	err := pgx.BeginFunc(ctx, r.db.Pool, func(tx pgx.Tx) error {
		// The row must exist to be locked: a first request inserts it.
		if _, err := tx.Exec(ctx, `INSERT INTO projection_rebuilds (name, id, state, requested_by) VALUES ($1, '', 'done', '') ON CONFLICT (name) DO NOTHING`, projection); err != nil {
			return err
		}
		current, err := getRebuild(ctx, tx, projection, " FOR UPDATE")
		if err != nil {
			return err
		}
		if current.State.Open() {
			out = current
			return nil
		}
		out = domain.ProjectionRebuild{ID: uuid.NewString(), State: domain.RebuildRequested, RequestedBy: node}
		opened = true
		if _, err := tx.Exec(ctx, `UPDATE projection_rebuilds SET id = $2, state = $3, requested_by = $4, requested_at = now(),
			node = '', started_at = NULL, finished_at = NULL, events = 0, error = '' WHERE name = $1`,
			projection, out.ID, out.State, node); err != nil {
			return err
		}
		return AnnounceChange(ctx, tx, projection)
	})
	if err != nil {
		return domain.ProjectionRebuild{}, false, fmt.Errorf("postgres: request rebuild of %s: %w", projection, err)
	}
	return out, opened, nil
}

// Get implements domain.ProjectionRebuilds.
func (r *Rebuilds) Get(ctx context.Context, projection string) (domain.ProjectionRebuild, error) {
	out, err := getRebuild(ctx, r.db.Pool, projection, "")
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.ProjectionRebuild{}, nil
	}
	if err != nil {
		return domain.ProjectionRebuild{}, fmt.Errorf("postgres: rebuild of %s: %w", projection, err)
	}
	return out, nil
}

// Start implements domain.ProjectionRebuilds.
func (r *Rebuilds) Start(ctx context.Context, projection, id, node string) error {
	return r.update(ctx, projection, `UPDATE projection_rebuilds SET state = 'running', node = $3, started_at = now()
		WHERE name = $1 AND id = $2 AND state IN ('requested', 'running')`, projection, id, node)
}

// Finish implements domain.ProjectionRebuilds.
func (r *Rebuilds) Finish(ctx context.Context, projection, id, node string, events uint64, failure string) error {
	state := domain.RebuildDone
	if failure != "" {
		state = domain.RebuildFailed
	}
	return r.update(ctx, projection, `UPDATE projection_rebuilds SET state = $4, events = $5, error = $6, finished_at = now()
		WHERE name = $1 AND id = $2 AND node = $3 AND state = 'running'`, projection, id, node, state, int64(events), failure)
}

// update runs one change of a rebuild record and notifies it.
func (r *Rebuilds) update(ctx context.Context, projection, query string, args ...any) error {
	err := pgx.BeginFunc(ctx, r.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, query, args...); err != nil {
			return err
		}
		return AnnounceChange(ctx, tx, projection)
	})
	if err != nil {
		return fmt.Errorf("postgres: rebuild of %s: %w", projection, err)
	}
	return nil
}

func getRebuild(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, projection, lock string) (domain.ProjectionRebuild, error) {
	var out domain.ProjectionRebuild
	var events int64
	err := q.QueryRow(ctx, `SELECT id, state, requested_by, node, events, error FROM projection_rebuilds WHERE name = $1`+lock, projection).
		Scan(&out.ID, &out.State, &out.RequestedBy, &out.Node, &events, &out.Error)
	out.Events = uint64(events)
	return out, err
}
