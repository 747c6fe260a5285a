package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/leasetest"
	"github.com/engram-memory/engram/infra/postgres"
)

func TestLeasesConformance(t *testing.T) {
	pg.URL(t) // skips, saying why, without a server
	leasetest.Run(t, leasetest.Harness{New: func(t *testing.T) leasetest.Service { return leaseService{db: openDB(t)} }})
}

// leaseService is one schema's leases; its nodes share the schema's pool
// (a node's leases take connections of their own either way).
type leaseService struct{ db *postgres.DB }

func (s leaseService) Node(t *testing.T, name string) domain.ProjectionLeases {
	return postgres.NewLeases(s.db, name, 100*time.Millisecond)
}

// Sever terminates the backend holding the projection's lock, as
// PostgreSQL does when it notices the holder's socket is gone.
func (s leaseService) Sever(t testing.TB, projection string) {
	var n int
	err := s.db.Pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(k.pid)) FROM pg_locks AS k JOIN projection_leases AS p
		ON (k.classid::bigint << 32) | k.objid::bigint = p.id
		WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 1 AND p.name = $1`, projection).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("terminate the holder of %s: %d backends, %v", projection, n, err)
	}
}

// BenchmarkLeaseTakeover measures how long a waiting node takes to hold a
// lease after the holder's session ends (as when its process is killed):
// from pg_terminate_backend of the holder's lease session to the waiter's
// Acquire returning.
func BenchmarkLeaseTakeover(b *testing.B) {
	pg.URL(b)
	db := openDB(b)
	s := leaseService{db: db}
	ctx := context.Background()
	holder, waiter := postgres.NewLeases(db, "holder", 0), postgres.NewLeases(db, "waiter", 0)
	var total time.Duration
	for b.Loop() {
		held, err := holder.Acquire(ctx, "keyword")
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan domain.Lease, 1)
		go func() {
			lease, err := waiter.Acquire(ctx, "keyword")
			if err != nil {
				b.Error(err)
			}
			got <- lease
		}()
		time.Sleep(50 * time.Millisecond) // the waiter is queued on the lock
		start := time.Now()
		s.Sever(b, "keyword")
		lease := <-got
		total += time.Since(start)
		_ = held.Release(ctx)
		_ = lease.Release(ctx)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/takeover")
}
