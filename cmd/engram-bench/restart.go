package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

// restartConfig is the command line of `engram-bench restart`.
type restartConfig struct {
	dataDir, engramBin, out, stack string
	runs, tail                     int
}

func parseRestartFlags(args []string, stderr io.Writer) (restartConfig, error) {
	var cfg restartConfig
	fs := flag.NewFlagSet("restart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.dataDir, "data-dir", "", "filled data directory to restart the server on (required; e.g. one `replay --data-dir` filled)")
	fs.StringVar(&cfg.engramBin, "engram-bin", "", "engram binary to start (default: go build "+testserver.MainPackage+" into a temp dir)")
	fs.StringVar(&cfg.out, "out", "bench-out/restart.json", "JSON report file")
	fs.IntVar(&cfg.runs, "runs", 3, "restarts measured after a clean stop, and again after a SIGKILL")
	fs.IntVar(&cfg.tail, "tail", 1000, "memories written before each SIGKILL: what the next start re-reads past the last snapshot")
	fs.StringVar(&cfg.stack, "dashboard-stack", "", "also time `engram dashboard` on this local stack (a stack name under $ENGRAM_HOME) until it listens")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	switch {
	case fs.NArg() > 0:
		return cfg, usageErr("restart takes no arguments, got %q", fs.Args())
	case cfg.dataDir == "":
		return cfg, usageErr("restart needs --data-dir")
	case cfg.runs < 1:
		return cfg, usageErr("--runs must be positive")
	case cfg.tail < 0:
		return cfg, usageErr("--tail must not be negative")
	}
	return cfg, nil
}

// restartRun is one start of the server: the time from exec to /readyz
// 200, and its memory once ready.
type restartRun struct {
	After     string  `json:"after"` // "clean stop" or "SIGKILL"
	Seconds   float64 `json:"seconds"`
	RSSBytes  int64   `json:"rss_bytes"`
	AnonBytes int64   `json:"anon_bytes"`
}

type restartReport struct {
	StartedAt        time.Time    `json:"started_at"`
	DataDir          string       `json:"data_dir"`
	Cores            int          `json:"cores"`
	LoadAverage      string       `json:"load_average"`
	LoadAverageAfter string       `json:"load_average_after"`
	Tail             int          `json:"tail"`
	Runs             []restartRun `json:"runs"`
	// DashboardSeconds are `engram dashboard` runs until it listens.
	DashboardSeconds []float64 `json:"dashboard_seconds,omitempty"`
}

func runRestart(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseRestartFlags(args, stderr)
	if err != nil {
		return err
	}
	bin := cfg.engramBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "engram-bench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if bin, err = testserver.Build(ctx, dir, false); err != nil {
			return err
		}
	}
	rep := restartReport{StartedAt: time.Now().UTC(), DataDir: cfg.dataDir, Cores: runtime.NumCPU(), LoadAverage: loadAverage(), Tail: cfg.tail}
	start := func(after string) (*testserver.Process, error) {
		began := time.Now()
		proc, err := testserver.Launch(ctx, testserver.LaunchOptions{Binary: bin, DataDir: cfg.dataDir, StartTimeout: 10 * time.Minute})
		if err != nil {
			return nil, err
		}
		run := restartRun{After: after, Seconds: time.Since(began).Seconds()}
		if m, err := proc.MemStat(); err == nil {
			run.RSSBytes, run.AnonBytes = m.RSSBytes, m.AnonBytes
		}
		rep.Runs = append(rep.Runs, run)
		fmt.Fprintf(stderr, "ready after a %s in %.3fs, RSS %d MiB, anonymous %d MiB\n", after, run.Seconds, run.RSSBytes>>20, run.AnonBytes>>20)
		return proc, nil
	}
	stop := func(p *testserver.Process) error {
		stopCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		return p.Stop(stopCtx)
	}
	// A first start and clean stop leave the images of the data dir as
	// the code under test writes them.
	proc, err := start("first start")
	if err != nil {
		return err
	}
	rep.Runs = rep.Runs[:0]
	if err := stop(proc); err != nil {
		return err
	}
	for range cfg.runs {
		if proc, err = start("clean stop"); err != nil {
			return err
		}
		if err := stop(proc); err != nil {
			return err
		}
	}
	for i := range cfg.runs {
		if proc, err = start("SIGKILL"); err != nil {
			return err
		}
		if err := writeTail(ctx, proc, cfg.tail, i); err != nil {
			proc.Kill()
			return err
		}
		proc.Kill()
	}
	if proc, err = start("SIGKILL"); err != nil {
		return err
	}
	if err := stop(proc); err != nil {
		return err
	}
	if cfg.stack != "" {
		for range cfg.runs {
			s, err := timeDashboard(ctx, bin, cfg.stack)
			if err != nil {
				return err
			}
			rep.DashboardSeconds = append(rep.DashboardSeconds, s)
			fmt.Fprintf(stderr, "dashboard listening in %.3fs\n", s)
		}
	}
	rep.LoadAverageAfter = loadAverage()
	fmt.Fprintf(stdout, "%d cores, load average %s → %s\n", rep.Cores, rep.LoadAverage, rep.LoadAverageAfter)
	for _, r := range rep.Runs {
		fmt.Fprintf(stdout, "after a %-10s ready in %.3fs  RSS %4d MiB  anonymous %4d MiB\n", r.After, r.Seconds, r.RSSBytes>>20, r.AnonBytes>>20)
	}
	return writeJSON(cfg.out, rep, stdout)
}

// writeTail stores n notes through the API as a newly registered user.
func writeTail(ctx context.Context, proc *testserver.Process, n, round int) error {
	if n == 0 {
		return nil
	}
	key, err := testserver.RegisterUser(ctx, proc.APIURL(), proc.OutboxDir(), fmt.Sprintf("restart-%d-%d@example.com", time.Now().UnixNano(), round))
	if err != nil {
		return err
	}
	c := client.New(proc.APIURL(), key)
	for start := 0; start < n; start += client.MaxBatch {
		items := make([]client.BatchMemory, min(client.MaxBatch, n-start))
		for i := range items {
			items[i] = client.BatchMemory{Type: "notes", Content: client.NoteContent{Content: fmt.Sprintf("restart tail %d heron quarry %d", round, start+i), NoteType: "observation"}}
		}
		if _, _, err := storeBatch(ctx, c, client.BatchRequest{AgentID: "restart-tail", Memories: items}); err != nil {
			return err
		}
	}
	return nil
}

// timeDashboard runs `engram dashboard` on stack until it prints its
// address (it listens before printing), then interrupts it.
func timeDashboard(ctx context.Context, bin, stack string) (float64, error) {
	cmd := exec.CommandContext(ctx, bin, "dashboard", "--stack", stack, "--port", "0", "--no-open")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	buf := make([]byte, 256)
	if _, err := out.Read(buf); err != nil {
		return 0, fmt.Errorf("dashboard: %w: %s", err, errBuf.String())
	}
	return time.Since(began).Seconds(), nil
}
