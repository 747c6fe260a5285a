package stack_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/stack"
)

// rebuildChildEnv names the data dir a child process of
// TestOfflineRebuildKilledPartWay rebuilds (see TestMain).
const rebuildChildEnv = "ENGRAM_TEST_REBUILD_CHILD_DIR"

// rebuildChild rebuilds every projection of dir offline, as `engram
// projections rebuild` does; the test kills it part-way.
func rebuildChild(dir string) int {
	ctx := context.Background()
	st, err := stack.Open(ctx, stack.Config{DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	if err := st.RebuildOffline(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// exportState is every SQLite read model and the index state with the
// projections' checkpoints: what a rebuild replaces.
func exportState(t *testing.T, st *stack.Stack) string {
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

// staleState changes the read models of dir so that they differ from
// what a rebuild produces, in several tables and checkpoints, and returns
// the export: a state that is neither the rebuilt one nor a mix.
func staleState(t *testing.T, dir string) string {
	t.Helper()
	st := openStack(t, dir)
	defer st.Close()
	err := st.DB.WriteTx(context.Background(), func(tx *sql.Tx) error {
		for _, stmt := range []string{
			`UPDATE memories SET version = version + 7`,
			`DELETE FROM keyword_docs WHERE seq % 3 = 0`,
			`DELETE FROM vector_vectors WHERE seq % 2 = 0`,
			`UPDATE audit_entries SET agent_id = 'stale'`,
			`UPDATE projection_checkpoints SET position = position - 5`,
		} {
			if _, err := tx.Exec(stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return exportState(t, st)
}

func openStack(t *testing.T, dir string) *stack.Stack {
	t.Helper()
	st, err := stack.Open(context.Background(), stack.Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestOfflineRebuildKilledPartWay kills an offline rebuild (a real child
// process, SIGKILL) at moments spread over its run: each time the next
// open finds exactly the state before the rebuild or exactly the rebuilt
// one, never a mix of the two, and a rerun completes to the rebuilt state.
func TestOfflineRebuildKilledPartWay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStack(t, dir)
	fillAgent(t, st.Store, 1000)
	if err := st.RebuildOffline(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt := exportState(t, st)
	st.Close()

	// How long an uninterrupted rebuild takes here, to spread the kills.
	stale := staleState(t, dir)
	start := time.Now()
	if out, err := rebuildProcess(dir).CombinedOutput(); err != nil {
		t.Fatalf("rebuild: %v: %s", err, out)
	}
	whole := time.Since(start)
	outcomes := map[string]int{}
	for i := range 8 {
		if i > 0 || outcomes["rebuilt"] > 0 {
			stale = staleState(t, dir)
		}
		cmd := rebuildProcess(dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(whole * time.Duration(i+1) / 8)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		st := openStack(t, dir)
		got := exportState(t, st)
		st.Close()
		switch got {
		case stale:
			outcomes["old"]++
		case rebuilt:
			outcomes["rebuilt"]++
		default:
			t.Fatalf("killed after %s: the read models are neither the old state nor the rebuilt one", whole*time.Duration(i+1)/8)
		}
	}
	t.Logf("a rebuild takes %s; after a kill: %v", whole, outcomes)

	st = openStack(t, dir)
	defer st.Close()
	if err := st.RebuildOffline(ctx); err != nil {
		t.Fatal(err)
	}
	if exportState(t, st) != rebuilt {
		t.Fatal("the rerun after the kills did not reach the rebuilt state")
	}
	if _, err := os.Stat(filepath.Join(dir, sqlite.RebuildFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the rebuild's fresh file is left behind: %v", err)
	}
}

func rebuildProcess(dir string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), rebuildChildEnv+"="+dir)
	return cmd
}

// TestOfflineRebuildThatFailsLeavesTheOldState: a rebuild cancelled
// before its swap leaves the read models as they were and no fresh file.
func TestOfflineRebuildThatFailsLeavesTheOldState(t *testing.T) {
	dir := t.TempDir()
	st := openStack(t, dir)
	fillAgent(t, st.Store, 500)
	if err := st.RebuildOffline(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.Close()
	stale := staleState(t, dir)
	st = openStack(t, dir)
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.RebuildOffline(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("rebuild with a cancelled context: %v, want context.Canceled", err)
	}
	if exportState(t, st) != stale {
		t.Fatal("a cancelled rebuild changed the read models")
	}
	if _, err := os.Stat(filepath.Join(dir, sqlite.RebuildFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the rebuild's fresh file is left behind: %v", err)
	}
}
