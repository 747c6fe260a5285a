// Package dashboard is the local, read-only inspection dashboard for one
// memory stack (interface.md "Dashboard API"). This file holds the rules
// every dashboard response follows, whatever the route: it binds to
// 127.0.0.1 only, it is read-only, errors are generic, and responses carry
// X-Content-Type-Options: nosniff.
package dashboard

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

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

// Guard wraps the dashboard's routes: only requests whose Host header is a
// loopback name (127.0.0.1, localhost, [::1], any port) are served, others
// get a generic 421, so a web page cannot read the dashboard through DNS
// rebinding; only GET and HEAD are served (405 otherwise), a trailing slash
// is ignored, every response says nosniff, and a panic becomes a generic
// 500 with the detail only in the log.
func Guard(routes http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !loopback.Host(r.Host) {
			WriteError(w, http.StatusMisdirectedRequest)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			WriteError(w, http.StatusMethodNotAllowed)
			return
		}
		if len(r.URL.Path) > 1 && strings.HasSuffix(r.URL.Path, "/") {
			r.URL.Path = strings.TrimRight(r.URL.Path, "/")
		}
		defer func() {
			if p := recover(); p != nil {
				logger.Error("dashboard handler panicked", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				WriteError(w, http.StatusInternalServerError)
			}
		}()
		routes.ServeHTTP(w, r)
	})
}

// WriteError sends a generic error: the status text and nothing about the
// cause, so the dashboard reveals no internal detail.
func WriteError(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": http.StatusText(status)})
}
