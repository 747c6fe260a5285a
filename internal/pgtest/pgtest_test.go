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

// TestDatabaseIsFreshAndDropped: each test gets an empty database of its
// own, gone once the test ends.
func TestDatabaseIsFreshAndDropped(t *testing.T) {
	pg, err := pgtest.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	var name string
	t.Run("inner", func(t *testing.T) {
		url := pg.Database(t)
		conn, err := pgx.Connect(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		var tables int
		if err := conn.QueryRow(t.Context(), `SELECT current_database(), count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&name, &tables); err != nil || tables != 0 {
			t.Fatalf("database %s has %d tables, %v", name, tables, err)
		}
		if other := pg.Database(t); other == url {
			t.Fatalf("two databases share the URL %s", url)
		}
	})
	conn, err := pgx.Connect(t.Context(), pg.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var left int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&left); err != nil || left != 0 {
		t.Fatalf("database %s still exists after its test (%d, %v)", name, left, err)
	}
}
