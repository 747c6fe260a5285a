package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/internal/app"
)

func TestReadModelsValidate(t *testing.T) {
	pgLog := app.EventStore{Backend: app.PostgresLog, URL: "postgres://db/log"}
	kurrent := app.EventStore{Backend: app.KurrentLog, URL: "kurrentdb://db:2113"}
	cases := []struct {
		name    string
		rm      app.ReadModels
		log     app.EventStore
		wantErr string // "" for valid
	}{
		{"default is SQLite in the data dir", app.ReadModels{}, app.EventStore{}, ""},
		{"sqlite named over a shared log", app.ReadModels{Backend: "sqlite"}, pgLog, ""},
		{"postgres in the event store's database", app.ReadModels{Backend: "postgres"}, pgLog, ""},
		{"postgres in a database of their own", app.ReadModels{Backend: "postgres", URL: "postgres://db/rm"}, pgLog, ""},
		{"postgres over KurrentDB with a url", app.ReadModels{Backend: "postgres", URL: "postgres://db/rm"}, kurrent, ""},
		{"postgres over KurrentDB without a url", app.ReadModels{Backend: "postgres"}, kurrent, "--read-models postgres needs --postgres-url"},
		{"postgres over a node's own log", app.ReadModels{Backend: "postgres", URL: "postgres://db/rm"}, app.EventStore{}, "needs a shared event store"},
		{"url for SQLite read models", app.ReadModels{URL: "postgres://db/rm"}, pgLog, "--postgres-url is only for --read-models postgres"},
		{"unknown backend", app.ReadModels{Backend: "mysql"}, pgLog, `--read-models must be sqlite or postgres, not "mysql"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.rm.Validate(c.log)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("Validate() = %v, want %q", err, c.wantErr)
			}
		})
	}
	if _, err := app.New(t.Context(), app.Settings{Config: app.Config{DataDir: t.TempDir(), ReadModels: app.ReadModels{Backend: "postgres"}}}, 0); err == nil {
		t.Fatal("Open accepted PostgreSQL read models over the embedded log")
	}
}

// TestPostgresReadModelsAreSharedByTwoNodes opens two stacks (two nodes),
// each with a data dir of its own, over one PostgreSQL log and one
// PostgreSQL database of read models apart from it (--postgres-url): what
// one node's projections apply, the other node reads, and each batch is
// applied once.
func TestPostgresReadModelsAreSharedByTwoNodes(t *testing.T) {
	ctx := t.Context()
	es := app.EventStore{Backend: app.PostgresLog, URL: pg.Database(t)}
	rm := app.ReadModels{Backend: app.PostgresReadModels, URL: pg.Database(t)}
	oneApp, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: t.TempDir(), EventStore: es, ReadModels: rm}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	one := oneApp.Core
	defer one.Close()
	twoApp, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: t.TempDir(), EventStore: es, ReadModels: rm}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	two := twoApp.Core
	defer two.Close()
	registered, err := domain.MarshalEvent(account.UserRegistered{UserID: "u-1", Email: "u1@example.com", RegisteredAt: time.Now()},
		domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := one.Store.Append(ctx, "user-u-1", domain.ExpectNoStream, []domain.NewEvent{registered})
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Engine.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if pos, err := two.Accounts.Checkpoint(ctx); err != nil || pos != res.LastPosition {
		t.Fatalf("the other node's accounts checkpoint = %d, %v; want %d (one shared read model)", pos, err, res.LastPosition)
	}
	if _, found, err := two.Accounts.UserByID(ctx, "u-1"); err != nil || !found {
		t.Fatalf("the other node does not read the user: %v %v", found, err)
	}
	// The second node's engine finds the batch applied and skips it.
	if err := two.Engine.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, found, err := one.Accounts.UserByID(ctx, "u-1"); err != nil || !found {
		t.Fatalf("after both nodes caught up: %v %v", found, err)
	}
}
