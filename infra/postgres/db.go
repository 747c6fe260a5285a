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

// spaceProbePages is how many 8 KiB pages ProbeSpace writes: 1 MiB.
const spaceProbePages = 128

// ProbeSpace reports whether the server has room for writes again
// (diskspace.Remote.HasRoom): its disk is not this machine's, so its free
// space cannot be measured here. It writes spaceProbePages pages to a
// temporary table in the database's default tablespace — PostgreSQL
// extends a relation by writing its new pages at once, so a full disk
// fails this with disk_full — and rolls back, which removes the file.
// Its rows are uncompressed (STORAGE PLAIN) and one per page, so the
// 1 MiB really is written.
func (db *DB) ProbeSpace(ctx context.Context) error {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: probe space: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	for _, stmt := range []string{
		`CREATE TEMPORARY TABLE engram_space_probe (filler text) ON COMMIT DROP`,
		`ALTER TABLE engram_space_probe ALTER COLUMN filler SET STORAGE PLAIN`,
		fmt.Sprintf(`INSERT INTO engram_space_probe SELECT repeat('x', 7000) FROM generate_series(1, %d)`, spaceProbePages),
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("postgres: probe space: %w", err)
		}
	}
	return nil
}
