package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
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

// requireMigrated fails unless every embedded migration has been applied
// to the database at path, naming the ones that have not.
func requireMigrated(ctx context.Context, db *sql.DB, path string) error {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("sqlite: list migrations: %w", err)
	}
	applied := map[string]bool{}
	rows, err := db.QueryContext(ctx, `SELECT name FROM migrations`)
	if err != nil && !strings.Contains(err.Error(), "no such table") {
		return fmt.Errorf("sqlite: read migrations of %s: %w", path, err)
	}
	if err == nil {
		defer rows.Close()
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return fmt.Errorf("sqlite: read migrations of %s: %w", path, err)
			}
			applied[name] = true
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: read migrations of %s: %w", path, err)
		}
	}
	var missing []string
	for _, name := range names {
		if !applied[name] {
			missing = append(missing, strings.TrimPrefix(name, "migrations/"))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("sqlite: %s was last written by an older engram and cannot be read without upgrading it (not applied: %s); any engram command that writes to it, such as `engram status`, upgrades it", path, strings.Join(missing, ", "))
	}
	return nil
}
