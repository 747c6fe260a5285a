package api_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/engram-memory/engram/internal/pgtest"
)

// TestMain stops the PostgreSQL server that the tests on PostgreSQL read
// models started, if any ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if pgServer.server != nil {
		if err := pgServer.server.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// pgServer is the PostgreSQL of the tests on PostgreSQL read models,
// started (pgtest.Open) by the first of them, so that the other tests of
// the package do not wait for a cluster they do not use.
var pgServer struct {
	once   sync.Once
	server *pgtest.Server
	err    error
}

// postgresServer is pgServer, started on first use.
func postgresServer(t testing.TB) *pgtest.Server {
	t.Helper()
	pgServer.once.Do(func() { pgServer.server, pgServer.err = pgtest.Open(context.Background()) })
	if pgServer.err != nil {
		t.Fatal(pgServer.err)
	}
	return pgServer.server
}

// onEachReadModelBackend runs test on a stack with the read models in
// SQLite (the data directory) and, at the same time, on one with them in
// PostgreSQL (with the log: PostgreSQL read models need the shared log).
// The PostgreSQL run skips without a server unless
// ENGRAM_REQUIRE_POSTGRES=1, as every PostgreSQL test does.
func onEachReadModelBackend(t *testing.T, opts stackOptions, test func(t *testing.T, s *stack)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		test(t, newStack(t, opts))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		opts := opts
		opts.postgres = true
		test(t, newStack(t, opts))
	})
}
