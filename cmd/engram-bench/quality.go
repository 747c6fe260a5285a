package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/engram-memory/engram/client"
)

// qualityConfig is the command line of `engram-bench quality`.
type qualityConfig struct {
	corpus, queries, benchDir, out, python string
	modes                                  []string
	proto                                  protocol
	limit, concurrency, batchSize          int
	checkTargets                           bool
	targets                                targetSpec
	server                                 serverFlags
}

func parseQualityFlags(args []string, stderr io.Writer) (qualityConfig, error) {
	var cfg qualityConfig
	var modes, proto, metrics string
	fs := flag.NewFlagSet("quality", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.corpus, "corpus", "../shared/bench/locomo-dev/corpus.jsonl", "benchmark corpus.jsonl")
	fs.StringVar(&cfg.queries, "queries", "../shared/bench/locomo-dev/queries.jsonl", "benchmark queries.jsonl")
	fs.StringVar(&cfg.benchDir, "bench-dir", "../shared/bench", "directory with score.py and bm25_baseline.py")
	fs.StringVar(&cfg.out, "out", "bench-out/quality", "output directory (results-<mode>.jsonl, score-*.json, quality.md)")
	fs.StringVar(&cfg.python, "python", "python3", "Python interpreter for score.py")
	fs.StringVar(&modes, "modes", "hybrid,vector,keyword", "comma-separated search modes")
	fs.StringVar(&proto, "protocol", "turns", "turns (raw_entries only) or turns+notes")
	fs.IntVar(&cfg.limit, "limit", 10, "search limit per query (>= 10 for R@10)")
	fs.IntVar(&cfg.concurrency, "concurrency", 4, "queries in flight")
	fs.IntVar(&cfg.batchSize, "batch-size", client.MaxBatch, "memories per POST /memories/batch")
	fs.BoolVar(&cfg.checkTargets, "check-targets", true, "exit 3 when keyword < BM25, hybrid ≤ keyword or hybrid < vector")
	fs.StringVar(&metrics, "target-metrics", "R@10,MRR@10,nDCG@10", "metrics the targets are checked on")
	fs.Float64Var(&cfg.targets.tolerance, "target-tolerance", 0, "allowed shortfall per metric")
	cfg.server.register(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, usageErr("quality takes no arguments, got %q", fs.Args())
	}
	var err error
	if cfg.modes, err = parseModes(modes); err != nil {
		return cfg, err
	}
	if cfg.proto, err = parseProtocol(proto); err != nil {
		return cfg, err
	}
	cfg.targets.metrics = splitList(metrics)
	for _, m := range cfg.targets.metrics {
		if !slices.Contains(metricNames, m) {
			return cfg, usageErr("--target-metrics: unknown metric %q (have %s)", m, strings.Join(metricNames, ", "))
		}
	}
	if cfg.limit < 10 {
		return cfg, usageErr("--limit must be at least 10, the depth of R@10, MRR@10 and nDCG@10")
	}
	return cfg, nil
}

// parseModes checks a comma-separated list of search modes.
func parseModes(s string) ([]string, error) {
	modes := splitList(s)
	if len(modes) == 0 {
		return nil, usageErr("--modes is empty")
	}
	for _, m := range modes {
		if m != client.ModeHybrid && m != client.ModeVector && m != client.ModeKeyword {
			return nil, usageErr("unknown mode %q (hybrid, vector, keyword)", m)
		}
	}
	return modes, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func runQuality(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseQualityFlags(args, stderr)
	if err != nil {
		return err
	}
	corpus, err := readJSONL[corpusRecord](cfg.corpus)
	if err != nil {
		return err
	}
	queries, err := readJSONL[queryRecord](cfg.queries)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	sc := scorer{python: cfg.python, benchDir: cfg.benchDir, queries: cfg.queries, corpus: cfg.corpus, proto: cfg.proto}

	tg, err := openTarget(ctx, cfg.server, cfg.concurrency, false, stderr)
	if err != nil {
		return err
	}
	defer tg.close()

	rep := qualityReport{cfg: cfg, started: time.Now().UTC(), queries: len(queries), scores: map[string]scoreFile{}}
	agents, groups := byAgent(corpus, func(r corpusRecord) bool { return cfg.proto.includes(r.Type) })
	if err := ensureEmpty(ctx, tg.client, agents); err != nil {
		return err
	}
	idmap := map[string]string{}
	t0 := time.Now()
	for _, a := range agents {
		if err := ingestAgent(ctx, tg.client, a, groups[a], cfg.batchSize, idmap); err != nil {
			return err
		}
	}
	rep.ingested, rep.agents, rep.ingestTime = len(idmap), len(agents), time.Since(t0)
	fmt.Fprintf(stderr, "ingested %d memories for %d agents in %s (%.0f/s)\n",
		rep.ingested, rep.agents, rep.ingestTime.Round(time.Millisecond), float64(rep.ingested)/rep.ingestTime.Seconds())
	rep.model = agentModel(ctx, tg.client, agents)

	for _, mode := range cfg.modes {
		plan := queryPlan{mode: mode, types: cfg.proto.searchTypes(), limit: cfg.limit, concurrency: cfg.concurrency}
		run, err := runQueries(ctx, tg.client, queries, plan, idmap)
		if err != nil {
			return fmt.Errorf("mode %s: %w", mode, err)
		}
		results := filepath.Join(cfg.out, "results-"+mode+".jsonl")
		if err := writeJSONL(results, run.Results); err != nil {
			return err
		}
		s, err := sc.score(ctx, results, cfg.out, mode)
		if err != nil {
			return err
		}
		rep.scores[mode] = s
		rep.runs = append(rep.runs, run)
		fmt.Fprintf(stderr, "mode %s: %d queries in %s, server p50 %.2f ms\n", mode, len(queries),
			run.Elapsed.Round(time.Millisecond), percentile(run.QueryTimeMS, 50))
	}

	bm25, err := sc.baseline(ctx, cfg.out)
	if err != nil {
		return err
	}
	if rep.scores["bm25"], err = sc.score(ctx, bm25, cfg.out, "bm25"); err != nil {
		return err
	}

	if rep.diff, err = hybridVersusKeyword(rep.runs, queries, corpus, cfg.proto, rep.scores); err != nil {
		return err
	}

	rows := subsetRows(rep.systems(), rep.scores, subsetExclAdv)
	if cfg.checkTargets {
		if rep.misses, err = cfg.targets.check(rows); err != nil {
			return err
		}
		rep.checked = true
	}
	fmt.Fprintf(stdout, "protocol %s, %s (n=%d), limit %d\n%s", cfg.proto, subsetExclAdv, rows[0].Score.N, cfg.limit, formatTable(rows, false))
	if rep.diff != nil {
		fmt.Fprint(stdout, rep.diff.markdown())
	}
	mdPath := filepath.Join(cfg.out, "quality.md")
	if err := os.WriteFile(mdPath, []byte(rep.markdown()), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "wrote", mdPath)
	if len(rep.misses) > 0 {
		return &targetsFailedError{failures: rep.misses}
	}
	return nil
}

// hybridVersusKeyword bootstraps hybrid − keyword when both modes ran
// (nil otherwise).
func hybridVersusKeyword(runs []modeRun, queries []queryRecord, corpus []corpusRecord, proto protocol, scores map[string]scoreFile) (*modeDifference, error) {
	byMode := map[string]modeRun{}
	for _, r := range runs {
		byMode[r.Mode] = r
	}
	hybrid, okH := byMode[client.ModeHybrid]
	keyword, okK := byMode[client.ModeKeyword]
	if !okH || !okK {
		return nil, nil
	}
	var sources map[string][]string
	if proto == protoTurnsNotes { // score.py's --corpus
		sources = map[string][]string{}
		for _, r := range corpus {
			if len(r.SourceIDs) > 0 {
				sources[r.ID] = r.SourceIDs
			}
		}
	}
	d, err := compareModes(client.ModeHybrid, client.ModeKeyword,
		scorePerQuery(queries, hybrid.Results, sources), scorePerQuery(queries, keyword.Results, sources), scores)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// allAgents reads every page of the user's agents.
func allAgents(ctx context.Context, c *client.Client) ([]client.Agent, error) {
	var list []client.Agent
	for cursor := ""; ; {
		page, err := c.ListAgents(ctx, client.ListAgentsOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		list = append(list, page.Agents...)
		if cursor = page.NextCursor; cursor == "" {
			return list, nil
		}
	}
}

// agentModel names the embedding model of the benchmark agents, best
// effort: the report should say which model produced the vector numbers.
func agentModel(ctx context.Context, c *client.Client, agents []string) string {
	list, err := allAgents(ctx, c)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	var models []string
	for _, a := range list {
		m := fmt.Sprintf("%s (%d dims)", a.EmbeddingModel, a.Dimensions)
		if slices.Contains(agents, a.AgentID) && a.EmbeddingModel != "" && !slices.Contains(models, m) {
			models = append(models, m)
		}
	}
	if len(models) == 0 {
		return "unknown"
	}
	return strings.Join(models, ", ")
}
