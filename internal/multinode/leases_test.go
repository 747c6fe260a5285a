package multinode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/infra/meilisearch"
	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
	"github.com/engram-memory/engram/infra/qdrant/qdranttest"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/testserver"
	"github.com/engram-memory/engram/projections"
)

// indexProjections are the projections of the shared remote indexes;
// leased are all the projections whose store the nodes share in
// TestThreeNodesShareReadModelsAndIndexes: those and the PostgreSQL read models.
var (
	indexProjections = []string{projections.KeywordProjectionName, projections.VectorsProjectionName}
	leased           = append([]string{projections.AccountsProjectionName, projections.MemoriesProjectionName, projections.JobsProjectionName,
		projections.ProvenanceProjectionName, projections.AuditProjectionName, projections.SuggestionsProjectionName, projections.WebhooksProjectionName}, indexProjections...)
)

// TestThreeNodesShareReadModelsAndIndexes runs three nodes over one PostgreSQL
// database holding the log and the read models (--read-models postgres)
// and one Meilisearch and one Qdrant (the protocol-level test servers):
// exactly one node applies each of the nine projections, a write on one
// node is searchable with its token on another, keyword and audit are
// rebuilt live at the request of nodes without their leases while every
// node takes writes, the node holding the leases is SIGKILLed under load
// in the middle of a live rebuild of keyword and another takes them over
// within seconds and redoes it, and at the end the shared read models and
// both shared indexes equal a fresh rebuild from the log.
func TestThreeNodesShareReadModelsAndIndexes(t *testing.T) {
	meili := meilitest.New(t, meilitest.Options{})
	qd := qdranttest.Start(t, "")
	indexFlags := func(meiliURL, qdrantAddr string) []string {
		return []string{"--read-models", "postgres", "--keyword-index", "meilisearch", "--meilisearch-url", meiliURL, "--vector-index", "qdrant", "--qdrant-url", "http://" + qdrantAddr}
	}
	// The first node starts alone, so it takes both leases.
	c := startCluster(t, 3, indexFlags(meili.URL, qd.Addr)...)
	one, two, three := c.nodes[0], c.nodes[1], c.nodes[2]
	key := testserver.Register(t, one.BaseURL, one.DataDir, "lea@example.com")
	env := append(c.env(), "HOME="+t.TempDir()) // the command line's

	t.Run("each leased projection is applied by exactly one node, which every node names", func(t *testing.T) {
		holders := leaseHolders(t, c.nodes)
		for _, name := range leased {
			if holders[name] != one {
				t.Fatalf("%s is held by %v, want the first node", name, holders[name])
			}
			for i, n := range c.nodes[1:] {
				if st := projectionStatus(t, n)[name]; st.Batches != 0 {
					t.Fatalf("node %d applied %d batches of %s without the lease", i+2, st.Batches, name)
				}
			}
		}
	})

	flags := append([]string{"--event-store", "postgres"}, indexFlags(meili.URL, qd.Addr)...) // the command line's
	t.Run("the command line names the holders and refuses to rebuild offline under them", func(t *testing.T) {
		out, err := runEngram(env, append([]string{"projections", "status", "--data-dir", one.DataDir}, flags...)...)
		var status struct{ Leases map[string]string }
		if err != nil || json.Unmarshal([]byte(out), &status) != nil {
			t.Fatalf("projections status: %v\n%s", err, out)
		}
		holder := projectionStatus(t, one)[projections.KeywordProjectionName].Lease.Holder
		for _, name := range leased {
			if status.Leases[name] != holder {
				t.Fatalf("projections status leases = %v, want %s held by %s", status.Leases, name, holder)
			}
		}
		out, err = runEngram(env, append([]string{"projections", "rebuild", "keyword", "--data-dir", t.TempDir()}, flags...)...)
		if err == nil || !strings.Contains(out, "is applied by node \""+holder+"\"") {
			t.Fatalf("projections rebuild keyword while a node serves it: %v\n%s\nwant refused naming %s", err, out, holder)
		}
	})

	t.Run("a write on one node is searchable with its token on the others", func(t *testing.T) {
		for i := range 6 {
			text := fmt.Sprintf("rollback plan %d: restore the snapshot taken before the release", i)
			writer, reader := c.nodes[1+i%2], c.nodes[(2+i)%3]
			created := must(t, call(t, writer, "POST", "/memories", key, map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": text}}), http.StatusCreated)
			id, _ := created.data()["id"].(string)
			token := created.header.Get(api.ConsistencyTokenHeader)
			for _, mode := range []string{"keyword", "vector"} {
				found := must(t, call(t, reader, "POST", "/search", key, map[string]any{"agent_id": "a1", "query": text, "mode": mode, "limit": 20}, api.ConsistencyTokenHeader, token), http.StatusOK)
				if !resultsHold(found, id) {
					t.Fatalf("%s search on another node with the token misses memory %s: %v", mode, id, found.data())
				}
			}
			// The node that took the write needs no token.
			if found := must(t, call(t, writer, "POST", "/search", key, map[string]any{"agent_id": "a1", "query": text, "mode": "keyword", "limit": 20}), http.StatusOK); !resultsHold(found, id) {
				t.Fatalf("keyword search on the writing node misses memory %s", id)
			}
		}
	})

	t.Run("a projection is rebuilt live, asked of a node without its lease, while every node serves", func(t *testing.T) {
		// Enough memories that a rebuild lasts long enough to watch.
		fill(t, two, key, "bulk", 600)
		load, stopLoad := writeLoad(t, c.nodes, key, nil)
		defer stopLoad()
		waitUntil(t, "load written", func() bool { return load.written.Load() >= 10 })
		var longest time.Duration
		for _, rebuild := range []struct {
			projection string
			via        *testserver.Server
		}{{projections.KeywordProjectionName, two}, {projections.AuditProjectionName, three}} {
			before := load.written.Load()
			start := time.Now()
			out, err := runEngram(env, "projections", "rebuild", rebuild.projection, "--data-dir", rebuild.via.DataDir)
			if err != nil || !strings.Contains(out, "rebuilt "+rebuild.projection) {
				t.Fatalf("projections rebuild %s asked of a node without its lease: %v\n%s", rebuild.projection, err, out)
			}
			took := time.Since(start)
			longest = max(longest, took)
			t.Logf("%s (%s wall, %d writes answered meanwhile)", strings.TrimSpace(out), took.Round(time.Millisecond), load.written.Load()-before)
		}
		stopLoad()
		// No write waited for a rebuild: the slowest answered in well
		// under the longest rebuild's time.
		slowest := time.Duration(load.slowest.Load())
		t.Logf("slowest write during the rebuilds: %s", slowest.Round(time.Millisecond))
		if slowest > longest/2 {
			t.Fatalf("the slowest write during the rebuilds took %s, the longest rebuild %s", slowest, longest)
		}
		waitUntil(t, "no node reports a rebuild", func() bool {
			for _, n := range c.nodes {
				if st := projectionStatus(t, n); st[projections.KeywordProjectionName].Rebuilding || st[projections.AuditProjectionName].Rebuilding {
					return false
				}
			}
			return true
		})
	})

	t.Run("the lease holder killed under load and mid-rebuild: another node takes over within seconds and redoes the rebuild", func(t *testing.T) {
		load, stopLoad := writeLoad(t, c.nodes, key, one)
		waitUntil(t, "load written", func() bool { return load.written.Load() >= 30 })
		// keyword, the slowest to rebuild (a remote index), is surely
		// under way when its holder dies.
		holder := projectionStatus(t, one)[projections.KeywordProjectionName].Lease.Holder
		rebuilt := make(chan error, 1)
		go func() {
			out, err := runEngram(env, "projections", "rebuild", projections.KeywordProjectionName, "--data-dir", two.DataDir)
			if err == nil && !strings.Contains(out, "rebuilt keyword") {
				err = fmt.Errorf("unexpected answer")
			}
			if err != nil {
				err = fmt.Errorf("%w\n%s", err, out)
			}
			rebuilt <- err
		}()
		waitUntil(t, "a node without the lease reports keyword rebuilding", func() bool {
			st, err := tryProjectionStatus(three)
			return err == nil && st[projections.KeywordProjectionName].Rebuilding
		})
		out, err := runEngram(env, append([]string{"projections", "status", "--data-dir", three.DataDir}, flags...)...)
		var status struct {
			Rebuilding map[string]struct{ State, Node string }
		}
		if err != nil || json.Unmarshal([]byte(out), &status) != nil {
			t.Fatalf("projections status: %v\n%s", err, out)
		}
		if r := status.Rebuilding[projections.KeywordProjectionName]; r.State != "running" || r.Node != holder {
			t.Fatalf("projections status during the rebuild: %s\nwant keyword running on %s", out, holder)
		}
		one.Kill()
		killed := time.Now()
		var took time.Duration
		waitUntil(t, "another node holds both leases", func() bool {
			holders := tryLeaseHolders(c.nodes[1:])
			for _, name := range leased {
				if holders[name] == nil {
					return false
				}
			}
			took = time.Since(killed)
			return true
		})
		t.Logf("takeover %s after SIGKILL of the lease holder", took.Round(time.Millisecond))
		if took > 10*time.Second {
			t.Fatalf("takeover took %s, want within seconds", took)
		}
		if err := <-rebuilt; err != nil {
			t.Fatalf("projections rebuild keyword, whose holder was killed: %v", err)
		}
		var ranOn string
		if err := pgxQueryRow(t, c.dbURL, `SELECT node FROM projection_rebuilds WHERE name = 'keyword' AND state = 'done'`, &ranOn); ranOn == holder || err != nil {
			t.Fatalf("the keyword rebuild was finished on %q (%v), want the new holder, not the killed %q", ranOn, err, holder)
		}
		before := load.written.Load()
		waitUntil(t, "load continues after the takeover", func() bool { return load.written.Load() >= before+30 })
		stopLoad()
		last := must(t, call(t, two, "POST", "/memories", key, map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": "written after the takeover"}}), http.StatusCreated)
		id, _ := last.data()["id"].(string)
		found := must(t, call(t, three, "POST", "/search", key, map[string]any{"agent_id": "a1", "query": "written after the takeover", "mode": "keyword", "limit": 5}, api.ConsistencyTokenHeader, last.header.Get(api.ConsistencyTokenHeader)), http.StatusOK)
		if !resultsHold(found, id) {
			t.Fatalf("search after the takeover misses memory %s", id)
		}
	})

	t.Run("the shared read models and indexes equal a fresh rebuild", func(t *testing.T) {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, c.dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		// Quiet: the log's head stands still and every leased projection
		// has applied it.
		var head int64
		waitUntil(t, "the leased projections reach the log's head", func() bool {
			if err := conn.QueryRow(ctx, `SELECT coalesce(max(position), 0) FROM events`).Scan(&head); err != nil {
				t.Fatal(err)
			}
			var behind int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) AS n WHERE NOT EXISTS (
				SELECT 1 FROM projection_checkpoints WHERE name = n AND position >= $2)`, leased, head).Scan(&behind); err != nil {
				t.Fatal(err)
			}
			return behind == 0
		})
		for _, n := range []*testserver.Server{two, three} {
			if err := n.Stop(); err != nil {
				t.Fatal(err)
			}
		}
		shared := exportReadModels(t, ctx, t.TempDir(), c.dbURL, app.ReadModels{Backend: app.PostgresReadModels})
		rebuiltModels := exportReadModels(t, ctx, t.TempDir(), c.dbURL, app.ReadModels{Backend: app.PostgresReadModels, URL: pg.Database(t)})
		for name, want := range rebuiltModels {
			if !bytes.Equal(shared[name], want) {
				t.Errorf("read model %s differs from a fresh rebuild (%d bytes vs %d)", name, len(shared[name]), len(want))
			}
		}
		if len(rebuiltModels["memories"]) == 0 {
			t.Error("the rebuilt memories read model is empty")
		}

		var memories int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE type = 'MemoryCreated'`).Scan(&memories); err != nil {
			t.Fatal(err)
		}
		liveDocs, livePoints := meili.Documents(meilisearch.DefaultIndexName), qd.Contents()
		if len(liveDocs) != memories || len(livePoints) != memories {
			t.Fatalf("shared indexes hold %d documents and %d points for %d memories", len(liveDocs), len(livePoints), memories)
		}

		freshMeili, freshQdrant := meilitest.New(t, meilitest.Options{}), qdranttest.Start(t, "")
		stApp, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: t.TempDir(), NodeID: "rebuild",
			EventStore: app.EventStore{Backend: app.PostgresLog, URL: c.dbURL},
			Indexes:    app.Indexes{Keyword: app.Meilisearch, MeilisearchURL: freshMeili.URL, Vector: app.Qdrant, QdrantURL: "http://" + freshQdrant.Addr},
		}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		st := stApp.Core
		defer st.Close()
		release, err := st.HoldLeases(ctx, 5*time.Second, indexProjections...)
		if err != nil {
			t.Fatalf("the leases after every node stopped: %v", err)
		}
		defer release()
		if err := st.Engine.Rebuild(ctx, indexProjections...); err != nil {
			t.Fatal(err)
		}
		if rebuilt := freshMeili.Documents(meilisearch.DefaultIndexName); !reflect.DeepEqual(liveDocs, rebuilt) {
			t.Errorf("Meilisearch differs from a fresh rebuild: %d documents live, %d rebuilt; %d differ", len(liveDocs), len(rebuilt), differing(liveDocs, rebuilt))
		}
		if rebuilt := freshQdrant.Contents(); !maps.Equal(livePoints, rebuilt) {
			t.Errorf("Qdrant differs from a fresh rebuild: %d points live, %d rebuilt; %d differ", len(livePoints), len(rebuilt), differing(livePoints, rebuilt))
		}
	})
}

// differing counts the keys whose values differ, or that one side lacks.
func differing[V any](a, b map[string]V) int {
	n := 0
	for k, v := range a {
		if w, ok := b[k]; !ok || !reflect.DeepEqual(v, w) {
			n++
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			n++
		}
	}
	return n
}

// projectionStatus is one node's projections as /readyz reports them.
func projectionStatus(t testing.TB, n *testserver.Server) map[string]projections.ProjectionStatus {
	t.Helper()
	st, err := tryProjectionStatus(n)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func tryProjectionStatus(n *testserver.Server) (map[string]projections.ProjectionStatus, error) {
	var body struct {
		Data struct {
			Projections map[string]projections.ProjectionStatus `json:"projections"`
		} `json:"data"`
	}
	if err := getJSON(n.BaseURL+"/readyz", &body); err != nil {
		return nil, err
	}
	return body.Data.Projections, nil
}

// leaseHolders waits until every node names one holder for each leased
// projection, that holder says it holds it, and returns the holders.
func leaseHolders(t testing.TB, nodes []*testserver.Server) map[string]*testserver.Server {
	t.Helper()
	var holders map[string]*testserver.Server
	waitUntil(t, "every node names the lease holders", func() bool {
		holders = tryLeaseHolders(nodes)
		return len(holders) == len(leased)
	})
	return holders
}

// tryLeaseHolders returns, for each leased projection on whose holder
// every given node agrees, that node.
func tryLeaseHolders(nodes []*testserver.Server) map[string]*testserver.Server {
	named := map[string]map[string]bool{}
	held := map[string]*testserver.Server{}
	for _, n := range nodes {
		st, err := tryProjectionStatus(n)
		if err != nil {
			return nil
		}
		for _, name := range leased {
			lease := st[name].Lease
			if lease == nil {
				return nil
			}
			if named[name] == nil {
				named[name] = map[string]bool{}
			}
			named[name][lease.Holder] = true
			if lease.HeldHere {
				if !strings.HasSuffix(lease.Holder, "/"+strings.TrimPrefix(n.BaseURL, "http://")) {
					return nil
				}
				held[name] = n
			}
		}
	}
	out := map[string]*testserver.Server{}
	for _, name := range leased {
		if len(named[name]) == 1 && held[name] != nil {
			out[name] = held[name]
		}
	}
	return out
}

// runEngram runs the engram binary with env on top of the process's own,
// returning its combined output.
func runEngram(env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// getJSON decodes the body of a GET of url into v, whatever its status.
func getJSON(url string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	return json.NewDecoder(res.Body).Decode(v)
}

// fill creates n notes in agent through node's batch endpoint.
func fill(t *testing.T, node *testserver.Server, key, agent string, n int) {
	t.Helper()
	const batch = 500
	for done := 0; done < n; done += batch {
		var memories []map[string]any
		for i := done; i < min(n, done+batch); i++ {
			memories = append(memories, map[string]any{"type": "note", "content": map[string]any{"content": fmt.Sprintf("bulk note %d about release %d", i, i%17)}})
		}
		must(t, call(t, node, "POST", "/memories/batch", key, map[string]any{"agent_id": agent, "memories": memories}), http.StatusCreated)
	}
}

// pgxQueryRow scans the one row of query into dest, on a connection of
// its own to url.
func pgxQueryRow(t *testing.T, url, query string, dest ...any) error {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, query).Scan(dest...)
}
