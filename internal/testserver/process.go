package testserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LaunchOptions configure one `engram serve`.
type LaunchOptions struct {
	Binary  string // path of the engram binary; required
	DataDir string // data directory; required (it may be empty or not exist)
	// Env holds extra KEY=VALUE pairs on top of the hermetic environment
	// (see Environ); they win over it.
	Env  []string
	Args []string // extra flags after `serve --addr 127.0.0.1:0 --data-dir DIR`
	// StartTimeout bounds the wait for the "engram serving" line and for
	// /readyz; default 30s.
	StartTimeout time.Duration
	// Unready: return once the server listens, without waiting for
	// /readyz to answer 200 (a server meant to start not ready).
	Unready bool
	// LogTo, if set, also receives every line of the server's log, whole
	// (Log keeps only the tail): a long run's failure is traced there.
	LogTo io.Writer
}

// Process is one running `engram serve` on a random loopback port.
type Process struct {
	BaseURL string // http://127.0.0.1:PORT, without /v1
	DataDir string

	cmd    *exec.Cmd
	home   string // the hermetic ENGRAM_HOME, removed when the process ends
	log    *tailLog
	logTo  io.Writer // LaunchOptions.LogTo; nil for none
	races  raceLog
	exited chan struct{} // closed when the process has been reaped
	err    error         // Wait's result; read only after exited is closed
}

// servingText and servingJSON find the listen address in the startup line
// of the text and the JSON log formats.
var servingText = regexp.MustCompile(`msg="engram serving" addr=(\S+)`)

// Launch starts the binary and returns once /readyz answers 200 (or once
// it listens, with Unready). The
// process is not tied to ctx (a benchmark outlives its start-up context);
// end it with Stop or Kill.
func Launch(ctx context.Context, opts LaunchOptions) (*Process, error) {
	if opts.Binary == "" || opts.DataDir == "" {
		return nil, errors.New("testserver: Binary and DataDir are required")
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", opts.DataDir}, opts.Args...)
	home, err := os.MkdirTemp("", "engram-home-")
	if err != nil {
		return nil, fmt.Errorf("testserver: %w", err)
	}
	cmd := exec.Command(opts.Binary, args...)
	cmd.Env = append(Environ(home), opts.Env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("testserver: %w", err)
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("testserver: start %s: %w", opts.Binary, err)
	}
	p := &Process{DataDir: opts.DataDir, cmd: cmd, home: home, log: newTailLog(512), logTo: opts.LogTo, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go p.readLog(stderr, addr)

	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	select {
	case a := <-addr:
		p.BaseURL = "http://" + a
	case <-p.exited:
		return nil, fmt.Errorf("testserver: engram serve exited before serving: %v\n%s", p.err, p.Log())
	case <-ctx.Done():
		p.Kill()
		return nil, fmt.Errorf("testserver: engram serve did not start: %w\n%s", ctx.Err(), p.Log())
	}
	if opts.Unready {
		return p, nil
	}
	if err := p.waitReady(ctx); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// readLog keeps the tail of stderr, reports the listen address once, and
// reaps the process when its stderr closes. It must drain the pipe for the
// whole life of the server, or the server blocks on a full pipe.
func (p *Process) readLog(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := false
	for sc.Scan() {
		line := sc.Text()
		p.log.add(line)
		if p.logTo != nil {
			_, _ = io.WriteString(p.logTo, line+"\n") // best effort: a trace, not the test's verdict
		}
		p.races.add(line)
		if !found {
			if a := servingAddr(line); a != "" {
				found = true
				addr <- a
			}
		}
	}
	_, _ = io.Copy(io.Discard, r) // a line over 1 MiB stops the scanner; keep draining
	p.err = p.cmd.Wait()
	_ = os.RemoveAll(p.home)
	close(p.exited)
}

func servingAddr(line string) string {
	if m := servingText.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	if strings.HasPrefix(line, "{") {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "engram serving" {
			return rec.Addr
		}
	}
	return ""
}

func (p *Process) waitReady(ctx context.Context) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.BaseURL+"/readyz", nil)
		if err != nil {
			return fmt.Errorf("testserver: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testserver: server never became ready: %w\n%s", ctx.Err(), p.Log())
		case <-p.exited:
			return fmt.Errorf("testserver: server exited while starting: %v\n%s", p.err, p.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// APIURL is the base URL of the cloud API: BaseURL + "/v1".
func (p *Process) APIURL() string { return p.BaseURL + "/v1" }

// OutboxDir is where the server writes mail when no SMTP server is set.
func (p *Process) OutboxDir() string { return OutboxDir(p.DataDir) }

// PID is the server's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Log is the tail (last 512 lines) of what the server wrote to stderr.
func (p *Process) Log() string { return p.log.String() }

// RaceReports are the race detector's reports the server wrote, whole,
// however much it logged after them; "" when there were none (or the
// binary was built without the race detector). Complete once the process
// has ended.
func (p *Process) RaceReports() string { return p.races.String() }

// Exited is closed once the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Kill ends the server with SIGKILL (no shutdown code runs) and waits for it.
func (p *Process) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Stop sends SIGTERM and waits for a graceful exit until ctx ends, then
// kills. It returns the exit error (nil for a clean exit).
func (p *Process) Stop(ctx context.Context) error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-ctx.Done():
		p.Kill()
		return fmt.Errorf("testserver: no exit after SIGTERM: %w", ctx.Err())
	}
}

// tailLog keeps the last max lines; the server may log millions of lines
// under a benchmark.
type tailLog struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

func newTailLog(max int) *tailLog { return &tailLog{lines: make([]string, max)} }

func (l *tailLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines[l.next] = line
	l.next++
	if l.next == len(l.lines) {
		l.next, l.full = 0, true
	}
}

func (l *tailLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	if l.full {
		for _, s := range l.lines[l.next:] {
			b.WriteString(s + "\n")
		}
	}
	for _, s := range l.lines[:l.next] {
		b.WriteString(s + "\n")
	}
	return b.String()
}

// raceLog keeps the race detector's reports from a stream of log lines:
// each runs from a "WARNING: DATA RACE" line to the "==================" line
// that closes it. The first few are kept whole; one is enough to fail a test.
type raceLog struct {
	mu      sync.Mutex
	reports []string
	open    *strings.Builder // the report being read
}

const keptRaceReports = 5

func (l *raceLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open != nil:
		l.open.WriteString(line + "\n")
		if strings.HasPrefix(line, "==================") {
			l.reports = append(l.reports, l.open.String())
			l.open = nil
		}
	case strings.Contains(line, "WARNING: DATA RACE") && len(l.reports) < keptRaceReports:
		l.open = &strings.Builder{}
		l.open.WriteString(line + "\n")
	}
}

// String is every kept report, and a report cut off by the end of the log.
func (l *raceLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := strings.Join(l.reports, "")
	if l.open != nil {
		all += l.open.String()
	}
	return all
}
