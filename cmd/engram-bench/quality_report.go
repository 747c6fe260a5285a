package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-memory/engram/client"
)

// qualityReport collects one quality run for quality.md.
type qualityReport struct {
	cfg        qualityConfig
	started    time.Time
	queries    int
	ingested   int
	agents     int
	ingestTime time.Duration
	model      string
	runs       []modeRun
	scores     map[string]scoreFile // by system: bm25 and the modes
	diff       *modeDifference      // hybrid − keyword, when both ran
	checked    bool
	misses     []string
}

// systems lists the scored systems: the baseline, then the modes that ran
// from the simplest to the fused one, whatever order --modes gave.
func (r qualityReport) systems() []string {
	out := []string{"bm25"}
	for _, m := range []string{client.ModeKeyword, client.ModeVector, client.ModeHybrid} {
		if slices.Contains(r.cfg.modes, m) {
			out = append(out, m)
		}
	}
	return out
}

func (r qualityReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Retrieval quality (%s)\n\n", r.started.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- corpus `%s`, queries `%s` (%d queries)\n", r.cfg.corpus, r.cfg.queries, r.queries)
	fmt.Fprintf(&b, "- protocol **%s**; search limit %d", r.cfg.proto, r.cfg.limit)
	if t := r.cfg.proto.searchTypes(); t != nil {
		fmt.Fprintf(&b, ", types %v", t)
	}
	fmt.Fprintf(&b, "\n- %d memories of %d agents ingested through `POST /memories/batch` in %s\n",
		r.ingested, r.agents, r.ingestTime.Round(time.Millisecond))
	fmt.Fprintf(&b, "- embedding model: %s\n", r.model)
	b.WriteString("- `bm25` is `bm25_baseline.py` of the benchmark, scored the same way\n\n")

	rows := subsetRows(r.systems(), r.scores, subsetExclAdv)
	fmt.Fprintf(&b, "## %s\n\n%s\n", subsetExclAdv, formatTable(rows, true))
	fmt.Fprintf(&b, "## %s\n\n%s\n", subsetAll, formatTable(subsetRows(r.systems(), r.scores, subsetAll), true))

	if r.diff != nil {
		fmt.Fprintf(&b, "## Hybrid − keyword\n\n%s\n", r.diff.markdown())
	}

	if cats := r.scores["bm25"].categories(); len(cats) > 0 {
		fmt.Fprintf(&b, "## nDCG@10 per category\n\n| mode |")
		for _, c := range cats {
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(cats)) + "\n")
		for _, sys := range r.systems() {
			fmt.Fprintf(&b, "| %s |", sys)
			for _, c := range cats {
				fmt.Fprintf(&b, " %.3f |", r.scores[sys].Groups["cat:"+c].NDCG10)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}

	b.WriteString("## Server-side query time (`query_time_ms`)\n\n| mode | p50 | p95 | p99 | wall time |\n|---|---:|---:|---:|---:|\n")
	for _, run := range r.runs {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %s |\n", run.Mode, percentile(run.QueryTimeMS, 50),
			percentile(run.QueryTimeMS, 95), percentile(run.QueryTimeMS, 99), run.Elapsed.Round(time.Millisecond))
	}
	if len(r.runs) > 0 && wholeNumbers(r.runs[0].QueryTimeMS) {
		b.WriteString("\nThe server reports `query_time_ms` in whole milliseconds (rounded down). " +
			"Latency is measured by `engram-bench load`.\n")
	}
	b.WriteString("\n## Targets\n\n")
	switch {
	case !r.checked:
		b.WriteString("not checked (--check-targets=false)\n")
	case len(r.misses) == 0:
		fmt.Fprintf(&b, "met on %s (%s): keyword ≥ bm25, hybrid > keyword, hybrid ≥ vector\n",
			strings.Join(r.cfg.targets.metrics, ", "), subsetExclAdv)
	default:
		fmt.Fprintf(&b, "**missed** on %s:\n\n", subsetExclAdv)
		for _, m := range r.misses {
			b.WriteString("- " + m + "\n")
		}
	}
	return b.String()
}
