package postgres

import (
	"context"
	"fmt"
	"time"
)

// RateBuckets are token buckets every node shares (api.RateBuckets): each
// take is one atomic statement on the key's row, so N nodes together allow
// what one node would.
type RateBuckets struct {
	db *DB
}

// NewRateBuckets returns the buckets kept in db.
func NewRateBuckets(db *DB) *RateBuckets { return &RateBuckets{db: db} }

// Take refills key's bucket to now at perSecond (capped at burst), then
// takes one token if take and one is there. It reports whether there was a
// token and how many are left. A new key starts with a full bucket.
func (b *RateBuckets) Take(ctx context.Context, key string, perSecond float64, burst int, take bool) (bool, float64, error) {
	taken := 0.0
	if take {
		taken = 1
	}
	var ok bool
	var tokens float64
	err := b.db.Pool.QueryRow(ctx, `
		INSERT INTO rate_buckets AS b (key, tokens, allowed, updated_at)
		VALUES ($1, $3::float8 - $4::float8, $3::float8 >= 1, clock_timestamp())
		ON CONFLICT (key) DO UPDATE SET
			tokens = LEAST($3::float8, b.tokens + EXTRACT(EPOCH FROM clock_timestamp() - b.updated_at)::float8 * $2::float8)
				- CASE WHEN LEAST($3::float8, b.tokens + EXTRACT(EPOCH FROM clock_timestamp() - b.updated_at)::float8 * $2::float8) >= 1 THEN $4::float8 ELSE 0 END,
			allowed = LEAST($3::float8, b.tokens + EXTRACT(EPOCH FROM clock_timestamp() - b.updated_at)::float8 * $2::float8) >= 1,
			updated_at = clock_timestamp()
		RETURNING allowed, tokens`, key, perSecond, float64(burst), taken).Scan(&ok, &tokens)
	if err != nil {
		return false, 0, fmt.Errorf("postgres: rate bucket: %w", err)
	}
	return ok, tokens, nil
}

// Prune drops buckets untouched for idle: a bucket idle long enough to be
// full again is the same as none, so the table holds only recent keys.
func (b *RateBuckets) Prune(ctx context.Context, idle time.Duration) error {
	if _, err := b.db.Pool.Exec(ctx, `DELETE FROM rate_buckets WHERE updated_at < clock_timestamp() - make_interval(secs => $1)`, idle.Seconds()); err != nil {
		return fmt.Errorf("postgres: prune rate buckets: %w", err)
	}
	return nil
}
