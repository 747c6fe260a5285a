package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Subsets of score.py's output that the report uses.
const (
	subsetAll        = "ALL"
	excludedCategory = "adversarial"
	subsetExclAdv    = "ALL excl. " + excludedCategory
)

// metricNames are score.py's metrics, in its order.
var metricNames = []string{"R@1", "R@5", "R@10", "MRR@10", "nDCG@10"}

// groupScore is one subset line of score.py --json.
type groupScore struct {
	N      int     `json:"n"`
	R1     float64 `json:"R@1"`
	R5     float64 `json:"R@5"`
	R10    float64 `json:"R@10"`
	MRR10  float64 `json:"MRR@10"`
	NDCG10 float64 `json:"nDCG@10"`
}

// metric returns a metric by score.py's name.
func (g groupScore) metric(name string) (float64, bool) {
	switch name {
	case "R@1":
		return g.R1, true
	case "R@5":
		return g.R5, true
	case "R@10":
		return g.R10, true
	case "MRR@10":
		return g.MRR10, true
	case "nDCG@10":
		return g.NDCG10, true
	}
	return 0, false
}

// scoreFile is what score.py --json writes.
type scoreFile struct {
	Groups  map[string]groupScore `json:"groups"`
	Missing int                   `json:"missing"`
	Unknown int                   `json:"unknown"`
}

func parseScoreFile(data []byte) (scoreFile, error) {
	var s scoreFile
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("score.py json: %w", err)
	}
	if _, ok := s.Groups[subsetAll]; !ok {
		return s, fmt.Errorf("score.py json has no %q group", subsetAll)
	}
	return s, nil
}

// categories lists the per-category groups ("cat:NAME") by name.
func (s scoreFile) categories() []string {
	var out []string
	for k := range s.Groups {
		if c, ok := strings.CutPrefix(k, "cat:"); ok {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// scorer runs the benchmark's own Python tools, so that the numbers are
// the ones everybody else reports.
type scorer struct {
	python   string // python3
	benchDir string // holds score.py and bm25_baseline.py
	queries  string
	corpus   string // passed as --corpus for turns+notes
	proto    protocol
}

// score runs score.py on results with --exclude-category adversarial
// (which reports ALL and ALL excl. adversarial in one run) and --json,
// keeps its table in name.txt and its numbers in name.json.
func (s scorer) score(ctx context.Context, results, outDir, name string) (scoreFile, error) {
	jsonPath := filepath.Join(outDir, "score-"+name+".json")
	args := []string{filepath.Join(s.benchDir, "score.py"), s.queries, results,
		"--exclude-category", excludedCategory, "--json", jsonPath}
	if s.proto == protoTurnsNotes {
		args = append(args, "--corpus", s.corpus)
	}
	out, err := s.runPython(ctx, args...)
	if err != nil {
		return scoreFile{}, err
	}
	if err := os.WriteFile(filepath.Join(outDir, "score-"+name+".txt"), out, 0o644); err != nil {
		return scoreFile{}, err
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		return scoreFile{}, err
	}
	return parseScoreFile(data)
}

// baseline writes the BM25 baseline's results for the protocol: turns
// indexes raw_entries only.
func (s scorer) baseline(ctx context.Context, outDir string) (string, error) {
	results := filepath.Join(outDir, "results-bm25.jsonl")
	args := []string{filepath.Join(s.benchDir, "bm25_baseline.py"), s.corpus, s.queries, results}
	if s.proto == protoTurns {
		args = append(args, "--types", "raw_entries")
	}
	if _, err := s.runPython(ctx, args...); err != nil {
		return "", err
	}
	return results, nil
}

func (s scorer) runPython(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.python, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", s.python, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}
