package api_test

import (
	"net/url"
	"testing"
)

// TestDotOnlyAgentIDsRejected: "." and ".." (and any id made only of dots)
// would name a directory and its parent on disk, so every endpoint that
// takes an agent id answers 400 naming agent_id, and nothing is written.
func TestDotOnlyAgentIDsRejected(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	for _, id := range []string{".", "..", "...."} {
		tests := []struct {
			name, method, path string
			body               any
		}{
			{"create memory", "POST", "/v1/memories", map[string]any{"agent_id": id, "type": "note", "content": map[string]any{"content": "x"}}},
			{"create batch", "POST", "/v1/memories/batch", map[string]any{"agent_id": id, "memories": []any{map[string]any{"type": "note", "content": map[string]any{"content": "x"}}}}},
			{"list memories", "GET", "/v1/memories?agent_id=" + url.QueryEscape(id), nil},
			{"search", "POST", "/v1/search", map[string]any{"agent_id": id, "query": "x"}},
			{"similar", "POST", "/v1/embeddings/similar", map[string]any{"agent_id": id, "embedding": []float32{1, 0, 0}}},
			{"bulk re-embed", "POST", "/v1/embeddings/bulk-reembed", map[string]any{"agent_id": id}},
		}
		for _, tt := range tests {
			t.Run(tt.name+" "+id, func(t *testing.T) {
				s.request(t, tt.method, tt.path, aliceKey, tt.body).invalid(t, "agent_id")
			})
		}
	}
	r := s.must(200, "GET", "/v1/agents", aliceKey, nil)
	if agents, _ := r.data()["agents"].([]any); len(agents) != 0 {
		t.Fatalf("agents created by rejected requests: %v", agents)
	}
}
