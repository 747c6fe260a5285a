package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkDecodeJSON is the decoding of a request body: a memory create
// and a batch of 100 memories (numbers written as integers, so the common
// path; an integral number written with a fraction takes the rewrite).
func BenchmarkDecodeJSON(b *testing.B) {
	item := `{"type":"belief","content":{"statement":"tests catch drift in the document","confidence":0.8,"belief_type":"fact"},"tags":["a","b"],"created_at":"2026-01-02T03:04:05Z"}`
	batch := `{"agent_id":"claire","memories":[` + strings.Repeat(item+",", 99) + item + `]}`
	search := func(limit string) string {
		return `{"agent_id":"claire","query":"what did caroline adopt","limit":` + limit + `,"types":["notes","beliefs"],"min_score":0.1,"mode":"hybrid","explain":true}`
	}
	type searchBody struct {
		AgentID  string   `json:"agent_id"`
		Query    string   `json:"query"`
		Limit    int      `json:"limit"`
		Types    []string `json:"types"`
		MinScore float64  `json:"min_score"`
		Mode     string   `json:"mode"`
		Explain  bool     `json:"explain"`
	}
	type batchBody struct {
		AgentID  string            `json:"agent_id"`
		Memories []json.RawMessage `json:"memories"`
	}
	for _, bench := range []struct {
		name, body string
		into       func() any
	}{
		{"create", `{"agent_id":"claire",` + item[1:], func() any {
			return new(struct {
				AgentID string `json:"agent_id"`
				memoryItemJSON
			})
		}},
		{"batch100", batch, func() any { return new(batchBody) }},
		{"search", search("10"), func() any { return new(searchBody) }},
		{"search-limit-10.0", search("10.0"), func() any { return new(searchBody) }},
	} {
		b.Run(fmt.Sprintf("%s-%dB", bench.name, len(bench.body)), func(b *testing.B) {
			body := []byte(bench.body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("POST", "/v1/x", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				if err := decodeJSON(r, bench.into()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
