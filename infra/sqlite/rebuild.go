package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// An offline rebuild replays the whole log into emptied read models; every
// secondary index on them is then maintained row by row, in random key
// order, for every event. The indexes that only queries use (listing
// orders, the embedding queue, active jobs) are dropped for the rebuild
// instead and built once at its end, one sort each. The indexes the
// projections' own statements find rows by (an agent's rows when it is
// deleted, a purged memory's edges by parent, a key's sessions, a unique
// audit id) stay: without them each of those events would scan a table.
//
// Crash safety: the indexes are dropped in one transaction that records
// their definitions in deferred_indexes, and built again in one that
// deletes the record. A rebuild cut in between (a crash, a kill, an error)
// leaves the record, and the next writer Open builds them before anything
// queries the tables: the read models are never left without an index.

// queryOnlyIndexes are the secondary indexes no projection statement looks
// rows up by; a new index not listed here is kept during rebuilds, which is
// slower but never wrong.
var queryOnlyIndexes = map[string]bool{
	"memories_by_agent_time":           true,
	"memories_by_user_time":            true,
	"memories_pending":                 true,
	"memories_by_agent_type_processed": true,
	"jobs_active":                      true,
	"account_keys_by_user":             true,
}

// readModelTables are each SQLite projection's tables, by checkpoint name.
func readModelTables() map[string][]exportTable {
	return map[string][]exportTable{
		accountsCheckpoint:    accountTables(),
		memoriesCheckpoint:    memoriesTables(),
		keywordCheckpoint:     keywordTables(),
		vectorsCheckpoint:     vectorTables(),
		jobsCheckpoint:        jobTables(),
		provenanceCheckpoint:  provenanceTables(),
		auditCheckpoint:       auditTables(),
		suggestionsCheckpoint: suggestionsTables(),
		webhooksCheckpoint:    webhookTables(),
	}
}

// createDeferredIndexes is the table of indexes dropped for a rebuild in
// progress. It is no migration: it only exists while a rebuild runs or
// after one was cut.
const createDeferredIndexes = `CREATE TABLE IF NOT EXISTS deferred_indexes (name TEXT PRIMARY KEY, sql TEXT NOT NULL) WITHOUT ROWID`

// DeferIndexes drops the query-only secondary indexes of the named
// projections' tables (by checkpoint name, as the projections are named)
// for an offline rebuild, recording them so that RestoreIndexes, or the
// next Open after a rebuild that never finished, builds them again.
func (db *DB) DeferIndexes(ctx context.Context, projections []string) error {
	byName := readModelTables()
	var tables []any
	for _, n := range projections {
		t, ok := byName[n]
		if !ok {
			return fmt.Errorf("sqlite: defer indexes: no read model named %q", n)
		}
		for _, name := range tableNames(t) {
			tables = append(tables, name)
		}
	}
	if len(tables) == 0 {
		return nil
	}
	return db.WriteTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, createDeferredIndexes); err != nil {
			return fmt.Errorf("sqlite: defer indexes: %w", err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_master
			WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (`+memPlaceholders(len(tables))+`)`, tables...)
		if err != nil {
			return fmt.Errorf("sqlite: defer indexes: %w", err)
		}
		var deferred [][2]string
		for rows.Next() {
			var name, def string
			if err := rows.Scan(&name, &def); err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: defer indexes: %w", err)
			}
			if queryOnlyIndexes[name] {
				deferred = append(deferred, [2]string{name, def})
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("sqlite: defer indexes: %w", err)
		}
		for _, ix := range deferred {
			if _, err := tx.ExecContext(ctx, `INSERT INTO deferred_indexes (name, sql) VALUES (?, ?)`, ix[0], ix[1]); err != nil {
				return fmt.Errorf("sqlite: defer index %s: %w", ix[0], err)
			}
			if _, err := tx.ExecContext(ctx, `DROP INDEX `+ix[0]); err != nil {
				return fmt.Errorf("sqlite: defer index %s: %w", ix[0], err)
			}
		}
		return nil
	})
}

// RestoreIndexes builds the indexes DeferIndexes dropped, in one
// transaction with forgetting them.
func (db *DB) RestoreIndexes(ctx context.Context) error {
	return db.WriteTx(ctx, func(tx *sql.Tx) error { return restoreDeferredIndexes(ctx, tx) })
}

// restoreDeferredIndexes builds the indexes recorded in deferred_indexes,
// if the table exists, and drops it.
func restoreDeferredIndexes(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'deferred_indexes'`).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: restore indexes: %w", err)
	}
	if n == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM deferred_indexes ORDER BY name`)
	if err != nil {
		return fmt.Errorf("sqlite: restore indexes: %w", err)
	}
	var defs [][2]string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			rows.Close()
			return fmt.Errorf("sqlite: restore indexes: %w", err)
		}
		defs = append(defs, [2]string{name, def})
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("sqlite: restore indexes: %w", err)
	}
	for _, d := range defs {
		if _, err := tx.ExecContext(ctx, d[1]); err != nil {
			return fmt.Errorf("sqlite: restore index %s: %w", d[0], err)
		}
	}
	// Dropped rather than emptied: the table's existence alone says a
	// rebuild left indexes to build, which an Open checks with the schema
	// version (readSchemaState).
	if _, err := tx.ExecContext(ctx, `DROP TABLE deferred_indexes`); err != nil {
		return fmt.Errorf("sqlite: restore indexes: %w", err)
	}
	return nil
}
