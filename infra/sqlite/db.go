// Package sqlite is the embedded storage adapter: the event log, the read
// models and the keyword index live in one SQLite file per data directory.
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// FileName is the database file inside a data directory.
const FileName = "engram.db"

// DB holds one SQLite file through two pools: a single writer connection
// (SQLite allows one writer; serialising in Go avoids SQLITE_BUSY) and a pool
// of read-only connections that see committed data through WAL.
type DB struct {
	path  string
	write *sql.DB
	read  *sql.DB
	// hot holds the prepared statements of the read queries that run per
	// request (see queryHot).
	hot *stmtCache
}

// Options tune how a DB is opened.
type Options struct {
	// ReadOnly opens the file without the writer (the dashboard never writes).
	ReadOnly bool
}

// Open opens (creating if needed) the database in dataDir and migrates it.
func Open(ctx context.Context, dataDir string, opts Options) (*DB, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: create data dir: %w", err)
	}
	path := filepath.Join(dataDir, FileName)
	db := &DB{path: path}
	var err error
	if !opts.ReadOnly {
		db.write, err = sql.Open("sqlite", dsn(path, url.Values{"_txlock": {"immediate"}}, "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(ON)"))
		if err != nil {
			return nil, fmt.Errorf("sqlite: open writer: %w", err)
		}
		db.write.SetMaxOpenConns(1)
		if err := migrate(ctx, db.write); err != nil {
			db.write.Close()
			return nil, err
		}
		if err := os.Chmod(path, 0o600); err != nil {
			db.write.Close()
			return nil, fmt.Errorf("sqlite: restrict file mode: %w", err)
		}
	}
	// The readers map the file (mmap_size, SQLite's cap of 2 GiB): a page
	// read is then a memory access instead of a pread into each
	// connection's private page cache, which per search request (hydrating
	// the hits, checking the credential) cost more than the B-tree work.
	// Mapped pages are the OS page cache, shared by the connections (the
	// kernel caches the file either way; mapped, the pages a process has
	// touched count in its RSS as file pages, RssFile, not as heap).
	db.read, err = sql.Open("sqlite", dsn(path, url.Values{"mode": {"ro"}}, "query_only(1)", "mmap_size(2147418112)"))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open readers: %w", err)
	}
	db.read.SetMaxOpenConns(max(4, 2*runtime.GOMAXPROCS(0)))
	db.read.SetMaxIdleConns(max(4, 2*runtime.GOMAXPROCS(0)))
	db.hot = &stmtCache{db: db.read}
	if err := db.read.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return db, nil
}

func dsn(path string, q url.Values, pragmas ...string) string {
	pragmas = append(pragmas, "busy_timeout(10000)")
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	return "file:" + path + "?" + q.Encode()
}

// Path is the database file.
func (db *DB) Path() string { return db.path }

// Close closes both pools.
func (db *DB) Close() error {
	var err error
	if db.hot != nil {
		err = db.hot.close()
	}
	if db.write != nil {
		if e := db.write.Close(); err == nil {
			err = e
		}
	}
	if db.read != nil {
		if e := db.read.Close(); err == nil {
			err = e
		}
	}
	return err
}

// queryHot runs a read query that the server runs per request as a
// prepared statement kept for the life of the DB. query must be one of a
// fixed set of texts (a constant, or one of a few generated shapes): every
// distinct text stays prepared on every read connection.
func (db *DB) queryHot(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return db.hot.query(ctx, query, args...)
}

// Reader is the read-only pool.
func (db *DB) Reader() *sql.DB { return db.read }

// WriteTx runs fn in an immediate write transaction and commits it when fn
// returns nil.
func (db *DB) WriteTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if db.write == nil {
		return fmt.Errorf("sqlite: database opened read-only")
	}
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}
