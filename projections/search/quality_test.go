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
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

// TestLoCoMoQuality is a tuning aid: it loads the LoCoMo dev split's turns
// (raw_entries) into the search stack and reports R@5, R@10, MRR@10 and
// nDCG@10 per mode, excluding adversarial queries (the measure) and
// over all queries. It runs only when ENGRAM_LOCOMO_DIR is set.
//
//   - ENGRAM_FUSION="convex|minmax|rrf,wv,wk,P[,impute]" overrides the fusion
//     options: P is the keyword saturation K (convex, minmax) or RRF's R.
//   - ENGRAM_FUSION_SWEEP=1 also reports hybrid with each fusion parameter
//     moved by ±50% (the candidate pool: halved and doubled), one at a time.
//   - ENGRAM_FUSION_WV="0.1,0.2,..." also reports hybrid at each of these
//     vector weights (keyword weight 1 − wv).
//   - ENGRAM_EMBED_MODEL_DIR loads a local model directory and
//     ENGRAM_EMBED_MODEL binds the agents to a model (default
//     engram-hash-384, the search test stack's).
//   - ENGRAM_PROTOCOL=turns+notes loads the notes too, searches all types
//     and counts a note as the turns it was derived from (score.py
//     --corpus).
//
// The reference harness is cmd/engram-bench.
func TestLoCoMoQuality(t *testing.T) {
	dir := os.Getenv("ENGRAM_LOCOMO_DIR")
	if dir == "" {
		t.Skip("set ENGRAM_LOCOMO_DIR to the locomo-dev directory to run")
	}
	var opts search.Options
	var saturation float64
	if f := os.Getenv("ENGRAM_FUSION"); f != "" {
		var err error
		if opts, saturation, err = parseFusion(f); err != nil {
			t.Fatal(err)
		}
		opts.Models = map[string]search.ModelFusion{} // the override holds for every model
	}
	s := searchtest.New(t, searchtest.Options{Search: opts, Indexes: app.Indexes{KeywordSaturation: saturation}, Model: os.Getenv("ENGRAM_EMBED_MODEL"),
		Embed: local.Options{ModelDirs: strings.FieldsFunc(os.Getenv("ENGRAM_EMBED_MODEL_DIR"), func(r rune) bool { return r == ',' })}})
	ctx := context.Background()
	withNotes := os.Getenv("ENGRAM_PROTOCOL") == "turns+notes"
	var types []memory.Type
	if !withNotes {
		types = []memory.Type{memory.RawEntry}
	}
	idmap, sources := loadCorpus(t, s, filepath.Join(dir, "corpus.jsonl"), withNotes)
	var queries []locomoQuery
	for _, line := range readLines(t, filepath.Join(dir, "queries.jsonl")) {
		var q locomoQuery
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			t.Fatal(err)
		}
		queries = append(queries, q)
	}
	eval := func(svc *search.Service, mode search.Mode) (excl, all [4]float64) {
		var nExcl int
		for _, q := range queries {
			resp, err := svc.Search(ctx, search.Request{UserID: "bench", AgentID: q.AgentID, Query: q.Query, Mode: mode, Limit: 10,
				Filter: search.Filter{Types: types}})
			if err != nil {
				t.Fatal(err)
			}
			var ranked []string
			for _, res := range resp.Results {
				id := idmap[res.Memory.ID]
				if src, ok := sources[id]; ok {
					for _, s := range src {
						if !slices.Contains(ranked, s) {
							ranked = append(ranked, s)
						}
					}
				} else if !slices.Contains(ranked, id) {
					ranked = append(ranked, id)
				}
			}
			a, b, c, d := metrics(q.GoldIDs, ranked)
			m := [4]float64{a, b, c, d}
			for i := range m {
				all[i] += m[i] / float64(len(queries))
				if q.Category != "adversarial" {
					excl[i] += m[i]
				}
			}
			if q.Category != "adversarial" {
				nExcl++
			}
		}
		for i := range excl {
			excl[i] /= float64(nExcl)
		}
		return excl, all
	}
	row := func(name string, m [4]float64) {
		t.Helper()
		t.Logf("%-26s R@5 %.3f  R@10 %.3f  MRR@10 %.3f  nDCG@10 %.3f", name, m[0], m[1], m[2], m[3])
	}
	t.Logf("options %+v; %d queries, notes %v", s.Search.Options(), len(queries), withNotes)
	for _, mode := range allModes {
		excl, all := eval(s.Search, mode)
		row(string(mode)+" excl. adversarial", excl)
		row(string(mode)+" ALL", all)
	}
	// Variants start from the fusion the agents' model actually gets.
	base := s.Search.Options()
	if m, ok := base.Models[os.Getenv("ENGRAM_EMBED_MODEL")]; ok {
		base.Fusion, base.VectorWeight, base.KeywordWeight = m.Fusion, m.VectorWeight, m.KeywordWeight
	}
	base.Models = map[string]search.ModelFusion{}
	var variants []variant
	if os.Getenv("ENGRAM_FUSION_SWEEP") != "" {
		variants = sweep(base)
	}
	for _, f := range strings.FieldsFunc(os.Getenv("ENGRAM_FUSION_WV"), func(r rune) bool { return r == ',' }) {
		wv, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		o := base
		o.VectorWeight, o.KeywordWeight = wv, 1-wv
		variants = append(variants, variant{fmt.Sprintf("wv %.3g", wv), o})
	}
	for _, v := range variants {
		svc, err := s.Core.Search(search.ProviderEmbedder{Provider: s.Provider}, v.opts)
		if err != nil {
			t.Fatal(err)
		}
		excl, _ := eval(svc, search.ModeHybrid)
		row("hybrid "+v.name, excl)
	}
}

type locomoQuery struct {
	ID       string   `json:"id"`
	AgentID  string   `json:"agent_id"`
	Query    string   `json:"query"`
	GoldIDs  []string `json:"gold_ids"`
	Category string   `json:"category"`
}

// loadCorpus creates the split's raw_entries (and with notes its notes)
// through the memory commands and returns a map from memory id to
// benchmark id, and the notes' source turn ids by benchmark id.
func loadCorpus(t *testing.T, s *searchtest.Env, path string, notes bool) (map[string]string, map[string][]string) {
	type record struct {
		ID        string   `json:"id"`
		AgentID   string   `json:"agent_id"`
		Type      string   `json:"type"`
		Text      string   `json:"text"`
		CreatedAt string   `json:"created_at"`
		Tags      []string `json:"tags"`
		SourceIDs []string `json:"source_ids"`
	}
	sources := map[string][]string{}
	byAgent := map[string][]record{}
	var agents []string
	for _, line := range readLines(t, path) {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Type != "raw_entries" && !(notes && r.Type == "notes") {
			continue
		}
		if len(r.SourceIDs) > 0 {
			sources[r.ID] = r.SourceIDs
		}
		if _, ok := byAgent[r.AgentID]; !ok {
			agents = append(agents, r.AgentID)
		}
		byAgent[r.AgentID] = append(byAgent[r.AgentID], r)
	}
	idmap := map[string]string{}
	for _, a := range agents {
		recs := byAgent[a]
		in := make([]commands.MemoryInput, len(recs))
		for i, r := range recs {
			content, _ := json.Marshal(map[string]string{"content": r.Text})
			in[i] = commands.MemoryInput{Type: r.Type, Content: content, Tags: r.Tags, CreatedAt: r.CreatedAt}
		}
		created, err := s.Memories.CreateBatch(context.Background(), searchtest.Meta("bench"), a, in)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range created {
			idmap[c.ID] = recs[i].ID
		}
	}
	return idmap, sources
}

// parseFusion reads ENGRAM_FUSION; P is R for rrf, else the embedded
// keyword index's saturation K.
func parseFusion(f string) (o search.Options, saturation float64, err error) {
	parts := strings.Split(f, ",")
	if len(parts) < 4 {
		return o, 0, fmt.Errorf("ENGRAM_FUSION=%q: want fusion,wv,wk,P[,impute]", f)
	}
	o.Fusion = search.Fusion(parts[0])
	var nums [3]float64
	for i := range nums {
		v, err := strconv.ParseFloat(parts[i+1], 64)
		if err != nil {
			return o, 0, fmt.Errorf("ENGRAM_FUSION=%q: %w", f, err)
		}
		nums[i] = v
	}
	o.VectorWeight, o.KeywordWeight = nums[0], nums[1]
	if o.Fusion == search.FusionRRF {
		o.RRFK = nums[2]
	} else {
		saturation = nums[2]
	}
	o.ImputeMissing = len(parts) > 4 && parts[4] == "impute"
	return o, saturation, nil
}

type variant struct {
	name string
	opts search.Options
}

// sweep moves each fusion parameter of base by ±50%, one at a time. The
// keyword saturation K belongs to the keyword index, not the service: vary
// it with ENGRAM_FUSION, one stack per value.
func sweep(base search.Options) []variant {
	var out []variant
	add := func(name string, f func(o *search.Options)) {
		o := base
		f(&o)
		out = append(out, variant{name, o})
	}
	for _, x := range []float64{0.5, 1.5} {
		add(fmt.Sprintf("wv×%.1f (%.3g)", x, base.VectorWeight*x), func(o *search.Options) { o.VectorWeight *= x })
	}
	for _, x := range []float64{0.5, 1.5} {
		if base.Fusion == search.FusionRRF {
			add(fmt.Sprintf("R×%.1f (%.3g)", x, base.RRFK*x), func(o *search.Options) { o.RRFK *= x })
		}
	}
	for _, x := range []float64{0.5, 2} {
		add(fmt.Sprintf("pool×%.1f (%d)", x, int(float64(base.MinCandidates)*x)), func(o *search.Options) {
			o.MinCandidates = int(float64(o.MinCandidates) * x)
		})
	}
	return out
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
