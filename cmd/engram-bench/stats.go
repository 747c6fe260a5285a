package main

import (
	"math"
	"slices"
)

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of xs;
// 0 for no samples. Nearest rank returns a value that was measured, and
// p100 is the maximum.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return nearestRank(s, p)
}

func nearestRank(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// summary is the distribution of one latency series, in milliseconds.
type summary struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return summary{
		Count: len(s), Mean: sum / float64(len(s)),
		P50: nearestRank(s, 50), P95: nearestRank(s, 95), P99: nearestRank(s, 99), Max: s[len(s)-1],
	}
}

// wholeNumbers reports whether every sample is an integer: the server's
// query_time_ms is whole milliseconds, which makes its percentiles coarse,
// and the reports say so.
func wholeNumbers(xs []float64) bool {
	for _, x := range xs {
		if x != math.Trunc(x) {
			return false
		}
	}
	return len(xs) > 0
}
