// Package sqlite is the embedded storage adapter: the event log, the read
// models and the keyword index live in one SQLite file per data directory.
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
	"runtime"
	"time"

	sqlitedriver "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
	sqlitelib "modernc.org/sqlite/lib"
)

// FileName is the database file inside a data directory.
const FileName = "engram.db"

// DB holds one SQLite file through two pools: a single writer connection
// (SQLite allows one writer; serialising in Go avoids SQLITE_BUSY) and a pool
// of read-only connections that see committed data through WAL.
type DB struct {
	path       string
	durability Durability
	write      *sql.DB
	read       *sql.DB
	// hot holds the prepared statements of the read queries that run per
	// request (see queryHot).
	hot *stmtCache
	// writer holds the write side's prepared statements (see
	// writerStmts); nil without a writer.
	writer *writerStmts
	// idle checkpoints the WAL once writes pause (see checkpointWhenIdle);
	// nil without a writer.
	idle *time.Timer
}

// Options tune how a DB is opened.
type Options struct {
	// ReadOnly opens the file without the writer (the dashboard never writes).
	ReadOnly bool
	// Durability is when an appended event reaches stable storage; the
	// zero value is Durable.
	Durability Durability
}

// writerCacheKiB is the writer connection's page cache: enough for the
// interior and hot leaf pages of a few million memories' tables and
// indexes, and a small part of the server's memory.
const writerCacheKiB = 64 << 10

// walCheckpointPages is how many WAL pages a commit may leave before it
// copies them into the database (SQLite's default is 1,000, 4 MiB): a
// batch of 1,000 memories writes more than that across the projections,
// so at the default every batch checkpointed and copied the same hot
// index pages again.
const walCheckpointPages = 16 << 10

// walIdleCheckpointAfter is how long writes must pause before the WAL is
// checkpointed regardless of its size. A reader finds the pages written
// since the last checkpoint in the WAL and reads them with pread instead
// of from the mapped file; once the whole WAL is checkpointed it reads the
// file alone. Without this, searches after an ingest paid for up to
// walCheckpointPages of un-checkpointed pages until the next writes.
const walIdleCheckpointAfter = 500 * time.Millisecond

// Open opens (creating if needed) the database in dataDir and migrates it.
// The files it creates are private to the owner (0600), whatever the umask.
func Open(ctx context.Context, dataDir string, opts Options) (*DB, error) {
	durability, err := ParseDurability(string(opts.Durability))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dataDir, FileName)
	db := &DB{path: path, durability: durability}
	if opts.ReadOnly {
		// A reader creates nothing: no directory, no empty database.
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("sqlite: open read-only: %w", err)
		}
	} else {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: create data dir: %w", err)
		}
		if err := restrictFiles(path); err != nil {
			return nil, err
		}
		// Every connection starts at synchronous=NORMAL: commits of the
		// read models are not synced (a crash loses at most their last
		// transactions, which the projections re-apply from the log). The
		// log's own commits raise it per transaction (see logTx).
		//
		// The writer keeps a page cache of writerCacheKiB: at SQLite's
		// default of 2 MiB, ingest re-read the B-tree pages of the memories
		// and index tables from the WAL on every batch (pread and page
		// initialisation were ~13% of its CPU).
		db.write, err = sql.Open("sqlite", dsn(path, url.Values{"_txlock": {"immediate"}}, "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(ON)",
			fmt.Sprintf("cache_size(-%d)", writerCacheKiB), fmt.Sprintf("wal_autocheckpoint(%d)", walCheckpointPages)))
		if err != nil {
			return nil, fmt.Errorf("sqlite: open writer: %w", err)
		}
		// The writer connects at its first statement: an Open of a
		// current database leaves it unconnected (below), so a command
		// that only reads never opens it.
		db.write.SetMaxOpenConns(1)
		db.writer = newWriterStmts(db.write, maxWriterStmts)
		db.idle = time.AfterFunc(time.Hour, db.checkpointWhenIdle)
		db.idle.Stop()
	}
	// The readers map the file (mmap_size, SQLite's cap of 2 GiB): a page
	// read is then a memory access instead of a pread into each
	// connection's private page cache, which per search request (hydrating
	// the hits, checking the credential) cost more than the B-tree work.
	// Mapped pages are the OS page cache, shared by the connections (the
	// kernel caches the file either way; mapped, the pages a process has
	// touched count in its RSS as file pages, RssFile, not as heap).
	readParams := url.Values{"mode": {"ro"}}
	if opts.ReadOnly && fileExists(path+"-shm") {
		// A reader that must not change a byte opens the WAL index (the
		// -shm file a writer left) read-only as well: with a writer running
		// it reads the writer's index; with none, SQLite rebuilds the index
		// in its own memory instead of rewriting the file. Without the
		// file (a database that another tool checkpointed and closed)
		// SQLite must create the WAL and its index to read at all; they
		// hold no data and engram.db itself is still never written.
		readParams.Set("readonly_shm", "1")
	}
	db.read, err = sql.Open("sqlite", dsn(path, readParams, "query_only(1)", "mmap_size(2147418112)"))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open readers: %w", err)
	}
	db.read.SetMaxOpenConns(max(4, 2*runtime.GOMAXPROCS(0)))
	db.read.SetMaxIdleConns(max(4, 2*runtime.GOMAXPROCS(0)))
	db.hot = newStmtCache(db.read, maxReadStmts)
	if err := db.prepareSchema(ctx, opts.ReadOnly); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// prepareSchema brings the database to this build's schema, or with
// readOnly refuses one that is not there. A current database (see
// schemaState) costs one statement on a reader; otherwise the writer runs
// the migrations, builds the indexes a cut rebuild deferred and marks the
// database current, all before anything queries it.
func (db *DB) prepareSchema(ctx context.Context, readOnly bool) error {
	names, err := migrationNames()
	if err != nil {
		return err
	}
	state, err := readSchemaState(ctx, db.read)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", db.path, err)
	}
	if state.version == len(names) && !state.deferredIndexes {
		return nil
	}
	if readOnly {
		// A reader cannot migrate: a database an older engram wrote last
		// would answer queries about columns it does not have yet with
		// SQL errors, so it is refused up front, saying how to upgrade it.
		// (A reader leaves deferred indexes to the next writer.)
		return requireMigrated(ctx, db.read, db.path, names)
	}
	if err := migrate(ctx, db.write, names); err != nil {
		return err
	}
	// A rebuild cut part-way left its deferred indexes to be built.
	return runTx(ctx, db.write, func(tx *sql.Tx) error {
		if err := restoreDeferredIndexes(ctx, tx); err != nil {
			return err
		}
		return markCurrent(ctx, tx, len(names))
	})
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func dsn(path string, q url.Values, pragmas ...string) string {
	pragmas = append(pragmas, "busy_timeout(10000)")
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	return "file:" + path + "?" + q.Encode()
}

// walHasFrames reports whether the database's WAL may hold frames: its
// file is there and not empty. A checkpoint (TRUNCATE) leaves it empty;
// SQLite reuses the file from its start after other checkpoints, so any
// size above zero may be frames not yet copied.
func walHasFrames(path string) bool {
	info, err := os.Stat(path + "-wal")
	return err == nil && info.Size() > 0
}

// Path is the database file.
func (db *DB) Path() string { return db.path }

// Close closes both pools, the readers first: the last connection to a
// database in WAL mode copies the WAL into it and deletes it, if it can
// write. Closed last, a read-only connection could not, and left the WAL
// behind for good: every later open (each command of the command line is
// one) rebuilt the WAL's index by reading and checksumming all of it, ~5 ms
// of CPU per 16 MB, and read its pages from the WAL.
func (db *DB) Close() error {
	if db.idle != nil {
		db.idle.Stop()
	}
	var err error
	if db.hot != nil {
		err = db.hot.close()
	}
	if db.writer != nil {
		if e := db.writer.close(); err == nil {
			err = e
		}
	}
	// The writer empties the WAL and closes before the readers, so the
	// read-only connection closing last leaves the WAL (empty) and its
	// index (-shm) in place: the next open has nothing to re-read, and a
	// restart on a full disk needs no space to create them again (SQLite
	// cannot start a writer on a full disk without its -shm). A checkpoint
	// that fails (a full disk that cannot take the frames) leaves the WAL
	// to the next open.
	//
	// A WAL already empty (a process that wrote nothing, as a command that
	// only reads) needs no checkpoint, and the writer, never connected,
	// is not connected for one.
	if db.write != nil {
		if walHasFrames(db.path) {
			_, _ = db.write.ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`)
		}
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
// bounded set of texts (a constant, or one of a few generated shapes):
// every distinct text stays prepared on every read connection, up to
// maxReadStmts texts.
func (db *DB) queryHot(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return db.hot.query(ctx, query, args...)
}

// Reader is the read-only pool.
func (db *DB) Reader() *sql.DB { return db.read }

// restrictFiles creates the database file with mode 0600 before SQLite
// does (SQLite would create it 0644 minus the umask), so the -wal and -shm
// files, which SQLite creates with the database file's mode, are 0600 too.
// Files of an existing database are brought to 0600.
func restrictFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sqlite: restrict file mode: %w", err)
		}
	}
	return nil
}

// WriteTx runs fn in an immediate write transaction and commits it when fn
// returns nil. The commit is not synced to disk: WriteTx is for state the
// log can rebuild; appends to the log go through logTx.
func (db *DB) WriteTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if db.write == nil {
		return fmt.Errorf("sqlite: database opened read-only")
	}
	defer db.idle.Reset(walIdleCheckpointAfter)
	if joined, err := db.joinUnit(ctx, fn); joined {
		return err
	}
	// Runs after the transaction, the writer connection free again.
	defer db.writer.prepareWanted(ctx)
	return runTx(ctx, db.write, fn)
}

// checkpointWhenIdle copies the whole WAL into the database once writes
// have paused for walIdleCheckpointAfter (every write transaction pushes
// it back). PASSIVE never blocks readers or waits for them; a failure (the
// database closed meanwhile, a reader still on old frames) leaves the WAL
// to the next automatic checkpoint.
func (db *DB) checkpointWhenIdle() {
	_, _ = db.write.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
}

// logTx runs fn in a write transaction whose commit has the log's
// durability: with Durable the writer connection runs this one transaction
// at synchronous=FULL, so the commit returns only after the WAL is synced.
// The connection goes back to NORMAL for the read models afterwards; the
// next synced commit flushes their unsynced frames as well, since the WAL
// is one sequential file.
func (db *DB) logTx(ctx context.Context, fn func(*sql.Tx) error) (commit time.Duration, err error) {
	if db.write == nil {
		return 0, fmt.Errorf("sqlite: database opened read-only")
	}
	defer db.idle.Reset(walIdleCheckpointAfter)
	// Runs after the transaction and after conn is back in the pool
	// (deferred calls run last first).
	defer db.writer.prepareWanted(ctx)
	if db.durability == Relaxed {
		return timedTx(ctx, db.write, fn)
	}
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: writer connection: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
		return 0, fmt.Errorf("sqlite: synchronous=FULL: %w", err)
	}
	commit, txErr := timedTx(ctx, conn, fn)
	// Should this fail, the connection stays at FULL: slower, never less safe.
	_, _ = conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = NORMAL`)
	return commit, txErr
}

// beginner is a *sql.DB or a *sql.Conn.
type beginner interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}

func runTx(ctx context.Context, b beginner, fn func(*sql.Tx) error) error {
	_, err := timedTx(ctx, b, fn)
	return err
}

// timedTx runs fn in a transaction as runTx does, and says how long its
// commit took: in the log's transactions, the sync to disk.
func timedTx(ctx context.Context, b beginner, fn func(*sql.Tx) error) (commit time.Duration, err error) {
	tx, err := b.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return 0, err
	}
	start := time.Now()
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqlite: commit: %w", err)
	}
	return time.Since(start), nil
}

// IsStorageFull reports whether err is SQLite's SQLITE_FULL: a write found
// no space left on the device (or the database at its page limit).
func IsStorageFull(err error) bool {
	var se *sqlitedriver.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlitelib.SQLITE_FULL
}

// Reclaim copies the whole WAL into the database and truncates it to
// nothing, giving its space back to the file system. After a full disk the
// WAL holds the frames of the transactions that failed; without this, its
// file keeps its largest size. It fails when the database cannot grow to
// take the frames, or when a reader keeps them (within the busy timeout).
func (db *DB) Reclaim(ctx context.Context) error {
	if db.write == nil {
		return fmt.Errorf("sqlite: database opened read-only")
	}
	var busy, frames, copied int
	if err := db.write.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("sqlite: checkpoint: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("sqlite: checkpoint: readers kept %d of %d WAL frames", frames-copied, frames)
	}
	return nil
}
