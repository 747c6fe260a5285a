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

// migrationNames are the embedded migrations, in the order they apply.
func migrationNames() ([]string, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("sqlite: list migrations: %w", err)
	}
	sort.Strings(names)
	return names, nil
}

// A database's schema version (PRAGMA user_version, a field of its file
// header) is the number of embedded migrations an Open found all applied,
// with no rebuild's deferred indexes left to build (markCurrent). An Open
// of a database at this build's version reads that field and the absence
// of deferred_indexes in one statement on a reader (schemaState) instead of
// running the migrations' checks, 16 write transactions on a connection of
// its own: a third of the SQLite open of every command-line process. A
// database an older engram wrote is at a lower version (0 before the
// version was kept; the migrations table alone said what was applied), so
// its next writer Open migrates it as before and then raises the version.
// A newer engram's database is at a higher one: this build then checks its
// migrations table at every open and never lowers the version.

// schemaState is what an Open reads of a database's schema: its version
// and whether a rebuild left deferred indexes to build.
type schemaState struct {
	version         int
	deferredIndexes bool
}

// readSchemaState reads the schema version and whether deferred_indexes
// exists (it exists only between DeferIndexes and the restore that drops
// it) in one statement. On a new, empty database both are zero.
func readSchemaState(ctx context.Context, db *sql.DB) (schemaState, error) {
	var s schemaState
	err := db.QueryRowContext(ctx, `SELECT (SELECT user_version FROM pragma_user_version),
		EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'deferred_indexes')`).Scan(&s.version, &s.deferredIndexes)
	return s, err
}

// markCurrent raises the schema version to version (never lowers it: a
// newer engram's database keeps its own) inside tx.
func markCurrent(ctx context.Context, tx *sql.Tx, version int) error {
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("sqlite: read schema version: %w", err)
	}
	if v >= version {
		return nil
	}
	// PRAGMA takes no bound parameter; version is an int.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, version)); err != nil {
		return fmt.Errorf("sqlite: set schema version: %w", err)
	}
	return nil
}

// migrate runs every embedded migration (names) not yet applied, each in
// its own transaction, in file-name order (forward only).
func migrate(ctx context.Context, db *sql.DB, names []string) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY) WITHOUT ROWID`); err != nil {
		return fmt.Errorf("sqlite: create migrations table: %w", err)
	}
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

// requireMigrated fails unless every embedded migration (names) has been
// applied to the database at path, naming the ones that have not.
func requireMigrated(ctx context.Context, db *sql.DB, path string, names []string) error {
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
