package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
)

// changesChannel is the NOTIFY channel on which a committed change of a
// shared projection's state (checkpoint, rebuild record) names the
// projection, and a lease's new holder domain.LeaseChange of it. Channels are per database, not per schema: deployments in
// two schemas of one database wake each other's followers for nothing,
// which costs a read and is never wrong.
const changesChannel = "engram_projections"

// AnnounceChange tells the nodes listening (Changes) that the shared state
// of projection changed, when tx commits (never if it rolls back). Every
// store of a leased projection calls it in the transaction that moves its
// checkpoint.
func AnnounceChange(ctx context.Context, tx pgx.Tx, projection string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, changesChannel, projection); err != nil {
		return fmt.Errorf("postgres: notify %s: %w", projection, err)
	}
	return nil
}

// Changes is domain.ProjectionChanges on LISTEN: one connection of its own
// per call to Listen (one per node), outside the pool, so it never holds
// a pooled connection the queries need.
type Changes struct {
	db *DB
}

var _ domain.ProjectionChanges = (*Changes)(nil)

// NewChanges returns the change notifications of the projections whose
// state is kept in db.
func NewChanges(db *DB) *Changes { return &Changes{db: db} }

// Listen implements domain.ProjectionChanges.
func (c *Changes) Listen(ctx context.Context, changed func(key string)) error {
	cfg := c.db.Pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = "engram projection changes"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres: listen: connect: %w", err)
	}
	defer closeQuietly(conn)
	if _, err := conn.Exec(ctx, `LISTEN `+changesChannel); err != nil {
		return fmt.Errorf("postgres: listen: %w", err)
	}
	changed("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("postgres: listen: %w", err)
		}
		changed(n.Payload)
	}
}
