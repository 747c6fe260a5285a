package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/internal/app"
)

// replayConfig is the command line of `engram-bench replay`.
type replayConfig struct {
	n, batchSize, ingestConc int
	seed                     uint64
	agent, out, cpuProfile   string
	alone, skipFill, floor   bool
	server                   serverFlags
	// eventStore is the log the data dir's server appends to and the
	// rebuilds read (the URL carries no password: PGPASSWORD or .pgpass).
	eventStore app.EventStore
}

// replayEventsTarget is issue 14's replay target for all projections.
const replayEventsTarget = 50000

func parseReplayFlags(args []string, stderr io.Writer) (replayConfig, error) {
	var cfg replayConfig
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.n, "n", 10000, "synthetic memories to store before the rebuilds")
	fs.IntVar(&cfg.batchSize, "batch-size", client.MaxBatch, "memories per POST /memories/batch")
	fs.IntVar(&cfg.ingestConc, "ingest-concurrency", 1, "batches in flight while filling")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the synthetic data")
	fs.StringVar(&cfg.agent, "agent", "bench-replay", "agent to fill")
	fs.StringVar(&cfg.out, "out", "bench-out/replay.json", "JSON report file")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write the CPU profile of the rebuild of all projections to this file")
	fs.BoolVar(&cfg.alone, "each", true, "also rebuild each projection alone")
	fs.BoolVar(&cfg.floor, "floor", false, "after the rebuild of all projections, measure the storage floor: the rebuilt read models copied into a scratch database inside SQLite (the least any replay of this log can cost)")
	fs.StringVar(&cfg.server.engramBin, "engram-bin", "", "engram binary that fills the data dir (default: go build the module's into a temp dir)")
	fs.StringVar(&cfg.server.dataDir, "data-dir", "", "empty data directory to fill and rebuild (default: a temp dir, removed afterwards)")
	fs.BoolVar(&cfg.skipFill, "skip-fill", false, "rebuild --data-dir as it is (filled by an earlier run) instead of filling it: compares builds on the same log")
	fs.StringVar(&cfg.server.serveArgs, "serve-args", "", "extra space-separated flags for `engram serve` while filling")
	fs.StringVar(&cfg.eventStore.Backend, "event-store", app.SQLiteLog, "event log to fill and replay: sqlite (in the data dir) or postgres (an empty database, with --event-store-url)")
	fs.StringVar(&cfg.eventStore.URL, "event-store-url", "", "URL of the postgres event log, without a password (PGPASSWORD or ~/.pgpass)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, usageErr("replay takes no arguments, got %q", fs.Args())
	}
	switch {
	case cfg.n < 1:
		return cfg, usageErr("--n must be positive")
	case cfg.ingestConc < 1 || cfg.ingestConc > 16:
		return cfg, usageErr("--ingest-concurrency must be 1-16")
	case cfg.skipFill && cfg.server.dataDir == "":
		return cfg, usageErr("--skip-fill needs --data-dir")
	case cfg.eventStore.Backend != app.SQLiteLog && cfg.eventStore.Backend != app.PostgresLog:
		return cfg, usageErr("--event-store must be %s or %s", app.SQLiteLog, app.PostgresLog)
	}
	if err := cfg.eventStore.Validate(); err != nil {
		return cfg, usageErr("%v", err)
	}
	if cfg.eventStore.Shared() {
		cfg.server.serveArgs += " --event-store " + cfg.eventStore.Backend + " --event-store-url " + cfg.eventStore.URL
	}
	return cfg, nil
}

// replayReport is what `engram-bench replay` measured.
type replayReport struct {
	StartedAt time.Time `json:"started_at"`
	N         int       `json:"memories"`
	// EventStore is the log the rebuilds read.
	EventStore string      `json:"event_store"`
	Events     uint64      `json:"events"`
	Cores      int         `json:"cores"`
	Ingest     ingestStats `json:"ingest"`
	Rebuilds   []replayRun `json:"rebuilds"`
	// Floor is set with --floor.
	Floor *replayFloor `json:"storage_floor,omitempty"`
	// LoadAverage is /proc/loadavg's 1, 5 and 15 minute figures before
	// the first rebuild and after the last.
	LoadAverage      string `json:"load_average"`
	LoadAverageAfter string `json:"load_average_after"`
}

// replayRun is one rebuild: of every projection ("all") or of one.
type replayRun struct {
	Projection      string  `json:"projection"`
	Seconds         float64 `json:"seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
	// CPUSeconds is the CPU time the replay took (all threads, graph
	// build excluded); on a shared machine it varies less than Seconds,
	// and EventsPerCPUSecond is the rate one free core would reach.
	CPUSeconds         float64 `json:"cpu_seconds"`
	EventsPerCPUSecond float64 `json:"events_per_cpu_second"`
	// IndexLoadSeconds is what the next `engram serve` pays at start
	// after an offline rebuild, which leaves the in-process indexes empty:
	// filling them from the rebuilt state, the vector graphs included
	// (serve answers searches meanwhile, scanning what the graph does not
	// cover yet).
	IndexLoadSeconds float64 `json:"index_load_seconds"`
}

// runReplay fills a fresh data dir through the API of a started server
// (the command layer, batches, the local model), stops the server, and
// replays the log into every projection, then into each alone, with the
// same stack and engine as `engram projections rebuild`.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseReplayFlags(args, stderr)
	if err != nil {
		return err
	}
	dataDir := cfg.server.dataDir
	if dataDir == "" {
		if dataDir, err = os.MkdirTemp("", "engram-bench-replay-"); err != nil {
			return err
		}
		defer os.RemoveAll(dataDir)
		cfg.server.dataDir = dataDir
	}
	rep := replayReport{StartedAt: time.Now().UTC(), N: cfg.n, Cores: runtime.NumCPU(), EventStore: cfg.eventStore.Backend}
	if cfg.skipFill {
		rep.N = 0 // unknown: the log is counted in events
	} else {
		if rep.Ingest, err = fillDataDir(ctx, cfg, stderr); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "filled %d memories in %.1fs (%.0f memories/s); server stopped\n", rep.Ingest.Memories, rep.Ingest.Seconds, rep.Ingest.PerSecond)
	}

	// As `engram projections rebuild` opens it.
	indexes := app.Indexes{VectorOptions: vectorindex.Options{BuildWhileWriting: true}}
	a, err := app.New(ctx, app.Settings{Config: app.Config{
		DataDir: dataDir, EventStore: cfg.eventStore, Indexes: indexes, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}}, 0)
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	st := a.Core
	if rep.Events, err = st.Store.Head(ctx); err != nil {
		return err
	}
	rep.LoadAverage = loadAverage()
	stopProfile, err := startCPUProfile(cfg.cpuProfile)
	if err != nil {
		return err
	}
	run, err := rebuild(ctx, st, rep.Events)
	stopProfile()
	if err != nil {
		return err
	}
	rep.Rebuilds = append(rep.Rebuilds, run)
	if cfg.floor {
		if rep.Floor, err = measureFloor(ctx, st.DB.Path(), rep.Events); err != nil {
			return err
		}
	}
	if cfg.alone {
		for _, name := range st.Engine.Names() {
			run, err := rebuild(ctx, st, rep.Events, name)
			if err != nil {
				return err
			}
			rep.Rebuilds = append(rep.Rebuilds, run)
		}
	}
	rep.LoadAverageAfter = loadAverage()
	fmt.Fprint(stdout, rep.table())
	return writeJSON(cfg.out, rep, stdout)
}

// fillDataDir starts engram on cfg's data dir, stores cfg.n synthetic
// notes in one agent and stops it.
func fillDataDir(ctx context.Context, cfg replayConfig, stderr io.Writer) (ingestStats, error) {
	tg, err := openTarget(ctx, cfg.server, cfg.ingestConc, true, stderr)
	if err != nil {
		return ingestStats{}, err
	}
	defer tg.close()
	if err := ensureEmpty(ctx, tg.client, []string{cfg.agent}); err != nil {
		return ingestStats{}, err
	}
	return fill(ctx, tg.client, cpuMeter{server: tg.proc}, newSynth(cfg.seed), loadConfig{n: cfg.n, batchSize: cfg.batchSize, ingestConc: cfg.ingestConc, agent: cfg.agent}, stderr)
}

// rebuild replays the whole log into the named projections (all when
// none) as `engram projections rebuild` does, then fills the in-process
// indexes as the next `engram serve` does at start, graphs included.
func rebuild(ctx context.Context, st *app.Core, events uint64, names ...string) (replayRun, error) {
	run := replayRun{Projection: "all"}
	if len(names) > 0 {
		run.Projection = strings.Join(names, ",")
	}
	start, cpuStart := time.Now(), selfCPU()
	if err := st.RebuildOffline(ctx, names...); err != nil {
		return run, fmt.Errorf("rebuild %s: %w", run.Projection, err)
	}
	elapsed, cpu := time.Since(start), selfCPU()-cpuStart
	run.Seconds, run.EventsPerSecond = elapsed.Seconds(), float64(events)/elapsed.Seconds()
	run.CPUSeconds, run.EventsPerCPUSecond = cpu.Seconds(), float64(events)/cpu.Seconds()
	loadStart := time.Now()
	if err := errors.Join(st.Keyword.Load(ctx), st.Vectors.Load(ctx)); err != nil {
		return run, err
	}
	if st.EmbeddedVectors != nil {
		if err := st.EmbeddedVectors.WaitIndexed(ctx); err != nil {
			return run, err
		}
	}
	run.IndexLoadSeconds = time.Since(loadStart).Seconds()
	return run, nil
}

func (r replayReport) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay of %d events (%d memories) from the %s log, %d cores, load average %s → %s\n",
		r.Events, r.N, r.EventStore, r.Cores, r.LoadAverage, r.LoadAverageAfter)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "projection\tseconds\tevents/s\tCPU s\tevents/CPU s\tindex load at start (s)\t")
	for _, run := range r.Rebuilds {
		fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%.2f\t%.0f\t%.2f\t\n", run.Projection, run.Seconds, run.EventsPerSecond, run.CPUSeconds, run.EventsPerCPUSecond, run.IndexLoadSeconds)
	}
	tw.Flush()
	if len(r.Rebuilds) > 0 {
		verdict := "met"
		if r.Rebuilds[0].EventsPerSecond < replayEventsTarget {
			verdict = "missed"
		}
		fmt.Fprintf(&b, "target: all projections ≥ %d events/s: %s\n", replayEventsTarget, verdict)
	}
	if r.Floor != nil {
		b.WriteString(r.Floor.line())
	}
	return b.String()
}

// writeJSON writes v, indented, to path, creating its directory.
func writeJSON(path string, v any, stdout io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "wrote", path)
	return nil
}
