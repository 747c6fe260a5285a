package app_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
	"github.com/engram-memory/engram/infra/qdrant/qdranttest"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/pgtest"
	"github.com/engram-memory/engram/projections"
)

// pg is the PostgreSQL of this package's tests (see internal/pgtest).
var pg *pgtest.Server

func TestMain(m *testing.M) {
	// A child process of TestOfflineRebuildKilledPartWay: it rebuilds and
	// is killed, and needs no PostgreSQL.
	if dir := os.Getenv(rebuildChildEnv); dir != "" {
		os.Exit(rebuildChild(dir))
	}
	os.Exit(pgtest.Main(m, &pg))
}

func TestEventStoreValidate(t *testing.T) {
	cases := []struct {
		name    string
		store   app.EventStore
		wantErr string // "" for valid
	}{
		{"default is the embedded log", app.EventStore{}, ""},
		{"sqlite named", app.EventStore{Backend: "sqlite"}, ""},
		{"postgres with url", app.EventStore{Backend: "postgres", URL: "postgres://db/engram"}, ""},
		{"postgres without url", app.EventStore{Backend: "postgres"}, "--event-store postgres needs --event-store-url"},
		{"url for the embedded log", app.EventStore{URL: "postgres://db/engram"}, "--event-store-url is only for a remote event store"},
		{"kurrentdb with url", app.EventStore{Backend: "kurrentdb", URL: "kurrentdb://db:2113"}, ""},
		{"kurrentdb without url", app.EventStore{Backend: "kurrentdb"}, "--event-store kurrentdb needs --event-store-url"},
		{"unknown backend", app.EventStore{Backend: "mysql"}, `--event-store must be sqlite, postgres or kurrentdb, not "mysql"`},
		{"kurrentdb with a larger append size", app.EventStore{Backend: "kurrentdb", URL: "kurrentdb://db:2113", KurrentMaxAppendSize: 16 << 20}, ""},
		{"negative append size", app.EventStore{Backend: "kurrentdb", URL: "kurrentdb://db:2113", KurrentMaxAppendSize: -1}, "--kurrentdb-max-append-size must be 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.store.Validate()
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("Validate() = %v, want %q", err, c.wantErr)
			}
		})
	}
}

// TestPostgresStackSharesItsLog opens two stacks (two nodes) over one
// PostgreSQL log with a data dir each: an event appended through one is
// applied by the other's projections.
func TestPostgresStackSharesItsLog(t *testing.T) {
	ctx := t.Context()
	es := app.EventStore{Backend: app.PostgresLog, URL: pg.Database(t)}
	one, two := runningNode(t, app.Config{EventStore: es}), runningNode(t, app.Config{EventStore: es})
	res, err := one.Store.Append(ctx, "s-1", domain.ExpectNoStream, []domain.NewEvent{{Type: "Unrelated", SchemaVersion: 1, Payload: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	// The credential barrier: once it returns, the second node's accounts
	// read model includes the first node's append, with no other wait.
	if err := two.CredentialsCurrent(ctx); err != nil {
		t.Fatal(err)
	}
	if pos, err := two.Accounts.Checkpoint(ctx); err != nil || pos < res.LastPosition {
		t.Fatalf("after CredentialsCurrent the accounts read model is at %d (%v), want %d", pos, err, res.LastPosition)
	}
	if err := two.Engine.WaitFor(ctx, res.LastPosition); err != nil {
		t.Fatalf("the second node never applied the first node's append: %v", err)
	}
	if head, err := two.Store.Head(ctx); err != nil || head != res.LastPosition {
		t.Fatalf("second node's head = %d, %v; want %d", head, err, res.LastPosition)
	}
}

// TestPostgresStackRefusesAnEmbeddedLogsDataDir: read models fed from a
// data dir's own log must not be continued from another log.
func TestPostgresStackRefusesAnEmbeddedLogsDataDir(t *testing.T) {
	ctx := t.Context()
	dir := sqlitetest.Dir(t)
	stApp, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := stApp.Core
	if _, err := st.Store.Append(ctx, "s-1", domain.ExpectNoStream, []domain.NewEvent{{Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = app.New(ctx, app.Settings{Config: app.Config{DataDir: dir, EventStore: app.EventStore{Backend: app.PostgresLog, URL: pg.Database(t)}}}, 0)
	if err == nil || !strings.Contains(err.Error(), "holds an embedded event log") {
		t.Fatalf("Open = %v, want the embedded log refused", err)
	}
}

// TestKurrentLogRefusesRemoteIndexes: shared remote indexes keep their
// leases and state in PostgreSQL, which a KurrentDB log does not have, so
// the combination is refused before anything is opened.
func TestKurrentLogRefusesRemoteIndexes(t *testing.T) {
	es := app.EventStore{Backend: app.KurrentLog, URL: "kurrentdb://127.0.0.1:1"}
	for _, ix := range []app.Indexes{
		{Keyword: app.Meilisearch, MeilisearchURL: "http://127.0.0.1:1"},
		{Vector: app.Qdrant, QdrantURL: "http://127.0.0.1:1"},
	} {
		_, err := app.New(t.Context(), app.Settings{Config: app.Config{DataDir: t.TempDir(), EventStore: es, Indexes: ix}}, 0)
		if err == nil || !strings.Contains(err.Error(), "needs --read-models postgres") {
			t.Fatalf("Open(%+v) = %v, want the shared remote index over KurrentDB refused", ix, err)
		}
	}
}

// TestPostgresStackLeasesSharedRemoteIndexes: two nodes over one
// PostgreSQL log with a shared Meilisearch and Qdrant run the keyword and
// vector projections under leases: each is held by exactly one node,
// which both nodes name; the node without it applies nothing and follows.
func TestPostgresStackLeasesSharedRemoteIndexes(t *testing.T) {
	ctx := t.Context()
	meili := meilitest.New(t, meilitest.Options{APIKey: meiliKey})
	qd := qdranttest.Start(t, qdrantKey)
	es := app.EventStore{Backend: app.PostgresLog, URL: pg.Database(t)}
	ix := app.Indexes{Keyword: app.Meilisearch, MeilisearchURL: meili.URL, MeilisearchAPIKey: meiliKey,
		Vector: app.Qdrant, QdrantURL: "http://" + qd.Addr, QdrantAPIKey: qdrantKey}
	nodes := map[string]*app.Core{}
	for _, id := range []string{"node-1", "node-2"} {
		nodes[id] = runningNode(t, app.Config{EventStore: es, Indexes: ix, NodeID: id})
	}
	leased := []string{projections.KeywordProjectionName, projections.VectorsProjectionName}
	waitFor(t, func() bool {
		holders, err := nodes["node-1"].LeaseHolders(ctx)
		if err != nil || len(holders) != 2 {
			return false
		}
		for _, name := range leased {
			holder := holders[name]
			if nodes[holder] == nil {
				return false
			}
			for id, n := range nodes {
				lease := n.Engine.Status()[name].Lease
				if lease == nil || lease.Holder != holder || lease.HeldHere != (id == holder) {
					return false
				}
			}
		}
		return true
	})
	res, err := nodes["node-1"].Store.Append(ctx, "s-1", domain.ExpectNoStream, []domain.NewEvent{{Type: "Unrelated", SchemaVersion: 1, Payload: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range nodes {
		if err := n.Engine.WaitForProjections(ctx, res.LastPosition, leased...); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for _, name := range leased {
			if st := n.Engine.Status()[name]; !st.Lease.HeldHere && st.Batches != 0 {
				t.Fatalf("%s applied %d batches of %s without its lease", id, st.Batches, name)
			}
		}
	}
}

// TestRebuildOfALeasedProjectionWaitsForItsLease: a command that writes a
// shared projection outside the engine (an offline engram projections
// rebuild) must hold its lease; while a serving node holds it, it is
// refused, naming that node, and the other projections are not held; a
// live rebuild is run by the holder.
func TestRebuildOfALeasedProjectionWaitsForItsLease(t *testing.T) {
	meili := meilitest.New(t, meilitest.Options{APIKey: meiliKey})
	es := app.EventStore{Backend: app.PostgresLog, URL: pg.Database(t)}
	ix := app.Indexes{Keyword: app.Meilisearch, MeilisearchURL: meili.URL, MeilisearchAPIKey: meiliKey}
	serving := runningNode(t, app.Config{EventStore: es, Indexes: ix, NodeID: "serving-node"})
	waitFor(t, func() bool {
		holders, err := serving.LeaseHolders(t.Context())
		return err == nil && holders[projections.KeywordProjectionName] == "serving-node"
	})
	rebuilderApp, err := app.New(t.Context(), app.Settings{Config: app.Config{DataDir: t.TempDir(), EventStore: es, Indexes: ix, NodeID: "rebuilder"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rebuilder := rebuilderApp.Core
	defer rebuilder.Close()
	release, err := rebuilder.HoldLeases(t.Context(), 300*time.Millisecond, projections.KeywordProjectionName)
	if err == nil || !strings.Contains(err.Error(), `"serving-node"`) {
		t.Fatalf("HoldLeases while a node serves = %v, want refused naming serving-node", err)
	}
	// It is rebuilt live instead: asked of another node, recorded in the
	// shared store, run by the holder while it serves.
	if _, err := rebuilder.LiveRebuild(t.Context(), projections.KeywordProjectionName); err != nil {
		t.Fatalf("LiveRebuild of a leased projection asked of another node: %v", err)
	}
	if st := serving.Engine.Status()[projections.KeywordProjectionName]; st.Rebuilding {
		t.Fatalf("the holder still reports keyword rebuilding after the rebuild returned: %+v", st)
	}
	// The read models the commands decide on stay refused.
	if _, err := serving.LiveRebuild(t.Context(), projections.AccountsProjectionName); !errors.Is(err, app.ErrNotLiveRebuildable) {
		t.Fatalf("LiveRebuild of accounts = %v, want ErrNotLiveRebuildable", err)
	}
	// Projections without a lease need none.
	if release, err = rebuilder.HoldLeases(t.Context(), 300*time.Millisecond, projections.AccountsProjectionName); err != nil {
		t.Fatalf("HoldLeases of an unleased projection: %v", err)
	}
	release()
}

// runningNode opens a stack (a node) with a data dir of its own over the
// log cfg names and runs its projection engine until the test ends.
func runningNode(t *testing.T, cfg app.Config) *app.Core {
	t.Helper()
	cfg.DataDir = t.TempDir()
	stApp, err := app.New(t.Context(), app.Settings{Config: cfg}, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := stApp.Core
	t.Cleanup(func() { st.Close() })
	runCtx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); st.Engine.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	return st
}
