package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/app"
)

// rebuildChildEnv names the data dir a child process of
// TestOfflineRebuildKilledPartWay rebuilds (see TestMain).
const rebuildChildEnv = "ENGRAM_TEST_REBUILD_CHILD_DIR"

// rebuildChild rebuilds every projection of dir offline, as `engram
// projections rebuild` does; the test kills it part-way.
func rebuildChild(dir string) int {
	ctx := context.Background()
	stApp, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir}}, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st := stApp.Core
	defer st.Close()
	if err := st.RebuildOffline(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// exportState is every SQLite read model and the index state with the
// projections' checkpoints: what a rebuild replaces.
func exportState(t *testing.T, st *app.Core) string {
	t.Helper()
	ctx := context.Background()
	var buf bytes.Buffer
	exporters := []interface {
		Export(context.Context, io.Writer) error
	}{st.Accounts, st.Memories, st.Jobs, st.Suggestions, st.Provenance, st.Audit, sqlite.NewKeywordStore(st.DB), sqlite.NewVectorStore(st.DB)}
	for _, e := range exporters {
		if err := e.Export(ctx, &buf); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range st.Projections() {
		pos, err := st.DB.Checkpoint(ctx, p.Name())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&buf, "checkpoint %s %d\n", p.Name(), pos)
	}
	return buf.String()
}

// indexSchema is every index of the database with its definition.
func indexSchema(t *testing.T, st *app.Core) string {
	t.Helper()
	rows, err := st.DB.Reader().Query(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %s\n", name, def)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func openStack(t *testing.T, dir string) *app.Core {
	t.Helper()
	stApp, err := app.New(context.Background(), app.Settings{Config: app.Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return stApp.Core
}

// TestOfflineRebuildKilledPartWay kills an offline rebuild (a real child
// process, SIGKILL) at moments spread over its run. The rebuild drops the
// query-only indexes for its replay: each time, the next open has every
// index back with its definition, catching up from the checkpoints
// reaches exactly the state of a whole rebuild, and a rerun completes.
func TestOfflineRebuildKilledPartWay(t *testing.T) {
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	st := openStack(t, dir)
	fillAgent(t, st.Store, 1000)
	schema := indexSchema(t, st)
	if err := st.RebuildOffline(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt := exportState(t, st)
	if indexSchema(t, st) != schema {
		t.Fatal("a whole rebuild changed the indexes")
	}
	st.Close()

	// How long an uninterrupted rebuild takes here, to spread the kills.
	start := time.Now()
	if out, err := rebuildProcess(dir).CombinedOutput(); err != nil {
		t.Fatalf("rebuild: %v: %s", err, out)
	}
	whole := time.Since(start)
	for i := range 8 {
		after := whole * time.Duration(i+1) / 8
		cmd := rebuildProcess(dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		st := openStack(t, dir)
		if got := indexSchema(t, st); got != schema {
			t.Fatalf("killed after %s: the next open has the indexes\n%s\nwant\n%s", after, got, schema)
		}
		if err := st.Engine.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if exportState(t, st) != rebuilt {
			t.Fatalf("killed after %s: catching up did not reach the rebuilt state", after)
		}
		st.Close()
	}
	st = openStack(t, dir)
	defer st.Close()
	if err := st.RebuildOffline(ctx); err != nil {
		t.Fatal(err)
	}
	if exportState(t, st) != rebuilt || indexSchema(t, st) != schema {
		t.Fatal("the rerun after the kills did not reach the rebuilt state")
	}
}

func rebuildProcess(dir string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), rebuildChildEnv+"="+dir)
	return cmd
}

// TestOfflineRebuildThatFailsRestoresItsIndexes: a rebuild that fails
// after dropping the query-only indexes leaves them to the next open.
func TestOfflineRebuildThatFailsRestoresItsIndexes(t *testing.T) {
	dir := sqlitetest.Dir(t)
	st := openStack(t, dir)
	fillAgent(t, st.Store, 200)
	schema := indexSchema(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	if err := st.DB.DeferIndexes(ctx, st.Engine.Names()); err != nil {
		t.Fatal(err)
	}
	if indexSchema(t, st) == schema {
		t.Fatal("DeferIndexes dropped no index")
	}
	cancel()
	if err := st.RebuildOffline(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("rebuild with a cancelled context: %v, want context.Canceled", err)
	}
	st.Close()
	st = openStack(t, dir)
	defer st.Close()
	if got := indexSchema(t, st); got != schema {
		t.Fatalf("after a failed rebuild the next open has the indexes\n%s\nwant\n%s", got, schema)
	}
}

// TestOfflineRebuildEqualsTheReplayInPlace: deferring the query-only
// indexes changes neither the rebuilt rows nor the schema.
func TestOfflineRebuildEqualsTheReplayInPlace(t *testing.T) {
	ctx := context.Background()
	st := openStack(t, sqlitetest.Dir(t))
	defer st.Close()
	fillAgent(t, st.Store, 500)
	schema := indexSchema(t, st)
	if err := st.Engine.RebuildOffline(ctx); err != nil {
		t.Fatal(err)
	}
	inPlace := exportState(t, st)
	// A projection replayed alone decodes each event itself; replayed
	// with others, it takes the payloads and a created memory's derived
	// values (memory.Derive) decoded once for all: the same state.
	for _, names := range [][]string{nil, {"memories"}, {"keyword"}, {"jobs", "accounts"}} {
		if err := st.RebuildOffline(ctx, names...); err != nil {
			t.Fatal(err)
		}
		if exportState(t, st) != inPlace {
			t.Fatalf("rebuild of %v with deferred indexes differs from the replay in place", names)
		}
		if indexSchema(t, st) != schema {
			t.Fatalf("rebuild of %v changed the indexes", names)
		}
	}
}
