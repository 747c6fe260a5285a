package main

import (
	"fmt"
	"strings"
)

// targetsFailedError reports quality targets that were missed.
type targetsFailedError struct{ failures []string }

func (e *targetsFailedError) Error() string {
	return "quality targets missed:\n  " + strings.Join(e.failures, "\n  ")
}

// targetSpec is the quality target check: on every metric, keyword must
// reach the BM25 baseline and hybrid the vector side (issue 4, item 3),
// and hybrid must beat keyword (issue 13: the vector side earns its
// weight), allowing a shortfall of tolerance.
type targetSpec struct {
	metrics   []string
	tolerance float64
}

// check compares the rows of one subset; a rule whose systems did not run
// is skipped. It returns a message per miss.
func (t targetSpec) check(rows []tableRow) ([]string, error) {
	by := map[string]groupScore{}
	for _, r := range rows {
		by[r.Name] = r.Score
	}
	rules := []struct {
		better, worse string
		strict        bool
	}{
		{"keyword", "bm25", false},
		{"hybrid", "keyword", true},
		{"hybrid", "vector", false},
	}
	var misses []string
	for _, m := range t.metrics {
		for _, rule := range rules {
			b, okB := by[rule.better]
			w, okW := by[rule.worse]
			if !okB || !okW {
				continue
			}
			bv, ok := b.metric(m)
			if !ok {
				return nil, usageErr("unknown target metric %q (have %s)", m, strings.Join(metricNames, ", "))
			}
			wv, _ := w.metric(m)
			switch {
			case bv+t.tolerance < wv:
				misses = append(misses, fmt.Sprintf("%s %s %.4f < %s %.4f", rule.better, m, bv, rule.worse, wv))
			case rule.strict && bv+t.tolerance == wv:
				misses = append(misses, fmt.Sprintf("%s %s %.4f is not above %s %.4f", rule.better, m, bv, rule.worse, wv))
			}
		}
	}
	return misses, nil
}
