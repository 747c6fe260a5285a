package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
)

// ConsistencyTokenHeader carries read-your-writes across nodes: every
// response to a request that wrote names the write's log position in it,
// and a request that sends it back waits until this node's read models
// include that position. The value is opaque to clients.
const ConsistencyTokenHeader = "Engram-Consistency-Token"

// DefaultConsistencyWait bounds how long a request waits for its
// consistency token before it is answered 503 not_yet_consistent.
const DefaultConsistencyWait = 5 * time.Second

// consistencyTokenPrefix versions the token's format.
const consistencyTokenPrefix = "v1."

// Visibility reports when this node's read models have applied a log
// position (the projection engine).
type Visibility interface {
	WaitFor(ctx context.Context, position uint64) error
}

// FormatConsistencyToken is the consistency token of a write at position
// (the value of ConsistencyTokenHeader; the MCP adapter returns it in a
// tool result's _meta).
func FormatConsistencyToken(position uint64) string {
	return consistencyTokenPrefix + strconv.FormatUint(position, 10)
}

func parseConsistencyToken(token string) (uint64, error) {
	digits, ok := strings.CutPrefix(token, consistencyTokenPrefix)
	position, err := strconv.ParseUint(digits, 10, 64)
	if !ok || err != nil || position == 0 {
		e := domain.Invalid("", "the %s header %q is not a consistency token this server issued", ConsistencyTokenHeader, token)
		e.Code = "invalid_consistency_token"
		return 0, e.WithDetail("header", ConsistencyTokenHeader)
	}
	return position, nil
}

// withConsistency names the log position of the request's own writes in
// its response. The wait for a token the request sends comes later, in
// awaitConsistencyToken, once the client is known.
func (s *Server) withConsistency(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, tracker := commands.TrackPositions(r.Context())
		next.ServeHTTP(&tokenWriter{ResponseWriter: w, tracker: tracker}, r.WithContext(ctx))
	})
}

// DefaultMaxConsistencyWaits is how many requests of one client may wait
// for their consistency tokens at once when Config.MaxConsistencyWaits is
// zero.
const DefaultMaxConsistencyWaits = 8

// awaitConsistencyToken waits for the position the request's consistency
// token names, if it sends one. It runs once the request's client is
// known (after authentication, or after the per-IP rate limit on the
// routes that take no credential), so a request that is not let in holds
// nothing. client names whose waits are bounded together: a user
// ("user:…"), or an IP ("ip:…"). A malformed token is 400 invalid_consistency_token;
// a position beyond the log's head, which no response issued, is refused
// at once (400 consistency_token_ahead_of_log) instead of waited for; a
// client that already has MaxConsistencyWaits requests waiting is refused
// 429 too_many_consistency_waits, so its waits cannot take every
// in-flight slot.
func (s *Server) awaitConsistencyToken(r *http.Request, client string) error {
	ctx := r.Context()
	token := r.Header.Get(ConsistencyTokenHeader)
	if token == "" {
		return nil
	}
	position, err := parseConsistencyToken(token)
	if err != nil {
		return err
	}
	if s.cfg.LogHead != nil {
		head, err := s.cfg.LogHead(ctx)
		if err != nil {
			return err
		}
		if position > head {
			e := domain.Invalid("", "the %s header names log position %d, but the event log ends at %d: no response of this service issued it", ConsistencyTokenHeader, position, head)
			e.Code = "consistency_token_ahead_of_log"
			return e.WithDetail("header", ConsistencyTokenHeader)
		}
	}
	release, ok := s.tokenWaits.acquire(client)
	if !ok {
		e := domain.Errorf(domain.KindRateLimited, "%d requests of this client already wait for their %s; retry after the time in Retry-After", s.tokenWaits.limit, ConsistencyTokenHeader)
		e.Code = "too_many_consistency_waits"
		return e.WithDetail("limit", s.tokenWaits.limit).WithDetail(domain.DetailRetryAfterSeconds, 1)
	}
	defer release()
	return s.awaitPosition(ctx, position)
}

// clientWaits counts, per client, the requests waiting for a consistency
// token, up to limit each.
type clientWaits struct {
	limit   int
	mu      sync.Mutex
	waiting map[string]int
}

func newClientWaits(limit int) *clientWaits {
	if limit <= 0 {
		limit = DefaultMaxConsistencyWaits
	}
	return &clientWaits{limit: limit, waiting: map[string]int{}}
}

// acquire counts one more wait of client, unless it has limit already.
func (c *clientWaits) acquire(client string) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting[client] >= c.limit {
		return nil, false
	}
	c.waiting[client]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.waiting[client]--; c.waiting[client] == 0 {
			delete(c.waiting, client)
		}
	}, true
}

func (s *Server) awaitPosition(ctx context.Context, position uint64) error {
	if s.cfg.Visibility == nil {
		return nil
	}
	return s.awaitBounded(ctx, "the write the "+ConsistencyTokenHeader+" names", func(ctx context.Context) error {
		return s.cfg.Visibility.WaitFor(ctx, position)
	})
}

// awaitCredentials brings this node's credentials up to the shared log's
// head before one is checked, so a key revoked on another node is refused
// here at once (see Config.CredentialsCurrent).
func (s *Server) awaitCredentials(ctx context.Context) error {
	if s.cfg.CredentialsCurrent == nil {
		return nil
	}
	return s.awaitBounded(ctx, "the credential changes of the shared event log", s.cfg.CredentialsCurrent)
}

// awaitBounded runs wait for at most ConsistencyWait; past it the request
// is 503 not_yet_consistent with Retry-After.
func (s *Server) awaitBounded(ctx context.Context, what string, wait func(context.Context) error) error {
	bound := s.cfg.ConsistencyWait
	if bound <= 0 {
		bound = DefaultConsistencyWait
	}
	waitCtx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	err := wait(waitCtx)
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	e := domain.Errorf(domain.KindNotYetConsistent, "this node has not yet applied %s (waited %s); retry, or send the request to the node that took the write", what, bound)
	return e.WithDetail(domain.DetailRetryAfterSeconds, 1)
}

// tokenWriter sets the consistency token header as the response starts,
// once the handler's writes are done.
type tokenWriter struct {
	http.ResponseWriter
	tracker *commands.PositionTracker
	started bool
}

func (w *tokenWriter) start() {
	if w.started {
		return
	}
	w.started = true
	if last := w.tracker.Last(); last > 0 {
		w.Header().Set(ConsistencyTokenHeader, FormatConsistencyToken(last))
	}
}

func (w *tokenWriter) WriteHeader(status int) {
	w.start()
	w.ResponseWriter.WriteHeader(status)
}

func (w *tokenWriter) Write(p []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *tokenWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
