package api

import (
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

// limiterSet holds one bucket per key (credential or client IP).
type limiterSet struct {
	limit RateLimit
	now   func() time.Time

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

func newLimiterSet(limit RateLimit) *limiterSet {
	return &limiterSet{limit: limit, now: time.Now, buckets: make(map[string]*bucket)}
}

// allow takes one token for key and sets the X-RateLimit-* headers (and
// Retry-After when refused).
func (l *limiterSet) allow(w http.ResponseWriter, key string) bool {
	return l.check(w, key, true)
}

// hasToken reports whether key has a token left, without taking it; when
// it has none it sets the headers of a refusal, as allow does.
func (l *limiterSet) hasToken(w http.ResponseWriter, key string) bool {
	return l.check(w, key, false)
}

func (l *limiterSet) check(w http.ResponseWriter, key string, take bool) bool {
	if l.limit.PerSecond <= 0 {
		return true
	}
	now := l.now()
	l.mu.Lock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxIdleBuckets {
			l.evict(now)
		}
		b = &bucket{lim: rate.NewLimiter(rate.Limit(l.limit.PerSecond), l.limit.Burst)}
		l.buckets[key] = b
	}
	b.lastSeen = now
	var ok bool
	if take {
		ok = b.lim.AllowN(now, 1)
	} else {
		ok = b.lim.TokensAt(now) >= 1
	}
	tokens := b.lim.TokensAt(now)
	l.mu.Unlock()

	if ok && !take {
		return true
	}
	refill := time.Duration((float64(l.limit.Burst) - tokens) / l.limit.PerSecond * float64(time.Second))
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(l.limit.Burst))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, int(math.Floor(tokens)))))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(refill).Unix(), 10))
	if !ok {
		wait := (1 - tokens) / l.limit.PerSecond
		h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait)))))
	}
	return ok
}

func (l *limiterSet) evict(now time.Time) {
	full := time.Duration(float64(l.limit.Burst) / l.limit.PerSecond * float64(time.Second))
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
