package app_test

import (
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
	"github.com/engram-memory/engram/infra/postgres"
	"github.com/engram-memory/engram/internal/app"
)

// TestKurrentStackSharesItsLog opens two stacks (two nodes) over one
// KurrentDB (the protocol-level test server, over TLS with credentials) with
// a data dir each: an event appended through one is applied by the other's
// projections, and lands in KurrentDB under Engram's stream prefix.
func TestKurrentStackSharesItsLog(t *testing.T) {
	ctx := t.Context()
	tlsConf, err := kurrentdbtest.SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{Username: "engram", Password: "secret", TLS: tlsConf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	es := app.EventStore{Backend: app.KurrentLog, URL: srv.URL(), KurrentUsername: "engram", KurrentPassword: "secret"}
	one, two := runningNode(t, app.Config{EventStore: es}), runningNode(t, app.Config{EventStore: es})
	res, err := one.Store.Append(ctx, "s-1", domain.ExpectNoStream, []domain.NewEvent{{Type: "Unrelated", SchemaVersion: 1, Payload: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := two.Engine.WaitFor(ctx, res.LastPosition); err != nil {
		t.Fatalf("the second node never applied the first node's append: %v", err)
	}
	if head, err := two.Store.Head(ctx); err != nil || head != res.LastPosition {
		t.Fatalf("second node's head = %d, %v; want %d", head, err, res.LastPosition)
	}
	if !strings.Contains(strings.Join(srv.Streams(), " "), "engram.s-1") {
		t.Fatalf("KurrentDB streams = %v, want engram.s-1", srv.Streams())
	}

	bad := es
	bad.KurrentPassword = "wrong"
	if _, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: t.TempDir(), EventStore: bad}}, 0); err == nil || !strings.Contains(err.Error(), "--event-store kurrentdb") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("Open with a wrong password = %v, want a clear error that does not echo the password", err)
	}
}

// TestKurrentStackWithPostgresReadModelsSharesRateBuckets: with a KurrentDB
// log and PostgreSQL read models, the nodes' rate-limit buckets live in the
// read models' database, so one burst is shared by both nodes instead of
// each node allowing its own.
func TestKurrentStackWithPostgresReadModelsSharesRateBuckets(t *testing.T) {
	ctx := t.Context()
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := app.Config{
		EventStore: app.EventStore{Backend: app.KurrentLog, URL: srv.URL()},
		ReadModels: app.ReadModels{Backend: app.PostgresReadModels, URL: pg.Database(t)},
	}
	nodes := []*app.Core{runningNode(t, cfg), runningNode(t, cfg)}
	const burst = 3
	allowed := 0
	for i := range 2 * burst {
		st := nodes[i%2]
		if st.Postgres == nil {
			t.Fatal("a node with PostgreSQL read models has no shared PostgreSQL for its rate buckets")
		}
		ok, _, err := postgres.NewRateBuckets(st.Postgres).Take(ctx, "user:u-1", 0.001, burst, true)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			allowed++
		}
	}
	if allowed != burst {
		t.Fatalf("%d of %d takes allowed over two nodes, want one burst of %d", allowed, 2*burst, burst)
	}
}

// TestKurrentStackMaxAppendSize: the stack hands KurrentMaxAppendSize
// (--kurrentdb-max-append-size) to the adapter, which refuses a larger
// append before sending it, even to a server that would take it.
func TestKurrentStackMaxAppendSize(t *testing.T) {
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{MaxAppendSize: -1}) // no limit of its own
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	payload := []byte(`{"text":"` + strings.Repeat("x", 4<<10) + `"}`)
	cases := []struct {
		name      string
		limit     int
		wantError bool
	}{
		{"default 1 MiB takes 4 KiB", 0, false},
		{"2 KiB refuses 4 KiB", 2 << 10, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := runningNode(t, app.Config{EventStore: app.EventStore{Backend: app.KurrentLog, URL: srv.URL(), KurrentMaxAppendSize: c.limit}})
			_, err := st.Store.Append(t.Context(), "s-"+strings.ReplaceAll(c.name, " ", "-"), domain.ExpectAny, []domain.NewEvent{{Type: "Unrelated", SchemaVersion: 1, Payload: payload}})
			e, _ := domain.AsError(err)
			if got := e != nil && e.PublicCode() == "event_batch_too_large"; got != c.wantError || (!c.wantError && err != nil) {
				t.Fatalf("Append of 4 KiB with limit %d = %v; want refused: %v", c.limit, err, c.wantError)
			}
		})
	}
}
