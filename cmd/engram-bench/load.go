package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

// loadConfig is the command line of `engram-bench load`.
type loadConfig struct {
	n, concurrency, batchSize, ingestConc, limit, queryPool, recallQueries int
	duration, warmup, settle                                               time.Duration
	modes                                                                  []string
	seed                                                                   uint64
	agent, out, cpuProfile, via, mcpClient                                 string
	server                                                                 serverFlags
}

func parseLoadFlags(args []string, stderr io.Writer) (loadConfig, error) {
	var cfg loadConfig
	var modes string
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.n, "n", 10000, "synthetic memories to store in the agent")
	fs.IntVar(&cfg.concurrency, "concurrency", 8, "searches in flight")
	fs.DurationVar(&cfg.duration, "duration", 20*time.Second, "measured time per mode")
	fs.DurationVar(&cfg.warmup, "warmup", 2*time.Second, "unmeasured searches per mode before measuring")
	fs.StringVar(&modes, "modes", "hybrid,vector,keyword", "comma-separated search modes")
	fs.IntVar(&cfg.limit, "limit", 10, "search limit")
	fs.IntVar(&cfg.batchSize, "batch-size", client.MaxBatch, "memories per POST /memories/batch")
	fs.IntVar(&cfg.ingestConc, "ingest-concurrency", 1, "batches in flight while filling")
	fs.IntVar(&cfg.queryPool, "queries", 5000, "distinct synthetic queries, cycled through")
	fs.IntVar(&cfg.recallQueries, "recall-queries", 100, "queries whose vector-index top 10 is checked against an exact scan of the stored vectors (a started server only); 0 skips")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the synthetic data")
	fs.StringVar(&cfg.agent, "agent", "bench-load", "agent to fill")
	fs.StringVar(&cfg.out, "out", "bench-out/load.json", "JSON report file")
	fs.DurationVar(&cfg.settle, "settle", 5*time.Minute, "after the fill, wait up to this long for a started server to go idle (background vector indexing) before measuring; 0 skips the wait")
	fs.StringVar(&cfg.via, "via", viaREST, "how searches reach the server: rest (POST /v1/search) or mcp (the search_memories tool over /mcp)")
	fs.StringVar(&cfg.mcpClient, "mcp-client", mcpClientRaw, "with --via mcp, the client: raw (one plain POST per call of the stateless 2026-07-28 revision, as lean as the REST driver) or sdk (the official Go SDK's client, one session per worker)")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write this program's (the driver's) CPU profile of the measured searches to this file")
	cfg.server.register(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, usageErr("load takes no arguments, got %q", fs.Args())
	}
	var err error
	if cfg.modes, err = parseModes(modes); err != nil {
		return cfg, err
	}
	switch {
	case cfg.n < 1:
		return cfg, usageErr("--n must be positive")
	case cfg.concurrency < 1 || cfg.concurrency > 256:
		return cfg, usageErr("--concurrency must be 1-256")
	case cfg.ingestConc < 1 || cfg.ingestConc > 16:
		return cfg, usageErr("--ingest-concurrency must be 1-16")
	case cfg.duration <= 0 || cfg.duration > time.Hour:
		return cfg, usageErr("--duration must be in (0, 1h]")
	case cfg.warmup < 0 || cfg.warmup > 5*time.Minute:
		return cfg, usageErr("--warmup must be in [0, 5m]")
	case cfg.settle < 0 || cfg.settle > time.Hour:
		return cfg, usageErr("--settle must be in [0, 1h]")
	case cfg.via != viaREST && cfg.via != viaMCP:
		return cfg, usageErr("--via must be rest or mcp")
	case cfg.mcpClient != mcpClientRaw && cfg.mcpClient != mcpClientSDK:
		return cfg, usageErr("--mcp-client must be raw or sdk")
	case cfg.queryPool < 1:
		return cfg, usageErr("--queries must be positive")
	case cfg.recallQueries < 0 || cfg.recallQueries > cfg.queryPool:
		return cfg, usageErr("--recall-queries must be in [0, --queries]")
	}
	return cfg, nil
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseLoadFlags(args, stderr)
	if err != nil {
		return err
	}
	tg, err := openTarget(ctx, cfg.server, cfg.concurrency, true, stderr)
	if err != nil {
		return err
	}
	defer tg.close()

	rep := loadReport{
		StartedAt: time.Now().UTC(), Server: tg.apiURL, N: cfg.n, Concurrency: cfg.concurrency,
		DurationPerMode: cfg.duration.String(), Limit: cfg.limit, Seed: cfg.seed, Via: cfg.via,
	}
	if cfg.via == viaMCP {
		rep.MCPClient = cfg.mcpClient
	}
	if tg.proc != nil {
		rep.PID = tg.proc.PID()
		rep.Memory.BeforeFill = memStat(tg.proc)
	}
	if err := ensureEmpty(ctx, tg.client, []string{cfg.agent}); err != nil {
		return err
	}
	gen := newSynth(cfg.seed)
	meter := cpuMeter{server: tg.proc}
	if rep.Ingest, err = fill(ctx, tg.client, meter, gen, cfg, stderr); err != nil {
		return err
	}
	rep.Model, rep.Dimensions = rep.Ingest.Model, rep.Ingest.Dimensions
	rep.Memory.VectorBytes = int64(cfg.n) * int64(rep.Dimensions) * 4
	if tg.proc != nil {
		rep.Memory.AfterFill = memStat(tg.proc)
	}
	fmt.Fprintf(stderr, "filled %d memories in %.1fs (%.0f memories/s), model %s/%d\n",
		rep.Ingest.Memories, rep.Ingest.Seconds, rep.Ingest.PerSecond, rep.Model, rep.Dimensions)
	waited, err := settle(ctx, tg.proc, cfg.settle, stderr)
	if err != nil {
		return err
	}
	rep.SettleSeconds = waited.Seconds()
	if tg.proc != nil {
		fmt.Fprintf(stderr, "server idle %.1fs after the fill\n", rep.SettleSeconds)
	}
	rep.LoadAverage = loadAverage()

	queries := make([]string, cfg.queryPool)
	for i := range queries {
		queries[i] = gen.query()
	}
	stopProfile, err := startCPUProfile(cfg.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	searchers, closeSearchers, err := newSearchers(ctx, tg, cfg)
	if err != nil {
		return err
	}
	defer closeSearchers()
	for _, mode := range cfg.modes {
		res, err := measureMode(ctx, searchers, meter, cfg, mode, queries)
		if err != nil {
			return fmt.Errorf("mode %s: %w", mode, err)
		}
		rep.Modes = append(rep.Modes, res)
		fmt.Fprintf(stderr, "mode %s: %d requests, %.0f req/s, e2e p50 %.2f ms, server p50 %.2f ms\n",
			mode, res.Requests, res.Throughput, res.EndToEnd.P50, res.ServerSide.P50)
	}
	stopProfile()
	rep.LoadAverageAfter = loadAverage()
	if tg.proc != nil {
		rep.Memory.AfterSearch = memStat(tg.proc)
		// After the timed searches, so the driver's scan does not slow them.
		if cfg.recallQueries > 0 {
			if rep.Recall, err = measureRecall(ctx, tg.client, tg.proc.DataDir, cfg.agent, rep.Model, queries[:cfg.recallQueries]); err != nil {
				return fmt.Errorf("recall: %w", err)
			}
			fmt.Fprintf(stderr, "vector recall@10 %.4f over %d queries\n", rep.Recall.Recall, rep.Recall.Queries)
		}
	}
	fmt.Fprint(stdout, rep.table())
	return writeJSON(cfg.out, rep, stdout)
}

// startCPUProfile profiles this program into path until the returned
// function is called (it may be called twice); "" profiles nothing.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}, nil
}

// memStat reads the server's RSS; nil when it cannot (not Linux).
func memStat(p *testserver.Process) *testserver.MemStat {
	m, err := p.MemStat()
	if err != nil {
		return nil
	}
	return &m
}
