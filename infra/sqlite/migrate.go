package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate runs every embedded migration not yet applied, each in its own
// transaction, in file-name order (forward only).
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY) WITHOUT ROWID`); err != nil {
		return fmt.Errorf("sqlite: create migrations table: %w", err)
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("sqlite: list migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := migrateFile(ctx, db, name); err != nil {
			return err
		}
	}
	return nil
}

func migrateFile(ctx context.Context, db *sql.DB, name string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", name, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, name).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", name, err)
	}
	if n > 0 {
		return nil
	}
	body, err := migrationFiles.ReadFile(name)
	if err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", name, err)
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO migrations (name) VALUES (?)`, name); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", name, err)
	}
	return tx.Commit()
}
