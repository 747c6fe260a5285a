package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

// serverFlags say which server to measure: a running one (--server and
// --api-key), or a fresh embedded one started from --engram-bin (built
// from this module when empty) on --data-dir (a temporary one when empty).
type serverFlags struct {
	server    string
	apiKey    string
	engramBin string
	dataDir   string
	keepData  bool
	serveArgs string
}

func (f *serverFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", "", "base URL of a running server, e.g. http://127.0.0.1:8080/v1 (default: start a fresh embedded one)")
	fs.StringVar(&f.apiKey, "api-key", os.Getenv("ENGRAM_API_KEY"), "API key for --server (env ENGRAM_API_KEY)")
	fs.StringVar(&f.engramBin, "engram-bin", "", "engram binary to start (default: go build "+testserver.MainPackage+" into a temp dir)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory of the started server (default: a temp dir, removed afterwards)")
	fs.BoolVar(&f.keepData, "keep-data", false, "keep the temp data directory of the started server")
	fs.StringVar(&f.serveArgs, "serve-args", "", "extra space-separated flags for `engram serve`, e.g. \"--embed-model-dir /models/potion\"")
}

// target is the server under test and a client of it.
type target struct {
	apiURL string
	apiKey string
	client *client.Client
	proc   *testserver.Process // nil for --server
	close  func()
}

// benchHTTPClient keeps one idle connection per worker, so a run measures
// requests and not TCP handshakes (the default keeps only two per host).
func benchHTTPClient(conns int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = conns * 2
	tr.MaxIdleConnsPerHost = conns * 2
	tr.MaxConnsPerHost = 0
	return &http.Client{Transport: tr, Timeout: 5 * time.Minute}
}

// openTarget connects to --server or starts an embedded server and
// registers a fresh user on it. loopbackOnly refuses remote servers.
func openTarget(ctx context.Context, f serverFlags, conns int, loopbackOnly bool, log io.Writer) (*target, error) {
	hc := benchHTTPClient(conns)
	if f.server != "" {
		if f.apiKey == "" {
			return nil, usageErr("--server needs --api-key (or ENGRAM_API_KEY)")
		}
		u, err := url.Parse(f.server)
		if err != nil || u.Host == "" {
			return nil, usageErr("--server %q is not a URL", f.server)
		}
		if loopbackOnly && !isLoopbackHost(u.Hostname()) {
			return nil, usageErr("--server %q: this benchmark only targets loopback addresses", f.server)
		}
		api := strings.TrimRight(f.server, "/")
		if strings.Trim(u.Path, "/") == "" {
			api += "/v1" // a bare host:port means the server's API root
		}
		return &target{apiURL: api, apiKey: f.apiKey, client: client.New(api, f.apiKey, client.WithHTTPClient(hc)), close: func() {}}, nil
	}

	cleanup := []func(){}
	closeAll := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	bin := f.engramBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "engram-bench-bin-")
		if err != nil {
			return nil, err
		}
		cleanup = append(cleanup, func() { os.RemoveAll(dir) })
		fmt.Fprintln(log, "building", testserver.MainPackage, "...")
		// A built binary rather than `go run`: the benchmark reads the
		// server's own RSS, and `go run` would put a go process in between.
		if bin, err = testserver.Build(ctx, dir, false); err != nil {
			closeAll()
			return nil, err
		}
	}
	dataDir := f.dataDir
	if dataDir == "" {
		dir, err := os.MkdirTemp("", "engram-bench-data-")
		if err != nil {
			closeAll()
			return nil, err
		}
		dataDir = dir
		if f.keepData {
			fmt.Fprintln(log, "data dir kept at", dir)
		} else {
			cleanup = append(cleanup, func() { os.RemoveAll(dir) })
		}
	}
	// Rate limits off: the benchmark measures search and ingest, not the
	// limiter, and fires far more than 50 requests per second.
	args := []string{"--rate-limit", "0", "--ip-rate-limit", "0"}
	args = append(args, strings.Fields(f.serveArgs)...)
	proc, err := testserver.Launch(ctx, testserver.LaunchOptions{Binary: bin, DataDir: dataDir, Args: args})
	if err != nil {
		closeAll()
		return nil, err
	}
	cleanup = append(cleanup, func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := proc.Stop(stopCtx); err != nil {
			fmt.Fprintf(log, "server exit: %v\n%s", err, proc.Log())
		}
	})
	fmt.Fprintln(log, "engram serving at", proc.APIURL(), "pid", proc.PID(), "data dir", dataDir)

	email := fmt.Sprintf("bench-%d@example.com", time.Now().UnixNano())
	key, err := testserver.RegisterUser(ctx, proc.APIURL(), proc.OutboxDir(), email)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("register a benchmark user: %w\n%s", err, proc.Log())
	}
	return &target{
		apiURL: proc.APIURL(),
		apiKey: key,
		client: client.New(proc.APIURL(), key, client.WithHTTPClient(hc)),
		proc:   proc,
		close:  closeAll,
	}, nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// retry429 runs fn again while the server says 429, honouring
// Retry-After; --server targets keep their rate limits.
func retry429(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		var e *client.Error
		if err == nil || attempt >= 20 || !errors.As(err, &e) || e.Status != http.StatusTooManyRequests {
			return err
		}
		wait := e.RetryAfter
		if wait <= 0 {
			wait = 200 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}
