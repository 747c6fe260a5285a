package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"time"

	"github.com/engram-memory/engram/dashboard"
	"github.com/engram-memory/engram/internal/app"
)

// dashboardCommand serves the read-only dashboard of one stack on
// 127.0.0.1 until interrupted.
func dashboardCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("dashboard", "--stack STACK [--port N] [--no-open] [--verbose]",
		"Serve the read-only dashboard of a stack on 127.0.0.1 (the stack is never written; the command line can keep working on it meanwhile).")
	port := fs.Int("port", dashboard.DefaultPort, "listening port on 127.0.0.1 (0: any free port)")
	fs.IntVar(port, "p", dashboard.DefaultPort, "short for --port")
	noOpen := fs.Bool("no-open", false, "do not open the dashboard in the default browser")
	verbose := fs.Bool("verbose", false, "log every request")
	fs.BoolVar(verbose, "v", false, "short for --verbose")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if c.stack == "" {
		return usageErrorf("dashboard: name the stack to inspect with --stack/-s ('engram stacks list' shows them)")
	}
	if *port < 0 || *port > 65535 {
		return usageErrorf("dashboard: --port must be 0-65535, got %d", *port)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))

	st, err := c.openStackReadOnly(ctx, c.stack, logger)
	if err != nil {
		return err
	}
	defer st.Close()

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		return fmt.Errorf("dashboard: cannot listen on 127.0.0.1:%d (is another dashboard or program using it? choose another with --port): %w", *port, err)
	}
	handler := dashboard.New(dashboard.Config{UserID: localUserID, AgentID: c.stack, Queries: st.Queries, Logger: logger}).Handler()
	if *verbose {
		handler = logRequests(handler, logger)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute, IdleTimeout: time.Minute}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(c.stdout, "engram dashboard: stack %s at %s (read-only; Ctrl-C stops it)\n", c.stack, url)
	if !*noOpen {
		openBrowser(url, logger)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("dashboard: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}

// openStackReadOnly opens an existing stack for the dashboard: a missing
// stack is not_found, and nothing is created or written.
func (c *cli) openStackReadOnly(ctx context.Context, name string, logger *slog.Logger) (*app.ReadOnly, error) {
	dir, err := c.stackDir(name)
	if err != nil {
		return nil, err
	}
	exists, err := c.stackExists(name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, errNoStack(name)
	}
	cfg, err := stackConfig(c.home, dir)
	if err != nil {
		return nil, err
	}
	settings, err := cfg.settings(logger)
	if err != nil {
		return nil, err
	}
	st, err := app.OpenReadOnly(ctx, app.ReadOnlyConfig{Settings: settings, UserID: localUserID, AgentID: name})
	if err != nil {
		return nil, fmt.Errorf("open stack %s read-only: %w", name, err)
	}
	return st, nil
}

// openBrowser shows url in the default browser when xdg-open is there;
// without one (a server, a container) the printed address is enough.
func openBrowser(url string, logger *slog.Logger) {
	path, err := exec.LookPath("xdg-open")
	if err != nil {
		logger.Debug("no browser opener found; open the address yourself", "url", url)
		return
	}
	cmd := exec.Command(path, url)
	if err := cmd.Start(); err != nil {
		logger.Warn("could not open a browser; open the address yourself", "url", url, "error", err)
		return
	}
	go func() { _ = cmd.Wait() }()
}

// logRequests logs each request at debug level (--verbose).
func logRequests(next http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		next.ServeHTTP(w, r)
		logger.Debug("dashboard request", "method", r.Method, "path", r.URL.Path, "duration_ms", float64(time.Since(start).Microseconds())/1000)
	})
}
