package cli

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/engram-memory/engram/internal/loopback"
)

// servePprof serves the runtime profiles of net/http/pprof on addr, a
// listener of its own: they are never part of the API handler. The
// endpoints carry no authentication, so addr must be a loopback address,
// and only requests naming a loopback host are answered (DNS rebinding).
// /debug/pprof/cmdline shows the command line with the passwords of URLs
// (e.g. --smtp-url) masked. It returns the address it listens on.
func servePprof(addr string, logger *slog.Logger) (bound string, stop func(), err error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", nil, fmt.Errorf("--pprof-addr %q: %w", addr, err)
	}
	if !loopback.Addr(addr) {
		return "", nil, fmt.Errorf("--pprof-addr %q: only a loopback address is allowed (the profiles are unauthenticated)", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.Handle("/debug/pprof/cmdline", redactedCmdline(os.Args))
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serveSide("pprof", addr, mux, logger)
}

// DefaultMetricsAddr is where metrics are served unless --metrics-addr
// says otherwise: loopback, on the port OpenTelemetry's Prometheus
// exporters use by default.
const DefaultMetricsAddr = "127.0.0.1:9464"

// serveMetrics serves the Prometheus metrics at /metrics on addr, a
// listener of its own. On a loopback address only requests naming a
// loopback host are answered, as for pprof and the dashboard; any other
// address is the operator's choice to let a scraper reach it (a pod's
// port) and is served to whoever can.
func serveMetrics(addr string, metrics http.Handler, logger *slog.Logger) (bound string, stop func(), err error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", nil, fmt.Errorf("--metrics-addr %q: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	return serveSide("metrics", addr, mux, logger)
}

// serveSide serves handler on a listener of its own at addr (the --NAME-addr
// flag's), apart from the API; on a loopback address only requests naming
// a loopback host are answered. It returns the address it listens on.
func serveSide(name, addr string, handler http.Handler, logger *slog.Logger) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--%s-addr: listen on %s: %w", name, addr, err)
	}
	if loopback.Addr(addr) {
		handler = loopbackHostOnly(handler)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	logger.Info(name+" serving", "addr", ln.Addr().String())
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// loopbackHostOnly answers 421 with a generic body to requests whose Host
// header is not a loopback name.
func loopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopback.Host(r.Host) {
			http.Error(w, http.StatusText(http.StatusMisdirectedRequest), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// redactedCmdline replaces pprof.Cmdline: the same NUL-separated command
// line, with the password of every URL in it masked, whether the URL is an
// argument of its own or the value of --flag=URL.
func redactedCmdline(args []string) http.Handler {
	shown := make([]string, len(args))
	for i, arg := range args {
		shown[i] = redactArg(arg)
	}
	body := strings.Join(shown, "\x00")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, body)
	})
}

func redactArg(arg string) string {
	if name, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(name, "-") {
		return name + "=" + redactURL(value)
	}
	return redactURL(arg)
}

// redactURL masks the password of every scheme://user:password@host in s.
// It does not parse the URL: a password that a URL parser rejects (an
// unescaped '/', '%' or '#') must be masked all the same, so everything
// between the first ':' after "://" and the last '@' is masked.
func redactURL(s string) string {
	scheme := strings.Index(s, "://")
	if scheme < 0 {
		return s
	}
	rest := s[scheme+3:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return s
	}
	return s[:scheme+3] + user + ":xxxxx" + rest[at:]
}
