package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmtCache keeps the hot read queries prepared. The driver parses a query
// afresh on every QueryContext, which costs as much as running a small one
// (search hydration and authentication run one per request); a *sql.Stmt
// is prepared once per pooled connection and reused.
type stmtCache struct {
	db *sql.DB

	stmts sync.Map // query text → *sql.Stmt

	mu     sync.Mutex // serialises preparing and closing
	closed bool
}

var errStmtCacheClosed = errors.New("sqlite: database is closed")

// stmt returns the prepared statement of query, preparing it on first use.
// Only a fixed set of query texts may come here (the cache never evicts).
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
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts.Store(query, s)
	return s, nil
}

// query runs a cached statement.
func (c *stmtCache) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
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
	return errors.Join(errs...)
}
