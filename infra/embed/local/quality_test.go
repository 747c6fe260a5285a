package local

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
)

// TestLoCoMoQuality measures the built-in model on the LoCoMo dev split with
// the bench's "turns" protocol: index only raw_entries, search each query
// within its own agent (conversation), rank by cosine, and report R@k and
// MRR@10 over all queries and excluding the adversarial category. It only
// runs when ENGRAM_LOCOMO_DIR points at the split (corpus.jsonl,
// queries.jsonl); ENGRAM_LOCOMO_RESULTS, if set, receives a results.jsonl
// for the bench's score.py. ENGRAM_LOCOMO_WITH_TAGS=1 embeds each turn's tags
// (the speaker) with its text, as an experiment for what search indexes.
func TestLoCoMoQuality(t *testing.T) {
	dir := os.Getenv("ENGRAM_LOCOMO_DIR")
	if dir == "" {
		t.Skip("set ENGRAM_LOCOMO_DIR to the locomo-dev directory to run")
	}
	corpus := readJSONLines[locomoRecord](t, filepath.Join(dir, "corpus.jsonl"))
	queries := readJSONLines[locomoQuery](t, filepath.Join(dir, "queries.jsonl"))
	var dirs []string
	model := BuiltinModelName
	if d := os.Getenv("ENGRAM_LOCOMO_MODEL_DIR"); d != "" {
		// Compare a Model2Vec-style model on the same protocol.
		dirs, model = []string{d}, filepath.Base(filepath.Clean(d))
	}
	p, err := New(Options{ModelDirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	if w := os.Getenv("ENGRAM_HASH_WEIGHTS"); w != "" {
		// Tuning aid: override the built-in model's feature weights.
		m := newBuiltinModel()
		n, err := fmt.Sscanf(w, "%g,%g,%g,%g,%d,%g", &m.weights.word, &m.weights.bigram, &m.weights.compound, &m.weights.charGram, &m.weights.lengthCap, &m.weights.timeClass)
		if n < 5 {
			t.Fatalf("ENGRAM_HASH_WEIGHTS=word,bigram,compound,chargram,lengthcap[,timeclass]: %v", err)
		}
		if d := os.Getenv("ENGRAM_HASH_DIMS"); d != "" {
			fmt.Sscanf(d, "%d", &m.dims)
		}
		p.models[m.name] = m
	}

	index := map[string]*agentIndex{}
	for _, rec := range corpus {
		if rec.Type != "raw_entries" {
			continue
		}
		ix := index[rec.AgentID]
		if ix == nil {
			ix = &agentIndex{}
			index[rec.AgentID] = ix
		}
		ix.ids = append(ix.ids, rec.ID)
		text := rec.Text
		if os.Getenv("ENGRAM_LOCOMO_WITH_TAGS") == "1" {
			text = strings.Join(rec.Tags, " ") + ": " + text
		}
		ix.texts = append(ix.texts, text)
	}
	for _, ix := range index {
		ix.vectors = embedAll(t, p, model, ix.texts)
	}

	var out *bufio.Writer
	if path := os.Getenv("ENGRAM_LOCOMO_RESULTS"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		out = bufio.NewWriter(f)
		defer out.Flush()
	}

	all, nonAdv := &metricSums{}, &metricSums{}
	byCategory := map[string]*metricSums{}
	for _, q := range queries {
		ix := index[q.AgentID]
		ranked := ix.search(embedAll(t, p, model, []string{q.Query})[0], 10)
		if out != nil {
			line, _ := json.Marshal(map[string]any{"query_id": q.ID, "ranked_ids": ranked})
			out.Write(append(line, '\n'))
		}
		all.add(q.GoldIDs, ranked)
		if q.Category != "adversarial" {
			nonAdv.add(q.GoldIDs, ranked)
		}
		if byCategory[q.Category] == nil {
			byCategory[q.Category] = &metricSums{}
		}
		byCategory[q.Category].add(q.GoldIDs, ranked)
	}
	t.Logf("model %s, protocol turns, tags embedded: %v", model, os.Getenv("ENGRAM_LOCOMO_WITH_TAGS") == "1")
	t.Logf("%-24s %5s %6s %6s %6s %7s", "subset", "n", "R@1", "R@5", "R@10", "MRR@10")
	t.Log(all.row("ALL"))
	t.Log(nonAdv.row("ALL excl. adversarial"))
	for _, c := range sortedKeys(byCategory) {
		t.Log(byCategory[c].row(c))
	}
}

type locomoRecord struct {
	ID      string   `json:"id"`
	AgentID string   `json:"agent_id"`
	Type    string   `json:"type"`
	Text    string   `json:"text"`
	Tags    []string `json:"tags"`
}

type locomoQuery struct {
	ID       string   `json:"id"`
	AgentID  string   `json:"agent_id"`
	Query    string   `json:"query"`
	GoldIDs  []string `json:"gold_ids"`
	Category string   `json:"category"`
}

type agentIndex struct {
	ids     []string
	texts   []string
	vectors [][]float32
}

// search ranks by dot product (cosine: vectors are unit length); ties keep
// corpus order, like the BM25 baseline.
func (ix *agentIndex) search(q []float32, k int) []string {
	order := make([]int, len(ix.ids))
	scores := make([]float64, len(ix.ids))
	for i, v := range ix.vectors {
		order[i] = i
		scores[i] = dot(q, v)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return 0
	})
	ranked := make([]string, 0, k)
	for _, i := range order[:min(k, len(order))] {
		ranked = append(ranked, ix.ids[i])
	}
	return ranked
}

// metricSums accumulates score.py's per-query metrics.
type metricSums struct {
	n                  int
	r1, r5, r10, mrr10 float64
}

func (m *metricSums) add(gold, ranked []string) {
	isGold := map[string]bool{}
	for _, g := range gold {
		isGold[g] = true
	}
	recallAt := func(k int) float64 {
		hits := 0
		for _, id := range ranked[:min(k, len(ranked))] {
			if isGold[id] {
				hits++
			}
		}
		return float64(hits) / float64(len(gold))
	}
	m.n++
	m.r1 += recallAt(1)
	m.r5 += recallAt(5)
	m.r10 += recallAt(10)
	for i, id := range ranked[:min(10, len(ranked))] {
		if isGold[id] {
			m.mrr10 += 1 / float64(i+1)
			break
		}
	}
}

func (m *metricSums) row(label string) string {
	n := float64(m.n)
	return fmt.Sprintf("%-24s %5d %6.3f %6.3f %6.3f %7.3f", label, m.n, m.r1/n, m.r5/n, m.r10/n, m.mrr10/n)
}

func embedAll(t *testing.T, p *Provider, model string, texts []string) [][]float32 {
	t.Helper()
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: model, Texts: texts})
	if err != nil {
		t.Fatal(err)
	}
	return res.Vectors
}

func readJSONLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
