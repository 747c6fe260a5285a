package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"sync"
	"time"

	"github.com/engram-memory/engram/domain"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	principalKey
)

// validRequestID is compiled at first use, not at every process start (every command of the command line is one).
var validRequestID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

// withRequestID takes a sane incoming X-Request-Id or makes one, and echoes
// it on every response.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID().MatchString(id) {
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

// Unwrap lets http.ResponseController reach the connection.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// withIOBounds keeps a slow, stalled or rejected client from holding the
// connection: the body is bounded in size (MaxBodyBytes) and must arrive
// within BodyReadTimeout, the response must be taken within WriteTimeout
// of its start, and a failure answered before the body was read closes the
// connection at once instead of reading the rest of the body first (Go's
// server would otherwise read up to 256 KiB of it, at the client's pace).
func (s *Server) withIOBounds(next http.Handler) http.Handler {
	limit := s.cfg.MaxBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		gw := &guardedWriter{ResponseWriter: w, rc: rc, writeTimeout: s.cfg.WriteTimeout}
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(gw, r)
			return
		}
		// A deadline is set only while a body is expected: once it is read,
		// Go's server keeps reading the connection in the background, and
		// a deadline passing then would cancel the request's context.
		body := &trackedBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit), rc: rc}
		if s.cfg.BodyReadTimeout > 0 {
			_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout))
			body.deadline = true
		}
		gw.body = body
		if r.ContentLength > limit {
			s.failUnrouted(gw, r, domain.Errorf(domain.KindTooLarge, "request body exceeds the limit of %d bytes", limit).WithDetail("limit", limit))
			return
		}
		r.Body = body
		next.ServeHTTP(gw, r)
	})
}

// trackedBody notes when the request body has been read to its end, and
// then lifts the body's read deadline.
type trackedBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	deadline bool
	done     bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		if b.deadline {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

// guardedWriter applies the write deadline when the response starts, and
// closes the connection without draining when a failure is answered while
// the request body is unread.
type guardedWriter struct {
	http.ResponseWriter
	rc           *http.ResponseController
	writeTimeout time.Duration
	body         *trackedBody // nil without a request body
	wroteHeader  bool
}

func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *guardedWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		if w.writeTimeout > 0 {
			_ = w.rc.SetWriteDeadline(time.Now().Add(w.writeTimeout))
		}
		if code >= 400 && w.body != nil && !w.body.done {
			w.Header().Set("Connection", "close")
			_ = w.rc.SetReadDeadline(time.Now()) // the server's drain of the body fails at once
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *guardedWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// limitInFlight answers 503 server_busy with Retry-After when MaxInFlight
// requests are already being served; /healthz stays answerable, so a busy
// server is not mistaken for a dead one.
func (s *Server) limitInFlight(next http.Handler) http.Handler {
	if s.cfg.MaxInFlight <= 0 {
		return next
	}
	slots := make(chan struct{}, s.cfg.MaxInFlight)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			w.Header().Set("Retry-After", "1")
			s.failUnrouted(w, r, serverBusy(s.cfg.MaxInFlight))
			return
		}
		defer func() { <-slots }()
		next.ServeHTTP(w, r)
	})
}

func serverBusy(limit int) error {
	return (&domain.Error{
		Kind: domain.KindProviderUnavailable, Code: "server_busy",
		Message: "the server is serving as many requests as it allows at once; retry after the time in Retry-After",
	}).WithDetail("limit", limit)
}
