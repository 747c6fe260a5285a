package pgtest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

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

// TestClusterStopsWhenItsTestProcessIsKilled: a test process killed with
// SIGKILL runs no cleanup, yet leaves no cluster behind: the cluster's
// watchdog stops it and removes its directory within seconds.
func TestClusterStopsWhenItsTestProcessIsKilled(t *testing.T) {
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), holdClusterEnv+"=1", pgtest.URLEnv+"=")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child printed no URL: %v", err)
	}
	verb, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch verb {
	case "skip":
		t.Skip("SKIP: " + arg)
	case "url":
	default:
		t.Fatalf("child: %s", line)
	}
	conn, err := pgx.Connect(t.Context(), arg)
	if err != nil {
		t.Fatal(err)
	}
	var dataDir string
	if err := conn.QueryRow(t.Context(), "SHOW data_directory").Scan(&dataDir); err != nil {
		t.Fatal(err)
	}
	conn.Close(t.Context())

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, statErr := os.Stat(dataDir)
		c, connErr := pgx.Connect(t.Context(), arg)
		if connErr == nil {
			c.Close(t.Context())
		}
		if connErr != nil && errors.Is(statErr, fs.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after its test process was killed the cluster still answers (%v) or its directory %s is there (%v)", connErr == nil, dataDir, statErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// holdClusterEnv makes the test binary, run as the child of
// TestClusterStopsWhenItsTestProcessIsKilled, a test process that starts a
// cluster, prints its URL and waits to be killed.
const holdClusterEnv = "PGTEST_HOLD_CLUSTER"

func TestMain(m *testing.M) {
	if os.Getenv(holdClusterEnv) == "1" {
		holdCluster()
	}
	os.Exit(m.Run())
}

// holdCluster opens a server, prints "url URL" (or "skip REASON" where
// there is no PostgreSQL), and sleeps until it is killed.
func holdCluster() {
	pg, err := pgtest.Open(context.Background())
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	var tb outsideTest
	url := pg.URL(&tb)
	if tb.skipped != "" {
		fmt.Println("skip", tb.skipped)
		os.Exit(0)
	}
	fmt.Println("url", url)
	time.Sleep(5 * time.Minute) // killed long before
	os.Exit(1)
}

// outsideTest is the testing.TB that Server.URL needs, outside a test:
// it records a skip.
type outsideTest struct {
	testing.TB
	skipped string
}

func (*outsideTest) Helper()            {}
func (o *outsideTest) Skip(args ...any) { o.skipped = fmt.Sprint(args...) }
