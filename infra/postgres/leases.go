package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
)

// Leases is domain.ProjectionLeases on PostgreSQL session-level advisory
// locks. Each held lease is a lock held by a connection of its own: the
// lock lives exactly as long as that session, so a node killed with
// SIGKILL loses its leases as soon as PostgreSQL sees its socket close
// (at once on one host; within the server's TCP keepalive probes, set to
// ~8 s here, when the node's host vanishes).
//
// The holder checks its session every check interval, and Lost closes at
// the first failed check. That check interval (1 s by default) is shorter
// than the server's keepalive detection, so a node cut off from the
// database stops writing before another node can take its lease over.
type Leases struct {
	db    *DB
	node  string
	check time.Duration
}

var _ domain.ProjectionLeases = (*Leases)(nil)

// DefaultLeaseCheck is how often a holder checks its lease's session.
const DefaultLeaseCheck = time.Second

// NewLeases returns the leases of node (its name in Holder) over db;
// check is how often a held lease's session is checked (0: DefaultLeaseCheck).
func NewLeases(db *DB, node string, check time.Duration) *Leases {
	if check <= 0 {
		check = DefaultLeaseCheck
	}
	return &Leases{db: db, node: node, check: check}
}

// key returns the advisory lock key of the projection's lease, creating
// its row on first use.
func (l *Leases) key(ctx context.Context, projection string) (int64, error) {
	// Two statements, not one: a row another node inserted concurrently
	// is visible only to a statement that starts after its commit.
	if _, err := l.db.Pool.Exec(ctx, `INSERT INTO projection_leases (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, projection); err != nil {
		return 0, fmt.Errorf("postgres: lease %s: %w", projection, err)
	}
	var id int64
	if err := l.db.Pool.QueryRow(ctx, `SELECT id FROM projection_leases WHERE name = $1`, projection).Scan(&id); err != nil {
		return 0, fmt.Errorf("postgres: lease %s: %w", projection, err)
	}
	return id, nil
}

// Acquire implements domain.ProjectionLeases: it opens the lease's own
// connection and waits there in pg_advisory_lock, so it is granted the
// moment the holder's session ends.
func (l *Leases) Acquire(ctx context.Context, projection string) (domain.Lease, error) {
	id, err := l.key(ctx, projection)
	if err != nil {
		return nil, err
	}
	cfg := l.db.Pool.Config().ConnConfig.Copy()
	// The server probes an idle lease session after 5 s, then every 1 s,
	// 3 times: a vanished holder's locks are freed within ~8 s.
	for k, v := range map[string]string{
		"application_name": "engram projection lease", "tcp_keepalives_idle": "5", "tcp_keepalives_interval": "1", "tcp_keepalives_count": "3",
	} {
		cfg.RuntimeParams[k] = v
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: lease %s: connect: %w", projection, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, id); err != nil {
		closeQuietly(conn)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("postgres: lease %s: lock: %w", projection, err)
	}
	// The followers are told who holds it now (see Changes).
	if _, err := conn.Exec(ctx, `WITH named AS (UPDATE projection_leases SET holder = $2, acquired_at = now() WHERE id = $1 RETURNING name)
		SELECT pg_notify($3, $4) FROM named`, id, l.node, changesChannel, domain.LeaseChange(projection)); err != nil {
		closeQuietly(conn)
		return nil, fmt.Errorf("postgres: lease %s: name holder: %w", projection, err)
	}
	lease := &lease{conn: conn, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go lease.watch(l.check)
	return lease, nil
}

// Holder implements domain.ProjectionLeases: the node named in the lease's
// row, if its lock is granted now (pg_locks shows a bigint key as its high
// and low 32 bits).
func (l *Leases) Holder(ctx context.Context, projection string) (string, error) {
	var holder string
	err := l.db.Pool.QueryRow(ctx, `SELECT p.holder FROM projection_leases AS p WHERE p.name = $1 AND EXISTS (
		SELECT 1 FROM pg_locks AS k
		WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 1
		  AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND (k.classid::bigint << 32) | k.objid::bigint = p.id)`, projection).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("postgres: lease %s holder: %w", projection, err)
	}
	return holder, nil
}

// lease is one held lease: its connection, checked by watch until
// released or lost.
type lease struct {
	conn *pgx.Conn
	lost chan struct{}
	// stop asks watch to end; done is closed when it has (and the
	// connection is closed).
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func (l *lease) Lost() <-chan struct{} { return l.lost }

// watch checks the session every interval; a failed check (an error or
// no answer within the interval) ends the lease. Closing the connection
// ends the session, which releases the lock.
func (l *lease) watch(interval time.Duration) {
	defer close(l.done)
	defer close(l.lost)
	defer closeQuietly(l.conn)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			// Unlocked before the connection closes: the session's end is
			// asynchronous on the server, the unlock is not.
			ctx, cancel := context.WithTimeout(context.Background(), interval)
			_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
			cancel()
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		err := l.conn.Ping(ctx)
		cancel()
		if err != nil {
			return
		}
	}
}

// Release implements domain.Lease: the lock is freed and the lease's
// session ended.
func (l *lease) Release(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func closeQuietly(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
