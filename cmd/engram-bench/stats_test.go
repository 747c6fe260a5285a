package main

import "testing"

func TestPercentile(t *testing.T) {
	ten := []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}
	tests := []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{nil, 50, 0},
		{[]float64{3}, 99, 3},
		{ten, 50, 5},
		{ten, 95, 10},
		{ten, 10, 1},
		{ten, 11, 2},
		{ten, 100, 10},
		{ten, 0.001, 1},
	}
	for _, tc := range tests {
		if got := percentile(tc.xs, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.xs, tc.p, got, tc.want)
		}
	}
	if ten[0] != 10 {
		t.Fatal("percentile sorted its input")
	}
}

func TestSummarize(t *testing.T) {
	xs := make([]float64, 0, 1000)
	for i := 1000; i >= 1; i-- {
		xs = append(xs, float64(i))
	}
	got := summarize(xs)
	want := summary{Count: 1000, Mean: 500.5, P50: 500, P95: 950, P99: 990, Max: 1000}
	if got != want {
		t.Fatalf("summarize = %+v, want %+v", got, want)
	}
	if (summarize(nil) != summary{}) {
		t.Fatal("empty summary not zero")
	}
}

func TestWholeNumbers(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want bool
	}{{nil, false}, {[]float64{0, 1, 3}, true}, {[]float64{0, 1.5}, false}} {
		if got := wholeNumbers(tc.xs); got != tc.want {
			t.Errorf("wholeNumbers(%v) = %v", tc.xs, got)
		}
	}
}
