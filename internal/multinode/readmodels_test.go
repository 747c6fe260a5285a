package multinode_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/testserver"
)

// TestSharedPostgresReadModels runs two nodes over one PostgreSQL database
// that holds both the log and the read models (--read-models postgres,
// whose URL defaults to the event store's): a write on one node is read on
// the other with its token, a node restarted still shows everything, and
// the shared read models equal a fresh rebuild from the log into another
// database.
func TestSharedPostgresReadModels(t *testing.T) {
	c := startCluster(t, 2, "--read-models", "postgres")
	one, two := c.nodes[0], c.nodes[1]
	key := testserver.Register(t, one.BaseURL, one.DataDir, "grace@example.com")
	var ids []string

	t.Run("a write on one node is read on the other with its token", func(t *testing.T) {
		for i := range 6 {
			writer, reader := c.nodes[i%2], c.nodes[1-i%2]
			text := fmt.Sprintf("release note %d: the cache warms before traffic", i)
			created := must(t, call(t, writer, "POST", "/memories", key, map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": text}}), http.StatusCreated)
			token := created.header.Get(api.ConsistencyTokenHeader)
			id, _ := created.data()["id"].(string)
			ids = append(ids, id)
			got := must(t, call(t, reader, "GET", "/memories/"+id, key, nil, api.ConsistencyTokenHeader, token), http.StatusOK)
			if got.data()["id"] != id {
				t.Fatalf("the other node read %v, want memory %s", got.data(), id)
			}
			found := must(t, call(t, reader, "POST", "/search", key, map[string]any{"agent_id": "a1", "query": fmt.Sprintf("release note %d", i), "limit": 20}, api.ConsistencyTokenHeader, token), http.StatusOK)
			if !resultsHold(found, id) {
				t.Fatalf("search on the other node with the token misses memory %s: %v", id, found.data())
			}
		}
		listed := listIDs(t, two, key, "a1")
		if len(listed) != len(ids) {
			t.Fatalf("the other node lists %d memories, want %d", len(listed), len(ids))
		}
	})

	t.Run("a key created on one node works on the other", func(t *testing.T) {
		made := must(t, call(t, one, "POST", "/auth/keys", key, map[string]any{"name": "laptop"}), http.StatusCreated)
		secret, _ := made.data()["key"].(string)
		listed := must(t, call(t, two, "GET", "/memories?agent_id=a1", secret, nil, api.ConsistencyTokenHeader, made.header.Get(api.ConsistencyTokenHeader)), http.StatusOK)
		if ms, _ := listed.data()["memories"].([]any); len(ms) != len(ids) {
			t.Fatalf("the new key lists %d memories on the other node, want %d", len(ms), len(ids))
		}
	})

	t.Run("another user sees none of it", func(t *testing.T) {
		other := testserver.Register(t, two.BaseURL, two.DataDir, "mallory@example.com")
		if r := call(t, two, "GET", "/memories/"+ids[0], other, nil); r.status != http.StatusNotFound {
			t.Fatalf("another user's memory: %d %v, want 404", r.status, r.body)
		}
		if listed := listIDs(t, one, other, "a1"); len(listed) != 0 {
			t.Fatalf("another user lists %v", listed)
		}
	})

	t.Run("a restarted node still shows everything", func(t *testing.T) {
		if err := one.Stop(); err != nil {
			t.Fatal(err)
		}
		one = c.start(one.DataDir)
		c.nodes[0] = one
		if listed := listIDs(t, one, key, "a1"); len(listed) != len(ids) {
			t.Fatalf("after the restart the node lists %d memories, want %d", len(listed), len(ids))
		}
		found := must(t, call(t, one, "POST", "/search", key, map[string]any{"agent_id": "a1", "query": "release note 3", "limit": 20}), http.StatusOK)
		if !resultsHold(found, ids[3]) {
			t.Fatalf("search after the restart misses memory %s: %v", ids[3], found.data())
		}
	})

	t.Run("the shared read models equal a fresh rebuild", func(t *testing.T) {
		for _, n := range c.nodes {
			if err := n.Stop(); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		shared := exportReadModels(t, ctx, t.TempDir(), c.dbURL, app.ReadModels{Backend: app.PostgresReadModels})
		rebuilt := exportReadModels(t, ctx, t.TempDir(), c.dbURL, app.ReadModels{Backend: app.PostgresReadModels, URL: pg.Database(t)})
		for name, want := range rebuilt {
			if len(want) == 0 && name != "jobs" && name != "suggestions" && name != "provenance" {
				t.Errorf("read model %s: the rebuild is empty", name)
			}
			if !bytes.Equal(shared[name], want) {
				t.Errorf("read model %s differs from a fresh rebuild (%d bytes vs %d):\n%s\n---\n%s", name, len(shared[name]), len(want), shared[name], want)
			}
		}
	})
}

// listIDs lists the ids of the agent's memories on node.
func listIDs(t *testing.T, node *testserver.Server, key, agentID string) []string {
	t.Helper()
	r := must(t, call(t, node, "GET", "/memories?limit=100&agent_id="+agentID, key, nil), http.StatusOK)
	ms, _ := r.data()["memories"].([]any)
	out := []string{}
	for _, m := range ms {
		id, _ := m.(map[string]any)["id"].(string)
		out = append(out, id)
	}
	return out
}
