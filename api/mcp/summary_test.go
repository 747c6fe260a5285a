package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

// A search result's line is summarised from its stored content as it is,
// and reads exactly as the summary of the same content decoded.
func TestRawSummaryReadsAsSummary(t *testing.T) {
	long := strings.Repeat("é", 200)
	tests := []struct {
		name, content, want string
	}{
		{"a belief: its statement", `{"statement":"caches help","confidence":0.8}`, "caches help"},
		{"an episode: its objective", `{"objective":"ship it","outcome":"shipped","lessons":["small steps"]}`, "ship it"},
		{"a value: the statement before the name", `{"name":"honesty","statement":"say what is so"}`, "say what is so"},
		{"a note: its content", `{"content":"the cache cut latency","note_type":"observation"}`, "the cache cut latency"},
		{"an empty statement: the next field", `{"statement":"","title":"a goal"}`, "a goal"},
		{"a field that is not text: the next field", `{"content":{"nested":true},"entity_name":"Claire"}`, "Claire"},
		{"a drive: its type", `{"drive_type":"curiosity","intensity":0.5}`, "curiosity"},
		{"nothing to show", `{"intensity":0.5}`, ""},
		{"no content", `{}`, ""},
		{"a long text: cut to 160 characters", `{"statement":"` + long + `"}`, strings.Repeat("é", 160) + "…"},
		{"160 characters: whole", `{"statement":"` + long[:320] + `"}`, long[:320]},
		{"spaces between the members (PostgreSQL's jsonb)", `{ "content" : "spaced out" , "note_type": "observation" }`, "spaced out"},
		{"escapes in the text", `{"statement":"say \"hi\"\n\u00e9 \ud83d\ude00"}`, "say \"hi\"\né 😀"},
		{"quotes and brackets in a field before", `{"outcome":"a }\"{ ] b","lessons":["]}"],"objective":"ship it"}`, "ship it"},
		{"a field twice: the last", `{"statement":"first","statement":"second"}`, "second"},
		{"bytes that are not UTF-8", "{\"statement\":\"caf\xe9\"}", "caf\ufffd"},
		{"null", `null`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var decoded map[string]any
			if err := json.Unmarshal([]byte(tc.content), &decoded); err != nil {
				t.Fatal(err)
			}
			if got, fromMap := rawSummary(json.RawMessage(tc.content)), summary(decoded); got != tc.want || fromMap != tc.want {
				t.Fatalf("rawSummary %q, summary %q, want %q", got, fromMap, tc.want)
			}
		})
	}
}

// search_memories' text: the count, one line per result (score to two
// decimals, type, id, summary), and the degradation last.
func TestSearchTextHasALinePerResult(t *testing.T) {
	belief := SearchResult{Type: "belief", ID: "b1", Score: 0.876, Content: json.RawMessage(`{"statement":"caches help"}`)}
	drive := SearchResult{Type: "drive", ID: "d1", Score: 1, Content: json.RawMessage(`{"intensity":0.5}`)}
	tests := []struct {
		name string
		in   SearchResults
		want string
	}{
		{"no results", SearchResults{}, "0 results"},
		{"results best first", SearchResults{Results: []SearchResult{drive, belief}}, "2 results\n1.00 drive d1: \n0.88 belief b1: caches help"},
		{"degraded", SearchResults{Results: []SearchResult{belief}, Degraded: "vector_unavailable"}, "1 results\n0.88 belief b1: caches help\ndegraded: vector_unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := searchText(tc.in); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
