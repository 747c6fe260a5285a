package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/postgres"
)

// TestRateBucketsSharedAcrossNodes: two nodes (two connection pools on one
// database) hammering one key together get exactly the burst, not twice it;
// another key has its own bucket, and the bucket refills over time.
func TestRateBucketsSharedAcrossNodes(t *testing.T) {
	db := openDB(t)
	var schema string
	ctx := context.Background()
	if err := db.Pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	other, err := postgres.Open(ctx, withSearchPath(t, pg.URL(t), schema))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	nodes := []*postgres.RateBuckets{postgres.NewRateBuckets(db), postgres.NewRateBuckets(other)}
	const burst, perSecond = 10, 0.001 // no refill within the test
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, _, err := nodes[i%2].Take(ctx, "k1", perSecond, burst, true)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed != burst {
		t.Fatalf("%d takes allowed across two nodes, want the burst %d", allowed, burst)
	}
	if ok, tokens, err := nodes[0].Take(ctx, "k1", perSecond, burst, false); err != nil || ok || tokens >= 1 {
		t.Fatalf("a peek at the empty bucket = %v, %.2f tokens, %v; want refused", ok, tokens, err)
	}
	if ok, tokens, err := nodes[1].Take(ctx, "k2", perSecond, burst, true); err != nil || !ok || tokens != burst-1 {
		t.Fatalf("another key's first take = %v, %.2f tokens, %v; want allowed with %d left", ok, tokens, err, burst-1)
	}
	// A fast refill: 1000 tokens/s brings the empty bucket back within ms.
	time.Sleep(5 * time.Millisecond)
	if ok, _, err := nodes[0].Take(ctx, "k1", 1000, burst, true); err != nil || !ok {
		t.Fatalf("after a refill the take = %v, %v; want allowed", ok, err)
	}
	if err := nodes[0].Prune(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM rate_buckets`).Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("prune of an hour's idleness left %d rows (%v), want the 2 recent ones", rows, err)
	}
	if err := nodes[0].Prune(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM rate_buckets`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("prune of all left %d rows (%v)", rows, err)
	}
}
