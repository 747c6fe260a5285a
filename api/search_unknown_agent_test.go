package api_test

import (
	"net/http"
	"testing"
)

// A search names its agent in the body; an agent the caller has not
// created, or another user's, does not exist for it: 404 not_found, as on
// every route that names an agent (schemathesis found this answer
// undocumented).
func TestSearchOfAnUnknownAgent(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.request(t, "POST", "/v1/memories", aliceKey, map[string]any{
		"agent_id": "claire", "type": "note", "content": map[string]any{"content": "the heron at the weir"},
	}).must(t, http.StatusCreated, nil)
	for _, tc := range []struct{ name, key, agent string }{
		{"an agent nobody created", aliceKey, "nobody"},
		{"another user's agent", bobKey, "claire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, s.request(t, "POST", "/v1/search", tc.key, map[string]any{"agent_id": tc.agent, "query": "heron"}), http.StatusNotFound, "not_found")
		})
	}
}
