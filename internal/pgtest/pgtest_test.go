package pgtest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/internal/pgtest"
)

// TestOpenStartsAClusterAndCloseRemovesIt starts a real cluster (where
// initdb exists), talks to it, and stops it.
func TestOpenStartsAClusterAndCloseRemovesIt(t *testing.T) {
	t.Setenv(pgtest.URLEnv, "")
	pg, err := pgtest.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	url := pg.URL(t)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	conn.Close(t.Context())
	if err := pg.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := pgx.Connect(context.Background(), url); err == nil {
		c.Close(context.Background())
		t.Fatal("the cluster still answers after Close")
	}
}

func TestOpenUsesTheGivenServer(t *testing.T) {
	const given = "postgres://someone@127.0.0.1:1/db"
	t.Setenv(pgtest.URLEnv, given)
	t.Setenv(pgtest.BinEnv, t.TempDir()) // would fail if Open looked for initdb
	pg, err := pgtest.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if got := pg.URL(t); got != given {
		t.Fatalf("URL = %q, want %q", got, given)
	}
}

func TestRequiredServerWithoutInitdbFails(t *testing.T) {
	t.Setenv(pgtest.URLEnv, "")
	t.Setenv(pgtest.BinEnv, t.TempDir())
	t.Setenv(pgtest.RequireEnv, "1")
	if pg, err := pgtest.Open(t.Context()); err == nil || !strings.Contains(err.Error(), "initdb") {
		pg.Close()
		t.Fatalf("Open = %v; want an error naming initdb", err)
	}

	// Not required: Open succeeds and the tests skip, saying why.
	t.Setenv(pgtest.RequireEnv, "")
	pg, err := pgtest.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var skipped bool
	t.Run("skips", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		pg.URL(t)
	})
	if !skipped {
		t.Fatal("a test without a server did not skip")
	}
}
