package openai

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"milliseconds win", map[string]string{"Retry-After": "7", "Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"absent", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := parseRetryAfter(h, now); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBackoffGrowsWithJitterAndCap(t *testing.T) {
	base, max := 100*time.Millisecond, time.Second
	tests := []struct {
		retry    int
		min, max time.Duration
	}{
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond},
		{10, 500 * time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		for range 200 {
			if d := backoff(tt.retry, base, max); d < tt.min || d > tt.max {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", tt.retry, d, tt.min, tt.max)
			}
		}
	}
}

func TestSplitBatches(t *testing.T) {
	long := string(make([]byte, 300)) // estimated 101 tokens
	tests := []struct {
		name      string
		texts     []string
		maxInputs int
		maxTokens int
		want      []span
	}{
		{"empty", nil, 3, 1000, nil},
		{"by count", []string{"a", "b", "c", "d", "e"}, 2, 1000, []span{{0, 2}, {2, 4}, {4, 5}}},
		{"by tokens", []string{long, long, long}, 10, 250, []span{{0, 2}, {2, 3}}},
		{"oversized text alone", []string{"a", long, "b"}, 10, 50, []span{{0, 1}, {1, 2}, {2, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splitBatches(tt.texts, tt.maxInputs, tt.maxTokens); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
