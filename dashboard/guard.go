// Package dashboard is the local, read-only inspection dashboard for one
// memory stack (docs/decisions.md#dashboard). This file holds the rules
// every dashboard response follows, whatever the route: it binds to
// 127.0.0.1 only, it is read-only, errors are generic, and responses carry
// X-Content-Type-Options: nosniff and a Content-Security-Policy that allows
// only the dashboard's own files.
package dashboard

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/internal/loopback"
)

// DefaultPort is the dashboard's default listening port.
const DefaultPort = 8420

// ListenAddr is the only address the dashboard listens on: loopback, so
// the unauthenticated dashboard is never reachable from another machine.
func ListenAddr(port int) (string, error) {
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("dashboard: port must be 1-65535, got %d", port)
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

// ContentSecurityPolicy lets the page load scripts, styles, images and
// data only from the dashboard itself: no inline script, no other origin,
// no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Guard wraps the dashboard's routes: only requests whose Host header is a
// loopback name (127.0.0.1, localhost, [::1], any port) are served, others
// get a generic 421, so a web page cannot read the dashboard through DNS
// rebinding; only GET and HEAD are served (405 otherwise), a trailing slash
// is ignored, every response carries the security headers and a request
// id, and a panic becomes a generic 500 with the detail only in the log.
// No CORS header is ever sent: other origins cannot read the answers.
func Guard(routes http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		// Answers are the stack as it is now: never cached.
		h.Set("Cache-Control", "no-store")
		h.Set("X-Request-Id", newRequestID())
		if !loopback.Host(r.Host) {
			writeError(w, http.StatusMisdirectedRequest)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed)
			return
		}
		if len(r.URL.Path) > 1 && strings.HasSuffix(r.URL.Path, "/") {
			r.URL.Path = strings.TrimRight(r.URL.Path, "/")
		}
		defer func() {
			if p := recover(); p != nil {
				logger.Error("dashboard handler panicked", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				writeError(w, http.StatusInternalServerError)
			}
		}()
		routes.ServeHTTP(w, r)
	})
}

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// errorBody is the error object of the failure envelope (docs/decisions.md#envelope).
type errorBody struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	RequestID string         `json:"request_id"`
	Details   map[string]any `json:"details,omitempty"`
}

// genericCodes name the statuses the dashboard answers without a domain
// error.
var genericCodes = map[int]string{
	http.StatusNotFound:            string(domain.KindNotFound),
	http.StatusMethodNotAllowed:    "method_not_allowed",
	http.StatusMisdirectedRequest:  "misdirected_request",
	http.StatusInternalServerError: string(domain.KindInternal),
}

// writeError sends a generic error: the status text and nothing about the
// cause, so the dashboard reveals no internal detail.
func writeError(w http.ResponseWriter, status int) {
	writeFailure(w, status, errorBody{Code: genericCodes[status], Message: http.StatusText(status)})
}

// writeFailure sends the failure envelope.
func writeFailure(w http.ResponseWriter, status int, body errorBody) {
	body.RequestID = w.Header().Get("X-Request-Id")
	writeJSON(w, status, struct {
		Success bool      `json:"success"`
		Error   errorBody `json:"error"`
	}{false, body})
}
