package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock key that serialises migrators, so two
// servers starting together do not both apply a file.
const migrationLock int64 = 0x656e6772616d00 // "engram\0"

// migrate runs every embedded migration not yet applied, each in its own
// transaction, in file-name order (forward only). Migrations apply to the
// first schema on the connection's search_path.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY)`); err != nil {
		return fmt.Errorf("postgres: create migrations table: %w", err)
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("postgres: list migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := migrateFile(ctx, pool, name); err != nil {
			return err
		}
	}
	return nil
}

func migrateFile(ctx context.Context, pool *pgxpool.Pool, name string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("postgres: migration %s: lock: %w", name, err)
		}
		var applied string
		err := tx.QueryRow(ctx, `SELECT name FROM migrations WHERE name = $1`, name).Scan(&applied)
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("postgres: migration %s: %w", name, err)
		}
		body, err := migrationFiles.ReadFile(name)
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", name, err)
		}
		// No arguments: pgx uses the simple protocol, so a file may hold
		// several statements.
		if _, err := tx.Exec(ctx, string(body)); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO migrations (name) VALUES ($1)`, name); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", name, err)
		}
		return nil
	})
}
