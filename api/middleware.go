package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/engram-memory/engram/domain"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	principalKey
)

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// withRequestID takes a sane incoming X-Request-Id or makes one, and echoes
// it on every response.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = "req_" + hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// statusRecorder remembers the status for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// withAccessLog logs one line per request, and turns panics into 500s.
func withAccessLog(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
			defer func() {
				if p := recover(); p != nil {
					logger.ErrorContext(r.Context(), "panic", "panic", p, "stack", string(debug.Stack()), "request_id", requestID(r.Context()))
					writeError(rec, r, logger, domain.Errorf(domain.KindInternal, "panic"))
				}
				// The path is logged, never the query or body: they may carry secrets.
				logger.InfoContext(r.Context(), "http", "method", r.Method, "path", r.URL.Path, "status", rec.status,
					"duration_ms", float64(time.Since(start).Microseconds())/1000, "request_id", requestID(r.Context()))
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// withBodyLimit bounds every request body.
func (s *Server) withBodyLimit(next http.Handler) http.Handler {
	limit := s.cfg.MaxBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			s.fail(w, r, domain.Errorf(domain.KindTooLarge, "request body exceeds the limit of %d bytes", limit).WithDetail("limit", limit))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}
