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
