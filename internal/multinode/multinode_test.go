package multinode_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/testserver"
)

// TestThreeNodes writes on one node and reads with the token on the
// others, revokes a key on one node and is refused on the others at once,
// kills a node mid-load and restarts it, and finally compares every node's
// read models with a fresh rebuild from the shared log.
func TestThreeNodes(t *testing.T) {
	c := startCluster(t, 3)
	one, two, three := c.nodes[0], c.nodes[1], c.nodes[2]
	key := testserver.Register(t, one.BaseURL, one.DataDir, "ada@example.com")

	t.Run("read your writes with the token on another node", func(t *testing.T) {
		for i := range 10 {
			text := fmt.Sprintf("deploy checklist %d: run the migration before the release", i)
			created := must(t, call(t, one, "POST", "/memories", key, map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": text}}), http.StatusCreated)
			token := created.header.Get(api.ConsistencyTokenHeader)
			if token == "" {
				t.Fatal("a write's response carries no consistency token")
			}
			id, _ := created.data()["id"].(string)
			reader := c.nodes[1+i%2]
			got := must(t, call(t, reader, "GET", "/memories/"+id, key, nil, api.ConsistencyTokenHeader, token), http.StatusOK)
			if got.data()["id"] != id {
				t.Fatalf("node read %v, want memory %s", got.data(), id)
			}
			found := must(t, call(t, reader, "POST", "/search", key, map[string]any{"agent_id": "a1", "query": fmt.Sprintf("deploy checklist %d", i), "limit": 20}, api.ConsistencyTokenHeader, token), http.StatusOK)
			if !resultsHold(found, id) {
				t.Fatalf("search on another node with the token misses memory %s: %v", id, found.data())
			}
		}
	})

	t.Run("malformed token is 400 on every node", func(t *testing.T) {
		for _, n := range c.nodes {
			r := call(t, n, "GET", "/memories?agent_id=a1", key, nil, api.ConsistencyTokenHeader, "not-a-token")
			if r.status != http.StatusBadRequest || r.code() != "invalid_consistency_token" {
				t.Fatalf("got %d %s, want 400 invalid_consistency_token", r.status, r.code())
			}
		}
	})

	t.Run("a key revoked on one node is refused by every node at once", func(t *testing.T) {
		for i := range 5 {
			made := must(t, call(t, one, "POST", "/auth/keys", key, map[string]any{"name": fmt.Sprintf("k%d", i)}), http.StatusCreated)
			id, _ := made.data()["id"].(string)
			secret, _ := made.data()["key"].(string)
			// A key created on node 1 works on the others at once, too.
			must(t, call(t, two, "GET", "/auth/status", secret, nil), http.StatusOK)
			must(t, call(t, three, "GET", "/auth/status", secret, nil), http.StatusOK)
			must(t, call(t, one, "DELETE", "/auth/keys/"+id, key, nil), http.StatusOK)
			for _, n := range []*testserver.Server{two, three} {
				if r := call(t, n, "GET", "/memories?agent_id=a1", secret, nil); r.status != http.StatusUnauthorized {
					t.Fatalf("revoked key on another node: %d %v, want 401", r.status, r.body)
				}
			}
		}
	})

	t.Run("a node killed mid-load, restarted, catches up", func(t *testing.T) {
		load, stopLoad := writeLoad(t, []*testserver.Server{one, two, three}, key, three)
		waitUntil(t, "load written", func() bool { return load.written.Load() >= 12 })
		three.Kill()
		before := load.written.Load()
		waitUntil(t, "load continues on the survivors", func() bool { return load.written.Load() >= before+12 })
		stopLoad()
		three = c.start(three.DataDir)
		c.nodes[2] = three
		last := must(t, call(t, one, "POST", "/memories", key, map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": "after the restart"}}), http.StatusCreated)
		list := must(t, call(t, three, "GET", "/memories?agent_id=load-0&limit=100", key, nil, api.ConsistencyTokenHeader, last.header.Get(api.ConsistencyTokenHeader)), http.StatusOK)
		if ms, _ := list.data()["memories"].([]any); len(ms) == 0 {
			t.Fatal("the restarted node does not show the load written while it was down")
		}
	})

	t.Run("every node's read models equal a fresh rebuild", func(t *testing.T) {
		for _, n := range c.nodes {
			if err := n.Stop(); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		want := exportReadModels(t, ctx, t.TempDir(), c.dbURL, app.ReadModels{})
		for i, n := range c.nodes {
			got := exportReadModels(t, ctx, n.DataDir, c.dbURL, app.ReadModels{})
			for name, rebuilt := range want {
				if !bytes.Equal(got[name], rebuilt) {
					t.Errorf("node %d: read model %s differs from a fresh rebuild (%d bytes vs %d)", i+1, name, len(got[name]), len(rebuilt))
				}
			}
		}
	})
}

// exportReadModels opens dataDir over the shared log with the read models
// rm, brings every projection up to the log's head and exports every read
// model, by name.
func exportReadModels(t *testing.T, ctx context.Context, dataDir, dbURL string, rm app.ReadModels) map[string][]byte {
	t.Helper()
	stApp, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dataDir, EventStore: app.EventStore{Backend: app.PostgresLog, URL: dbURL}, ReadModels: rm}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := stApp.Core
	defer st.Close()
	if err := st.Engine.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for name, model := range map[string]interface {
		Export(context.Context, io.Writer) error
	}{
		"accounts": st.Accounts, "memories": st.Memories, "jobs": st.Jobs,
		"provenance": st.Provenance, "audit": st.Audit, "suggestions": st.Suggestions,
	} {
		var buf bytes.Buffer
		if err := model.Export(ctx, &buf); err != nil {
			t.Fatal(err)
		}
		out[name] = buf.Bytes()
	}
	return out
}

// resultsHold reports whether a search response lists memory id.
func resultsHold(r reply, id string) bool {
	results, _ := r.data()["results"].([]any)
	for _, res := range results {
		m, _ := res.(map[string]any)
		if m["id"] == id {
			return true
		}
		if mem, ok := m["memory"].(map[string]any); ok && mem["id"] == id {
			return true
		}
	}
	return false
}

// waitUntil polls cond for up to 30 s.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
