package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// maxReadStmts bounds the read queries the readers keep prepared: the
// per-request texts are constants and a few generated shapes (the memory
// list's filters, the id lists of memIDSizes), a few hundred in all. Past
// the bound a text is parsed per call, as before the cache.
const maxReadStmts = 1024

// stmtCache keeps the hot read queries prepared. The driver parses a query
// afresh on every QueryContext, which costs as much as running a small one
// (search hydration, authentication and reading a memory run one per
// request); a *sql.Stmt is prepared once per pooled connection and reused.
type stmtCache struct {
	db  *sql.DB
	max int

	stmts sync.Map // query text → *sql.Stmt

	mu     sync.Mutex // serialises preparing and closing
	kept   int        // statements in stmts
	closed bool

	// prepares counts the statements the cache prepared.
	prepares atomic.Int64
}

func newStmtCache(db *sql.DB, max int) *stmtCache {
	return &stmtCache{db: db, max: max}
}

var errStmtCacheClosed = errors.New("sqlite: database is closed")

// stmt returns the prepared statement of query, preparing it on first use;
// nil, with no error, when the cache is full and query not in it.
func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.stmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errStmtCacheClosed
	}
	if s, ok := c.stmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	if c.kept >= c.max {
		return nil, nil
	}
	c.prepares.Add(1)
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts.Store(query, s)
	c.kept++
	return s, nil
}

// query runs query's cached statement, or past the bound the text itself.
func (c *stmtCache) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.db.QueryContext(ctx, query, args...)
	}
	return s.QueryContext(ctx, args...)
}

// close closes every statement; later calls fail.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	c.stmts.Range(func(k, v any) bool {
		errs = append(errs, v.(*sql.Stmt).Close())
		c.stmts.Delete(k)
		return true
	})
	c.kept = 0
	return errors.Join(errs...)
}

// maxWriterStmts bounds the statements the writer keeps prepared: the
// write side's texts are constants and a few generated shapes (the
// multi-row INSERTs of rowInserts, nine a table), a few hundred in all.
// Past the bound a text is prepared per transaction, as before the cache.
const maxWriterStmts = 1024

// writerStmts keeps the write side's statements prepared on the writer
// connection. Inside a transaction a statement runs through tx.StmtContext,
// which reuses the statement database/sql already prepared on the
// transaction's connection; without it every transaction (each batch of
// each projection, each group commit of the log) parsed its statements
// again, most of them more costly to parse than to run.
//
// The writer pool has one connection, which an open transaction holds:
// preparing on the pool from inside a transaction would wait for that
// transaction forever. So a text met for the first time is prepared on the
// transaction alone and noted; the writer prepares the noted texts for
// good once the transaction has ended (prepareWanted). Statements need no
// invalidating on a schema change: SQLite prepares a statement again by
// itself when the schema it was prepared against changed.
type writerStmts struct {
	db  *sql.DB
	max int

	// mu is never held while waiting for the writer connection: a
	// transaction holding it looks statements up under mu.
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt // query text → statement on the writer pool
	wanted map[string]bool      // texts to prepare once the transaction ends
	closed bool

	// prepares counts the statements the write side prepared, in a
	// transaction or for good.
	prepares atomic.Int64
}

func newWriterStmts(db *sql.DB, max int) *writerStmts {
	return &writerStmts{db: db, max: max, stmts: map[string]*sql.Stmt{}, wanted: map[string]bool{}}
}

// inTx returns query's statement for tx: the writer's prepared one when it
// has it, otherwise one prepared on tx alone (closed with tx), noting the
// text for prepareWanted while the cache has room.
func (c *writerStmts) inTx(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	s, ok := c.stmts[query]
	if !ok && !c.closed && len(c.stmts)+len(c.wanted) < c.max {
		c.wanted[query] = true
	}
	c.mu.Unlock()
	if ok {
		return tx.StmtContext(ctx, s), nil
	}
	c.prepares.Add(1)
	s, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("sqlite: prepare: %w", err)
	}
	return s, nil
}

// prepareWanted prepares the texts transactions noted, on the writer pool.
// It must run with no transaction of the writer open in this goroutine. A
// text that fails to prepare (ctx ended, the database closed) is noted
// again by the next transaction that runs it.
func (c *writerStmts) prepareWanted(ctx context.Context) {
	c.mu.Lock()
	wanted := c.wanted
	if len(wanted) == 0 || c.closed {
		c.mu.Unlock()
		return
	}
	c.wanted = map[string]bool{}
	c.mu.Unlock()
	for query := range wanted {
		s, err := c.db.PrepareContext(ctx, query)
		if err != nil {
			continue
		}
		c.prepares.Add(1)
		c.mu.Lock()
		_, had := c.stmts[query] // prepared meanwhile by another caller
		keep := !had && !c.closed && len(c.stmts) < c.max
		if keep {
			c.stmts[query] = s
		}
		c.mu.Unlock()
		if !keep {
			_ = s.Close()
		}
	}
}

// close closes every statement; later transactions prepare their own.
func (c *writerStmts) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for query, s := range c.stmts {
		errs = append(errs, s.Close())
		delete(c.stmts, query)
	}
	clear(c.wanted)
	return errors.Join(errs...)
}
