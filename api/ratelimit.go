package api

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimit is a token bucket: Burst requests at once, refilled at PerSecond.
// A zero PerSecond disables the limit.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// RateBuckets keeps the token buckets of a limit. Take refills key's bucket
// to now, then takes one token if take and one is there; it reports whether
// there was a token and how many are left. The in-process buckets serve one
// node; a store shared by every node (PostgreSQL) keeps one bucket per key
// across nodes, so N nodes do not multiply a limit by N.
type RateBuckets interface {
	Take(ctx context.Context, key string, perSecond float64, burst int, take bool) (ok bool, tokens float64, err error)
}

// limiterSet applies one limit, with buckets kept under namespace (a
// shared store holds every set's buckets).
type limiterSet struct {
	limit     RateLimit
	namespace string
	buckets   RateBuckets
	now       func() time.Time
}

func newLimiterSet(limit RateLimit, namespace string, shared RateBuckets) *limiterSet {
	l := &limiterSet{limit: limit, namespace: namespace, buckets: shared, now: time.Now}
	if shared == nil {
		l.buckets = &localBuckets{now: l.nowFunc, buckets: make(map[string]*bucket)}
	}
	return l
}

// nowFunc reads l.now at each call, so a test may replace l.now.
func (l *limiterSet) nowFunc() time.Time { return l.now() }

// allow takes one token for key and sets the X-RateLimit-* headers (and
// Retry-After when refused).
func (l *limiterSet) allow(ctx context.Context, w http.ResponseWriter, key string) (bool, error) {
	return l.check(ctx, w, key, true)
}

// hasToken reports whether key has a token left, without taking it; when
// it has none it sets the headers of a refusal, as allow does.
func (l *limiterSet) hasToken(ctx context.Context, w http.ResponseWriter, key string) (bool, error) {
	return l.check(ctx, w, key, false)
}

func (l *limiterSet) check(ctx context.Context, w http.ResponseWriter, key string, take bool) (bool, error) {
	if l.limit.PerSecond <= 0 {
		return true, nil
	}
	ok, tokens, err := l.buckets.Take(ctx, l.namespace+key, l.limit.PerSecond, l.limit.Burst, take)
	if err != nil {
		return false, fmt.Errorf("api: rate limit: %w", err)
	}
	if ok && !take {
		return true, nil
	}
	now := l.now()
	refill := time.Duration((float64(l.limit.Burst) - tokens) / l.limit.PerSecond * float64(time.Second))
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(l.limit.Burst))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, int(math.Floor(tokens)))))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(refill).Unix(), 10))
	if !ok {
		wait := (1 - tokens) / l.limit.PerSecond
		h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait)))))
	}
	return ok, nil
}

// localBuckets are one node's in-process buckets.
type localBuckets struct {
	now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim      *rate.Limiter
	lastSeen time.Time
}

// maxIdleBuckets bounds memory: past it, buckets idle long enough to be full
// again are dropped (dropping a full bucket changes nothing).
const maxIdleBuckets = 10000

func (l *localBuckets) Take(_ context.Context, key string, perSecond float64, burst int, take bool) (bool, float64, error) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxIdleBuckets {
			l.evict(now, perSecond, burst)
		}
		b = &bucket{lim: rate.NewLimiter(rate.Limit(perSecond), burst)}
		l.buckets[key] = b
	}
	b.lastSeen = now
	var ok bool
	if take {
		ok = b.lim.AllowN(now, 1)
	} else {
		ok = b.lim.TokensAt(now) >= 1
	}
	return ok, b.lim.TokensAt(now), nil
}

func (l *localBuckets) evict(now time.Time, perSecond float64, burst int) {
	full := time.Duration(float64(burst) / perSecond * float64(time.Second))
	for k, b := range l.buckets {
		if now.Sub(b.lastSeen) > full {
			delete(l.buckets, k)
		}
	}
}

// clientIP is the TCP peer address. Forwarded headers are not trusted: a
// deployment behind a proxy should rate-limit at the proxy.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
