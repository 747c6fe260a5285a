package search_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/projections/search"
	"github.com/engram-memory/engram/projections/search/searchtest"
)

// TestLoCoMoQuality is a tuning aid: it loads the LoCoMo dev split's turns
// (raw_entries) into the search stack and reports R@5, R@10, MRR@10 and
// nDCG@10 per mode, excluding adversarial queries. It runs only when
// ENGRAM_LOCOMO_DIR is set. ENGRAM_FUSION="convex|rrf,wv,wk,K[,impute]" overrides
// the fusion options. The reference harness is cmd/engram-bench.
func TestLoCoMoQuality(t *testing.T) {
	dir := os.Getenv("ENGRAM_LOCOMO_DIR")
	if dir == "" {
		t.Skip("set ENGRAM_LOCOMO_DIR to the locomo-dev directory to run")
	}
	var opts search.Options
	if f := os.Getenv("ENGRAM_FUSION"); f != "" {
		parts := strings.Split(f, ",")
		opts.Fusion = search.Fusion(parts[0])
		opts.VectorWeight, _ = strconv.ParseFloat(parts[1], 64)
		opts.KeywordWeight, _ = strconv.ParseFloat(parts[2], 64)
		opts.KeywordSaturation, _ = strconv.ParseFloat(parts[3], 64)
		opts.ImputeMissing = len(parts) > 4 && parts[4] == "impute"
	}
	s := searchtest.New(t, searchtest.Options{Search: opts})
	ctx := context.Background()
	type record struct {
		ID, AgentID, Type, Text, CreatedAt string
		Tags                               []string
	}
	byAgent := map[string][]record{}
	var agents []string
	for _, line := range readLines(t, filepath.Join(dir, "corpus.jsonl")) {
		var r struct {
			ID        string   `json:"id"`
			AgentID   string   `json:"agent_id"`
			Type      string   `json:"type"`
			Text      string   `json:"text"`
			CreatedAt string   `json:"created_at"`
			Tags      []string `json:"tags"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Type != "raw_entries" {
			continue
		}
		if _, ok := byAgent[r.AgentID]; !ok {
			agents = append(agents, r.AgentID)
		}
		byAgent[r.AgentID] = append(byAgent[r.AgentID], record{r.ID, r.AgentID, r.Type, r.Text, r.CreatedAt, r.Tags})
	}
	idmap := map[string]string{}
	for _, a := range agents {
		recs := byAgent[a]
		in := make([]commands.MemoryInput, len(recs))
		for i, r := range recs {
			content, _ := json.Marshal(map[string]string{"content": r.Text})
			in[i] = commands.MemoryInput{Type: r.Type, Content: content, Tags: r.Tags, CreatedAt: r.CreatedAt}
		}
		created, err := s.Memories.CreateBatch(ctx, searchtest.Meta("bench"), a, in)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range created {
			idmap[c.ID] = recs[i].ID
		}
	}
	type query struct {
		ID       string   `json:"id"`
		AgentID  string   `json:"agent_id"`
		Query    string   `json:"query"`
		GoldIDs  []string `json:"gold_ids"`
		Category string   `json:"category"`
	}
	var queries []query
	for _, line := range readLines(t, filepath.Join(dir, "queries.jsonl")) {
		var q query
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			t.Fatal(err)
		}
		if q.Category != "adversarial" {
			queries = append(queries, q)
		}
	}
	t.Logf("options %+v; %d queries (excluding adversarial), protocol turns", s.Search.Options(), len(queries))
	for _, mode := range allModes {
		var r5, r10, mrr, ndcg float64
		for _, q := range queries {
			resp, err := s.Search.Search(ctx, search.Request{UserID: "bench", AgentID: q.AgentID, Query: q.Query, Mode: mode, Limit: 10,
				Filter: search.Filter{Types: []memory.Type{memory.RawEntry}}})
			if err != nil {
				t.Fatal(err)
			}
			var ranked []string
			for _, res := range resp.Results {
				ranked = append(ranked, idmap[res.Memory.ID])
			}
			a, b, c, d := metrics(q.GoldIDs, ranked)
			r5, r10, mrr, ndcg = r5+a, r10+b, mrr+c, ndcg+d
		}
		n := float64(len(queries))
		t.Logf("%-8s R@5 %.3f  R@10 %.3f  MRR@10 %.3f  nDCG@10 %.3f", mode, r5/n, r10/n, mrr/n, ndcg/n)
	}
}

// metrics follows the bench's score.py.
func metrics(gold, ranked []string) (r5, r10, mrr, ndcg float64) {
	var seen []string
	hits5, hits10 := 0, 0
	var dcg float64
	for i, id := range ranked {
		if i >= 10 || slices.Contains(seen, id) {
			continue
		}
		seen = append(seen, id)
		if !slices.Contains(gold, id) {
			continue
		}
		if i < 5 {
			hits5++
		}
		hits10++
		if mrr == 0 {
			mrr = 1 / float64(i+1)
		}
		dcg += 1 / math.Log2(float64(i+2))
	}
	var ideal float64
	for i := range min(len(gold), 10) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	return float64(hits5) / float64(len(gold)), float64(hits10) / float64(len(gold)), mrr, dcg / ideal
}

func readLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", path, err))
	}
	return out
}
