// Package postgres is the PostgreSQL adapter of the domain ports (the event
// store, the shared rate-limit buckets and the read-model stores), over a
// pgxpool connection pool.
package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// IsStorageFull reports whether err is PostgreSQL's disk_full (SQLSTATE
// 53100): the server found no space left for a write.
func IsStorageFull(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "53100"
}

// DB is a migrated PostgreSQL database.
type DB struct {
	Pool *pgxpool.Pool
}

// Open connects to url (a postgres:// URL or key=value DSN; extra parameters
// such as search_path become session settings), checks the connection and
// runs every pending migration.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &DB{Pool: pool}, nil
}

// Close closes every connection.
func (db *DB) Close() { db.Pool.Close() }
