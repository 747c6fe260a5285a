package search_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections"
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

// childReady is what a child prints once open, before it writes: the
// kill is timed from then, not from its start, which takes seconds on a
// loaded machine (a kill timed from the start could land before any
// write, and the round would test nothing).
const childReady = "snapshot child ready"

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
	fmt.Println(childReady)
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

// noneLeftPending fails when a restart has a memory pending embedding:
// the child's provider (the built-in local model) never fails, and a
// memory is appended with its vector or not at all, so a pending memory
// is a write that lost its vector. Each restart's embedding queue would
// embed it in the background, at its own pace: the two restarts compared
// would then be at different histories, and the vector the queue adds
// could hide what the image lacked.
func noneLeftPending(t *testing.T, what string, s *searchtest.Env) {
	t.Helper()
	pending, err := s.ReadModel.PendingEmbeddings(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) > 0 {
		t.Fatalf("%s: %d memories pending embedding (first %s) after the kill", what, len(pending), pending[0].MemoryID)
	}
}

// TestKilledWhileSavingSnapshots kills a process that saves both indexes'
// snapshots back to back while it writes (a real child, SIGKILL) at
// random moments: every restart, from whatever images the kills left,
// serves every probe exactly as a start that refills the indexes, and the
// temporary files of interrupted writes are gone.
func TestKilledWhileSavingSnapshots(t *testing.T) {
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	interrupted := 0
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), snapshotChildEnv+"="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		started := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan bool, 1)
		go func() {
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			ready <- strings.TrimSpace(line) == childReady
			_, _ = io.Copy(io.Discard, stdout)
		}()
		select {
		case ok := <-ready:
			if !ok {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
				t.Fatalf("round %d: the child did not open: %s", round, stderr.String())
			}
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			t.Fatalf("round %d: the child did not open in 2 minutes", round)
		}
		opened := time.Since(started)
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
		// Open returned once every projection of each restart applied
		// the log as it stood at open (the start-up gate): probed
		// earlier, a restart lacks what its vector projection has yet to
		// apply (TestRestartProbedBeforeItsVectorsCaughtUp).
		noneLeftPending(t, fmt.Sprintf("round %d, from images", round), fromImage)
		noneLeftPending(t, fmt.Sprintf("round %d, refilled", round), refilled)
		_, keywordImage := fromImage.Keyword.StartedFrom()
		_, vectorImage := fromImage.Vectors.StartedFrom()
		head, err := refilled.Store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: the child opened in %s and was killed %s later; a write in progress: %v; started from images: keyword %v, vectors %v; log head %d",
			round, opened.Round(time.Millisecond), after, len(tmps) > 0, keywordImage, vectorImage, head)
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

// TestRestartProbedBeforeItsVectorsCaughtUp shows where the one
// difference TestKilledWhileSavingSnapshots was seen to report came from
// (a memory with a keyword and a vector hit after the start from images,
// the keyword hit alone after the refill): not the images. A process
// stopped between appending a memory and applying it leaves it in the log
// only; the next start applies it projection by projection, and a search
// between the keyword projection's catch-up and the vector projection's
// finds its keyword hit without its vector one. The crash test's harness
// then loaded the indexes, started the engine and searched at once, and
// the restart opened second (the refill) was often searched in that
// window. searchtest.Open now returns only once every projection applied
// the log as it stood at open, as the server's start-up gate does, so a
// restart serves the memory whole at once.
func TestRestartProbedBeforeItsVectorsCaughtUp(t *testing.T) {
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	s, err := searchtest.Open(ctx, dir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	s.Note(t, "u1", "a", "kubernetes garden planning", nil, t0)
	s.StopEngine()
	// Appended, applied by no projection: the write's wait for them ends
	// with its context, as a SIGKILL would end it.
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	content, _ := json.Marshal(map[string]any{"content": "heron quarry review"})
	_, err = s.Memories.Create(short, searchtest.Meta("u1"), "a", commands.MemoryInput{Type: "note", Content: content, CreatedAt: t0.Format(time.RFC3339Nano)})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("create with no projection running: %v, want its wait to time out", err)
	}
	s.Close()
	refillDir, harnessDir := t.TempDir(), t.TempDir()
	copyDir(t, dir, refillDir)
	copyDir(t, dir, harnessDir)
	if err := os.RemoveAll(filepath.Join(refillDir, "snapshots")); err != nil {
		t.Fatal(err)
	}
	probe := search.Request{UserID: "u1", AgentID: "a", Query: "heron quarry review", Mode: search.ModeHybrid, Limit: 10, Explain: true}
	refilled, err := searchtest.Open(ctx, refillDir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	defer refilled.Close()
	want := run(t, refilled, probe)
	if len(want.Results) != 2 || want.Results[0].Explain.VectorRank == nil || want.Results[0].Explain.KeywordRank == nil {
		t.Fatalf("the refill serves %+v, want the new memory first with both hits", want.Results)
	}

	// The window: the old harness's order, the keyword side caught up and
	// the vector side restored from its image at its own checkpoint.
	coreApp, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	core := coreApp.Core
	defer core.Close()
	if err := core.Engine.CatchUp(ctx, projections.MemoriesProjectionName, projections.KeywordProjectionName); err != nil {
		t.Fatal(err)
	}
	if err := core.LoadIndexes(ctx, true, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := core.Vectors.StartedFrom(); !ok {
		t.Fatal("the vector index did not start from its image")
	}
	catalog, err := app.NewEmbedCatalog(app.Embedding{Model: local.BuiltinModelName})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := core.Search(search.ProviderEmbedder{Provider: catalog}, frozen.Search)
	if err != nil {
		t.Fatal(err)
	}
	probeSvc := func() search.Response {
		resp, err := svc.Search(ctx, probe)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	inWindow := probeSvc()
	first := want.Results[0].Memory.ID
	for _, r := range inWindow.Results {
		if r.Memory.ID == first && (r.Explain.KeywordRank == nil || r.Explain.VectorRank != nil) {
			t.Fatalf("before the vector projection's catch-up the new memory has %+v, want its keyword hit alone", *r.Explain)
		}
	}
	if reflect.DeepEqual(inWindow, want) {
		t.Fatal("the restart in the window serves what the refill does")
	}
	if err := core.Engine.CatchUp(ctx, projections.VectorsProjectionName); err != nil {
		t.Fatal(err)
	}
	sameResponses(t, "once the vector projection caught up", []search.Response{probeSvc()}, []search.Response{want})

	// The harness: whole at once.
	harness, err := searchtest.Open(ctx, harnessDir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	defer harness.Close()
	sameResponses(t, "searchtest.Open", []search.Response{run(t, harness, probe)}, []search.Response{want})
}
