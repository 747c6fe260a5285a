package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

// snapshotChildEnv names the data dir a child process of
// TestKilledWhileSavingSnapshots writes to (see TestMain).
const snapshotChildEnv = "ENGRAM_TEST_SNAPSHOT_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(snapshotChildEnv); dir != "" {
		os.Exit(snapshotChild(dir))
	}
	os.Exit(m.Run())
}

var crashWords = []string{"kubernetes", "garden", "heron", "quarry", "outage", "planning", "tomatoes", "deploy", "budget", "review"}

// snapshotChild writes memories (creating, patching, forgetting and
// purging them) while it saves both indexes' images back to back, until
// it is killed.
func snapshotChild(dir string) int {
	ctx := context.Background()
	env, err := searchtest.Open(ctx, dir, frozen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		for {
			if err := env.Keyword.SaveSnapshot(ctx); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			if err := env.Vectors.SaveSnapshot(ctx); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 27))
	meta := searchtest.Meta("u1")
	var made []string
	for i := 0; ; i++ {
		words := make([]string, 3+rng.IntN(6))
		for j := range words {
			words[j] = crashWords[rng.IntN(len(crashWords))]
		}
		content, _ := json.Marshal(map[string]any{"content": strings.Join(words, " ")})
		c, err := env.Memories.Create(ctx, meta, []string{"a", "b"}[i%2], commands.MemoryInput{
			Type: "note", Content: content, Tags: []string{fmt.Sprintf("t%d", rng.IntN(3))},
			CreatedAt: t0.Add(time.Duration(rng.IntN(48)) * time.Hour).Format(time.RFC3339Nano),
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		made = append(made, c.ID)
		if len(made) < 5 {
			continue
		}
		id := made[rng.IntN(len(made))]
		switch rng.IntN(6) {
		case 0:
			_, err = env.Memories.Forget(ctx, meta, id, nil)
		case 1:
			err = env.Memories.Purge(ctx, meta, id, nil)
		case 2:
			_, err = env.Memories.Patch(ctx, meta, id, patchContent(`{"content": "heron review patched"}`))
		}
		if err != nil && !strings.Contains(err.Error(), "not_found") && !strings.Contains(err.Error(), "not found") {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}

// crashProbes search the child's agents in every mode with filters. An
// agent the child was killed before creating is reported as missing
// rather than probed: both restarts must agree on which are.
func crashProbes(t *testing.T, s *searchtest.Env) (out []search.Response, missing []string) {
	for _, agent := range []string{"a", "b"} {
		_, err := s.Search.Search(context.Background(), search.Request{UserID: "u1", AgentID: agent, Query: "kubernetes", Mode: search.ModeKeyword, Limit: 1})
		if domain.ErrorKind(err) == domain.KindNotFound {
			missing = append(missing, agent)
			continue
		}
		for _, req := range []search.Request{
			{Query: "kubernetes garden", Limit: 50},
			{Query: "heron review", Limit: 50, IncludeForgotten: true},
			{Query: "outage budget", Limit: 20, Filter: search.Filter{Tags: []string{"t1"}, CreatedAfter: t0.Add(6 * time.Hour), CreatedBefore: t0.Add(30 * time.Hour)}},
		} {
			for _, mode := range allModes {
				req.UserID, req.AgentID, req.Mode, req.Explain = "u1", agent, mode, true
				out = append(out, run(t, s, req))
			}
		}
	}
	return out, missing
}

// settle waits until s embedded what the killed child left pending and
// every projection applied the resulting events, and returns how many
// memories were pending at first. A patch whose provider call fails or
// times out (a loaded machine) leaves its memory pending; each restart's
// embedding queue then embeds it in the background. Probed before that,
// the restart that got there first had a vector hit the other lacked:
// the two must be compared at the same history.
func settle(t *testing.T, s *searchtest.Env) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := -1
	for {
		pending, err := s.ReadModel.PendingEmbeddings(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if first < 0 {
			first = len(pending)
		}
		head, err := s.Store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Engine.WaitFor(ctx, head); err != nil {
			t.Fatal(err)
		}
		if len(pending) == 0 {
			return first
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKilledWhileSavingSnapshots kills a process that saves both indexes'
// snapshots back to back while it writes (a real child, SIGKILL) at
// random moments: every restart, from whatever images the kills left,
// serves every probe exactly as a start that refills the indexes, and the
// temporary files of interrupted writes are gone.
func TestKilledWhileSavingSnapshots(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	interrupted := 0
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), snapshotChildEnv+"="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		after := time.Duration(800+rng.IntN(1500)) * time.Millisecond
		time.Sleep(after)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if strings.TrimSpace(stderr.String()) != "" {
			t.Fatalf("round %d: the child failed: %s", round, stderr.String())
		}
		tmps, _ := filepath.Glob(filepath.Join(dir, "snapshots", ".*.snap.tmp-*"))
		if len(tmps) > 0 {
			interrupted++
		}

		refillDir := t.TempDir()
		copyDir(t, dir, refillDir)
		if err := os.RemoveAll(filepath.Join(refillDir, "snapshots")); err != nil {
			t.Fatal(err)
		}
		fromImage, err := searchtest.Open(ctx, dir, frozen)
		if err != nil {
			t.Fatal(err)
		}
		refilled, err := searchtest.Open(ctx, refillDir, frozen)
		if err != nil {
			t.Fatal(err)
		}
		_, keywordImage := fromImage.Keyword.StartedFrom()
		_, vectorImage := fromImage.Vectors.StartedFrom()
		pending := settle(t, fromImage)
		settle(t, refilled)
		t.Logf("round %d: killed after %s; a write in progress: %v; started from images: keyword %v, vectors %v; %d memories left pending embedding", round, after, len(tmps) > 0, keywordImage, vectorImage, pending)
		imaged, imagedMissing := crashProbes(t, fromImage)
		truth, truthMissing := crashProbes(t, refilled)
		if !slices.Equal(imagedMissing, truthMissing) {
			t.Fatalf("round %d: agents missing after the start from images %v, after the refill %v", round, imagedMissing, truthMissing)
		}
		sameResponses(t, fmt.Sprintf("round %d, killed after %s", round, after), imaged, truth)
		if tmps, _ := filepath.Glob(filepath.Join(dir, "snapshots", ".*.snap.tmp-*")); len(tmps) > 0 {
			t.Fatalf("round %d: temporary files left after the restart: %v", round, tmps)
		}
		// The restart's own writes (its clean stop saves images) are
		// part of the history the next child starts from.
		fromImage.Close()
		refilled.Close()
	}
	t.Logf("%d of 5 kills interrupted a snapshot write", interrupted)
}
