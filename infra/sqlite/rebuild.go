package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// An offline rebuild of read models is a bulk load. Replaying into the
// live tables row by row paid for emptying them with DELETE, for every
// secondary index on every insert, and for a journal that protects state
// the log can rebuild anyway. Instead the projections are replayed into
// a fresh database file that holds their tables without secondary indexes
// and without a journal; the indexes are built once at the end, in one
// sort each; and the result replaces the live tables in one synced
// transaction of the live database.
//
// The log and the read models share engram.db, so the fresh file cannot
// be renamed over it; the swap copies the finished tables in instead.
// SQLite copies a table into an empty one of the same shape page record by
// page record (its transfer optimisation: no re-parsing, no index
// maintenance), which costs a small part of the replay. A crash at any
// moment leaves the old complete state (the swap's transaction did not
// commit; the fresh file is a leftover the next rebuild deletes) or the
// new complete state.

// RebuildFileName is the fresh database file of a rebuild in progress,
// next to FileName.
const RebuildFileName = "engram.rebuild.db"

// rebuildCacheKiB is the fresh file's page cache: the whole of a few
// hundred thousand memories' read models, so the build rarely reads back
// a page it wrote.
const rebuildCacheKiB = 16 << 10

// replayLooksUp are the secondary indexes the projections' apply
// statements find rows by: an agent's rows when it is deleted, a purged
// memory's provenance edges by parent, a key's sessions, an audit entry's
// unique id. The fresh tables keep them, or each of those events would
// scan a whole table; the others serve only queries (listing orders, the
// embedding queue, active jobs) and are built once when the rebuild is
// swapped in.
var replayLooksUp = map[string]bool{
	"memories_by_agent_id": true, "keyword_docs_agent": true, "vector_memories_agent": true,
	"provenance_by_agent": true, "provenance_by_parent": true, "audit_by_agent": true, "audit_by_id": true,
	"jobs_by_agent": true, "suggestions_by_agent": true, "account_sessions_by_key": true,
}

// Rebuild is an offline rebuild of some projections' read models in
// progress: Fresh is the database the projections replay into, Commit
// swaps the result in, Abort drops it.
type Rebuild struct {
	// Fresh holds the rebuilt projections' tables, empty at the start,
	// and their checkpoints. Stores opened over it write there.
	Fresh *DB
	live  *DB
	// checkpoints names the rebuilt projections; schema is their tables
	// and indexes as the live database has them.
	checkpoints []string
	schema      []schemaObject
	done        bool
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
	}
}

// StartRebuild creates the fresh database of a rebuild of the named
// projections (their checkpoint names) with their tables as the live
// database has them, less their secondary indexes. A fresh file left by a
// rebuild that never committed is deleted first. The caller must own the
// data dir (no server writes it meanwhile) and ends the rebuild with
// Commit or Abort.
func (db *DB) StartRebuild(ctx context.Context, names []string) (*Rebuild, error) {
	if db.write == nil {
		return nil, fmt.Errorf("sqlite: database opened read-only")
	}
	byName := readModelTables()
	r := &Rebuild{live: db, checkpoints: names}
	var tables []string
	for _, n := range names {
		t, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("sqlite: rebuild: no read model named %q", n)
		}
		tables = append(tables, tableNames(t)...)
	}
	path := filepath.Join(filepath.Dir(db.path), RebuildFileName)
	if err := removeDatabase(path); err != nil {
		return nil, err
	}
	var err error
	if r.schema, err = db.schemaOf(ctx, tables); err != nil {
		return nil, err
	}
	checkpoints, err := db.schemaOf(ctx, []string{"projection_checkpoints"})
	if err != nil {
		return nil, err
	}
	if r.Fresh, err = openFresh(ctx, path); err != nil {
		return nil, err
	}
	for _, s := range append(checkpoints, r.schema...) {
		if s.kind == "index" && !replayLooksUp[s.name] {
			continue
		}
		if _, err := r.Fresh.write.ExecContext(ctx, s.sql); err != nil {
			r.Abort()
			return nil, fmt.Errorf("sqlite: rebuild: create %s: %w", s.name, err)
		}
	}
	return r, nil
}

// schemaObject is one table or index of sqlite_master.
type schemaObject struct {
	kind, name, sql string
}

// schemaOf is the CREATE statements of tables and of their explicit
// indexes (a PRIMARY KEY or UNIQUE constraint's index comes with its
// table), tables first.
func (db *DB) schemaOf(ctx context.Context, tables []string) ([]schemaObject, error) {
	placeholders := strings.TrimSuffix(strings.Repeat("?,", len(tables)), ",")
	args := make([]any, len(tables))
	for i, t := range tables {
		args[i] = t
	}
	rows, err := db.write.QueryContext(ctx, `SELECT type, name, sql FROM sqlite_master
		WHERE tbl_name IN (`+placeholders+`) AND type IN ('table', 'index') AND sql IS NOT NULL
		ORDER BY type = 'index', rowid`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: rebuild: read schema: %w", err)
	}
	defer rows.Close()
	var out []schemaObject
	for rows.Next() {
		var s schemaObject
		if err := rows.Scan(&s.kind, &s.name, &s.sql); err != nil {
			return nil, fmt.Errorf("sqlite: rebuild: read schema: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: rebuild: read schema: %w", err)
	}
	return out, nil
}

// openFresh opens a new database file for a rebuild. Nothing in it is
// acknowledged state until Commit copies it into the live database in a
// synced transaction, so it has no journal and never syncs: a crash
// before the swap loses a file the next rebuild deletes anyway.
func openFresh(ctx context.Context, path string) (*DB, error) {
	if err := restrictFiles(path); err != nil {
		return nil, err
	}
	db := &DB{path: path, durability: Relaxed}
	var err error
	db.write, err = sql.Open("sqlite", dsn(path, url.Values{"_txlock": {"immediate"}}, "journal_mode(OFF)", "synchronous(OFF)",
		fmt.Sprintf("cache_size(-%d)", rebuildCacheKiB), "temp_store(MEMORY)"))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.write.SetMaxOpenConns(1)
	// WriteTx pushes the idle checkpoint back; without a WAL it does nothing.
	db.idle = time.AfterFunc(time.Hour, func() {})
	db.idle.Stop()
	db.read, err = sql.Open("sqlite", dsn(path, url.Values{"mode": {"ro"}}, "query_only(1)"))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.hot = &stmtCache{db: db.read}
	if err := db.write.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return db, nil
}

// Commit builds the secondary indexes in the fresh database and replaces
// the rebuilt projections' tables and checkpoints in the live database
// with the fresh ones, in one transaction synced before Commit returns.
// The fresh file is deleted afterwards.
func (r *Rebuild) Commit(ctx context.Context) error {
	if r.done {
		return fmt.Errorf("sqlite: rebuild already ended")
	}
	if err := r.Fresh.Close(); err != nil {
		return fmt.Errorf("sqlite: rebuild: close %s: %w", r.Fresh.path, err)
	}
	if err := r.live.swapIn(ctx, r.Fresh.path, r.schema, r.checkpoints); err != nil {
		return err
	}
	r.done = true
	return removeDatabase(r.Fresh.path)
}

// Abort drops a rebuild that did not commit: the live database is as it
// was before StartRebuild. Abort after Commit does nothing.
func (r *Rebuild) Abort() {
	if r.done {
		return
	}
	r.done = true
	_ = r.Fresh.Close()
	_ = removeDatabase(r.Fresh.path)
}

// swapIn replaces the tables of schema and the named checkpoints with
// those of the database file fresh, in one transaction at
// synchronous=FULL whatever the durability setting: a rebuild is rare and
// replaces whole read models. Each table is dropped (freeing its pages
// without visiting rows), created anew without its indexes, filled from
// the fresh copy in key order, and its indexes built at the end, one sort
// each.
func (db *DB) swapIn(ctx context.Context, fresh string, schema []schemaObject, checkpoints []string) error {
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: rebuild: writer connection: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS rebuilt`, fresh); err != nil {
		return fmt.Errorf("sqlite: rebuild: attach %s: %w", fresh, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DETACH DATABASE rebuilt`)
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
		return fmt.Errorf("sqlite: synchronous=FULL: %w", err)
	}
	// Should this fail, the connection stays at FULL: slower, never less safe.
	defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = NORMAL`)
	defer db.idle.Reset(walIdleCheckpointAfter)
	return runTx(ctx, conn, func(tx *sql.Tx) error {
		for _, s := range schema {
			if s.kind != "table" {
				continue
			}
			// A generated column is neither copied nor stored (and
			// SELECT * would list it): the stored columns are named.
			columns, err := storedColumns(ctx, tx, s.name)
			if err != nil {
				return err
			}
			for _, stmt := range []string{
				`DROP TABLE main.` + s.name,
				s.sql,
				`INSERT INTO main.` + s.name + ` (` + columns + `) SELECT ` + columns + ` FROM rebuilt.` + s.name,
			} {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("sqlite: rebuild: replace %s: %w", s.name, err)
				}
			}
		}
		for _, s := range schema {
			if s.kind != "index" {
				continue
			}
			if _, err := tx.ExecContext(ctx, s.sql); err != nil {
				return fmt.Errorf("sqlite: rebuild: index %s: %w", s.name, err)
			}
		}
		for _, name := range checkpoints {
			if _, err := tx.ExecContext(ctx, `DELETE FROM main.projection_checkpoints WHERE name = ?`, name); err != nil {
				return fmt.Errorf("sqlite: rebuild: checkpoint %s: %w", name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO main.projection_checkpoints SELECT * FROM rebuilt.projection_checkpoints WHERE name = ?`, name); err != nil {
				return fmt.Errorf("sqlite: rebuild: checkpoint %s: %w", name, err)
			}
		}
		return nil
	})
}

// storedColumns is the comma-separated stored columns of a table of the
// live database, in table order.
func storedColumns(ctx context.Context, tx *sql.Tx, table string) (string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name FROM main.pragma_table_xinfo(?) WHERE hidden = 0 ORDER BY cid`, table)
	if err != nil {
		return "", fmt.Errorf("sqlite: rebuild: columns of %s: %w", table, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return "", fmt.Errorf("sqlite: rebuild: columns of %s: %w", table, err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("sqlite: rebuild: columns of %s: %w", table, err)
	}
	if len(names) == 0 {
		return "", fmt.Errorf("sqlite: rebuild: no table %s", table)
	}
	return strings.Join(names, ", "), nil
}

// removeDatabase deletes a database file and its journals, if any.
func removeDatabase(path string) error {
	for _, p := range []string{path, path + "-journal", path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sqlite: remove %s: %w", p, err)
		}
	}
	return nil
}
