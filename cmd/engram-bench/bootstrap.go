package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Paired bootstrap of a difference between two modes (issue 13): both
// modes answered the same queries, so resampling queries with replacement
// and taking the mean per-query difference each time gives the spread of
// the difference that comes from which questions the split happens to hold.
const (
	bootstrapResamples = 10_000
	bootstrapSeed      = 13 // fixed, so a report can be reproduced exactly
)

// perQuery holds one system's per-query metrics, in query order, of the
// queries that have gold ids (as score.py skips the others).
type perQuery struct {
	category []string
	values   map[string][]float64 // by metric name
}

// scorePerQuery scores results the way score.py does: notes expanded to
// their source ids in place (sources, turns+notes only), repeated ids
// counted once at their first position, a missing results line scoring 0.
func scorePerQuery(queries []queryRecord, results []resultLine, sources map[string][]string) perQuery {
	ranked := map[string][]string{}
	for _, r := range results {
		if _, dup := ranked[r.QueryID]; dup {
			continue
		}
		var ids []string
		for _, id := range r.RankedIDs {
			if src, ok := sources[id]; ok {
				ids = append(ids, src...)
			} else {
				ids = append(ids, id)
			}
		}
		ranked[r.QueryID] = dedupe(ids)
	}
	pq := perQuery{values: map[string][]float64{}}
	for _, q := range queries {
		if len(q.GoldIDs) == 0 {
			continue
		}
		for name, v := range queryMetrics(q.GoldIDs, ranked[q.ID]) {
			pq.values[name] = append(pq.values[name], v)
		}
		pq.category = append(pq.category, q.Category)
	}
	return pq
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// queryMetrics is score.py's score_one.
func queryMetrics(gold, ranked []string) map[string]float64 {
	isGold := map[string]bool{}
	for _, g := range gold {
		isGold[g] = true
	}
	nGold := float64(len(isGold))
	m := map[string]float64{}
	for _, k := range []int{1, 5, 10} {
		hits := 0
		for _, id := range ranked[:min(k, len(ranked))] {
			if isGold[id] {
				hits++
			}
		}
		m[fmt.Sprintf("R@%d", k)] = float64(hits) / nGold
	}
	var rr, dcg, idcg float64
	for i, id := range ranked[:min(10, len(ranked))] {
		if isGold[id] {
			if rr == 0 {
				rr = 1 / float64(i+1)
			}
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	for i := range min(len(gold), 10) {
		idcg += 1 / math.Log2(float64(i+2))
	}
	m["MRR@10"], m["nDCG@10"] = rr, dcg/idcg
	return m
}

// subset returns the metric's values of the queries whose category is not
// excluded.
func (p perQuery) subset(metric, excluded string) []float64 {
	var out []float64
	for i, v := range p.values[metric] {
		if p.category[i] != excluded {
			out = append(out, v)
		}
	}
	return out
}

// interval is a mean difference and its bootstrap 95% interval.
type interval struct {
	Mean, Lo, Hi float64
}

// pairedBootstrap resamples the per-query differences a[i] − b[i] with
// replacement and returns their mean and the 2.5th and 97.5th percentiles
// of the resampled means.
func pairedBootstrap(a, b []float64, resamples int, seed uint64) interval {
	if len(a) != len(b) || len(a) == 0 {
		return interval{}
	}
	diff := make([]float64, len(a))
	var sum float64
	for i := range a {
		diff[i] = a[i] - b[i]
		sum += diff[i]
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(a))))
	means := make([]float64, resamples)
	for r := range means {
		var s float64
		for range diff {
			s += diff[rng.IntN(len(diff))]
		}
		means[r] = s / float64(len(diff))
	}
	slices.Sort(means)
	return interval{Mean: sum / float64(len(diff)), Lo: nearestRank(means, 2.5), Hi: nearestRank(means, 97.5)}
}

// modeDifference is hybrid − keyword per table metric on the subset.
type modeDifference struct {
	better, worse string
	subset        string
	n             int
	byMetric      map[string]interval
}

// compareModes bootstraps better − worse on every table metric over the
// queries outside the excluded category. It first checks that the Go
// per-query scores average to score.py's numbers, so the interval is
// about the same numbers as the table.
func compareModes(better, worse string, a, b perQuery, scores map[string]scoreFile) (modeDifference, error) {
	d := modeDifference{better: better, worse: worse, subset: subsetExclAdv, byMetric: map[string]interval{}}
	for _, m := range tableMetrics {
		av, bv := a.subset(m, excludedCategory), b.subset(m, excludedCategory)
		for _, check := range []struct {
			name string
			vals []float64
		}{{better, av}, {worse, bv}} {
			want, _ := scores[check.name].Groups[subsetExclAdv].metric(m)
			if got := mean(check.vals); math.Abs(got-want) > 1e-9 {
				return d, fmt.Errorf("bootstrap: %s %s is %.6f per query but score.py says %.6f", check.name, m, got, want)
			}
		}
		d.n = len(av)
		d.byMetric[m] = pairedBootstrap(av, bv, bootstrapResamples, bootstrapSeed)
	}
	return d, nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// markdown renders the differences as a table with their intervals.
func (d modeDifference) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s − %s on %s (n = %d), paired bootstrap over queries, %d resamples, 95%% interval:\n\n",
		d.better, d.worse, d.subset, d.n, bootstrapResamples)
	b.WriteString("| metric | difference | 95% interval |\n|---|---:|---|\n")
	for _, m := range tableMetrics {
		iv := d.byMetric[m]
		fmt.Fprintf(&b, "| %s | %+.4f | [%+.4f, %+.4f] |\n", m, iv.Mean, iv.Lo, iv.Hi)
	}
	return b.String()
}
