package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/snapshot"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/search"
)

var meta = domain.Metadata{Actor: domain.Actor{Kind: domain.ActorUser, ID: "u1", UserID: "u1"}}

// Each set of parts builds what it names and nothing more: asking for
// search starts no worker, a keyword search loads no model, and a nil part
// stays nil.
func TestNewBuildsOnlyThePartsAskedFor(t *testing.T) {
	dir := sqlitetest.Dir(t)
	seed(t, dir, "the heron nests by the quarry")
	cases := []struct {
		name          string
		parts         app.Parts
		held          app.Held
		want, notWant []string
	}{
		{"the core alone", 0, 0, nil, []string{app.ComponentProjectionEngine, app.ComponentKeywordIndex, app.ComponentEmbeddingModels}},
		{"queries", app.Queries, 0, nil, []string{app.ComponentProjectionEngine, app.ComponentKeywordIndex, app.ComponentVectorIndex, app.ComponentEmbeddingModels}},
		{"keyword search", app.KeywordSearch, 0, []string{app.ComponentKeywordIndex}, []string{app.ComponentProjectionEngine, app.ComponentVectorIndex, app.ComponentEmbeddingModels, app.ComponentJobRunner}},
		{"search", app.Search, 0, []string{app.ComponentKeywordIndex, app.ComponentVectorIndex, app.ComponentEmbeddingModels}, []string{app.ComponentProjectionEngine, app.ComponentJobRunner, app.ComponentEmbedQueue}},
		{"writes", app.Writes, 0, []string{app.ComponentProjectionEngine, app.ComponentEmbeddingModels}, []string{app.ComponentJobRunner, app.ComponentEmbedQueue, app.ComponentMailer, app.ComponentUsageRecorder}},
		{"server", app.Server, 0, []string{app.ComponentProjectionEngine, app.ComponentJobRunner, app.ComponentEmbedQueue, app.ComponentMailer, app.ComponentUsageRecorder}, nil},
		// Held workers are built for the caller to run or step, not started.
		{"server with held workers", app.Server, app.HoldEmbedQueue | app.HoldJobRunner | app.HoldUsageRecorder, []string{app.ComponentProjectionEngine, app.ComponentMailer}, []string{app.ComponentJobRunner, app.ComponentEmbedQueue, app.ComponentUsageRecorder}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := app.New(context.Background(), app.Settings{Config: app.Config{DataDir: dir}, MailOutbox: t.TempDir(), Held: tc.held}, tc.parts)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(context.Background())
			got := a.Components()
			for _, c := range tc.want {
				if !slices.Contains(got, c) {
					t.Errorf("components %v, want %s", got, c)
				}
			}
			for _, c := range tc.notWant {
				if slices.Contains(got, c) {
					t.Errorf("components %v, must not hold %s", got, c)
				}
			}
			if (a.Memories != nil) != (tc.parts&app.Writes != 0) || (a.Search != nil) != (tc.parts&(app.Search|app.KeywordSearch) != 0) ||
				(a.Queries != nil) != (tc.parts&app.Queries != 0) || (a.Accounts != nil) != (tc.parts&app.Accounts != 0) {
				t.Errorf("parts %b built memories %v, search %v, queries %v, accounts %v", tc.parts, a.Memories != nil, a.Search != nil, a.Queries != nil, a.Accounts != nil)
			}
			if workers := tc.parts&app.Workers != 0; (a.EmbedQueue != nil) != workers || (a.JobRunner != nil) != workers {
				t.Errorf("parts %b built the queue %v and the runner %v", tc.parts, a.EmbedQueue != nil, a.JobRunner != nil)
			}
		})
	}
}

// A reader runs no engine, so it applies at open what the log holds beyond
// its projections' checkpoints (here: projections reset to the start, as
// after a writer that stopped before applying its events): it reads every
// write, and a keyword search finds it.
func TestAReaderCatchesUpWithTheLog(t *testing.T) {
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	id := seed(t, dir, "the heron nests by the quarry")
	coreApp, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	core := coreApp.Core
	for _, p := range core.Projections() {
		if p.Name() == projections.MemoriesProjectionName || p.Name() == projections.KeywordProjectionName || p.Name() == projections.VectorsProjectionName {
			if err := p.Reset(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := core.Close(); err != nil {
		t.Fatal(err)
	}

	a, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir}}, app.Queries|app.KeywordSearch)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if _, err := a.Queries.Get(ctx, "u1", id); err != nil {
		t.Fatalf("get after catch-up: %v", err)
	}
	resp, err := a.Search.Search(ctx, search.Request{UserID: "u1", AgentID: "a", Query: "heron", Mode: search.ModeKeyword, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 || resp.Results[0].Memory.ID != id {
		t.Fatalf("keyword search after catch-up: %+v, want %s", resp.Results, id)
	}
}

// seed captures a note through the write side and returns its id.
func seed(t *testing.T, dir, text string) string {
	t.Helper()
	ctx := context.Background()
	a, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir}}, app.Writes)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	content, _ := json.Marshal(map[string]string{"content": text})
	created, err := a.Memories.Create(ctx, meta, "a", commands.MemoryInput{Type: "note", Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return created.ID
}

// A reader that does not search the vectors (a keyword search) still
// applies at open what the log holds beyond the vector state's checkpoint
// (here: a write whose process stopped before applying it), to the state
// alone: it neither drops the vector index nor deletes its image, which
// stays a valid start, and the next vector search catches the image up
// with that write (docs/snapshots.md, "Writes that load no index").
func TestAKeywordReaderKeepsTheVectorImageItCatchesUpTheStateOf(t *testing.T) {
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	seed(t, dir, "the heron nests by the quarry")
	searcher, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir}}, app.Search)
	if err != nil {
		t.Fatal(err)
	}
	if err := searcher.Close(ctx); err != nil { // a refill: the images are saved at close
		t.Fatal(err)
	}
	image := filepath.Join(dir, "snapshots", "vectors.snap")
	saved, err := os.ReadFile(image)
	if err != nil {
		t.Fatal(err)
	}

	writer, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir, VisibilityTimeout: 50 * time.Millisecond}}, app.Writes)
	if err != nil {
		t.Fatal(err)
	}
	writer.StopEngine()
	const text = "a kingfisher dives at the weir"
	content, _ := json.Marshal(map[string]string{"content": text})
	if _, err := writer.Memories.Create(ctx, meta, "a", commands.MemoryInput{Type: "note", Content: content}); err == nil {
		t.Fatal("a write with no engine to apply it was reported visible")
	}
	if err := writer.Close(ctx); err != nil {
		t.Fatal(err)
	}

	reader, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir}}, app.Queries|app.KeywordSearch)
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if now, err := os.ReadFile(image); err != nil || !bytes.Equal(now, saved) {
		t.Fatalf("the keyword reader's catch-up changed or removed the vector image (%v)", err)
	}

	vectors, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir}}, app.Search)
	if err != nil {
		t.Fatal(err)
	}
	defer vectors.Close(ctx)
	if from, ok := vectors.Core.Vectors.StartedFrom(); !ok {
		t.Fatal("the vector index was refilled, not started from its image")
	} else if from.Checkpoint == 0 {
		t.Fatalf("started from an image at checkpoint 0")
	}
	resp, err := vectors.Search.Search(ctx, search.Request{UserID: "u1", AgentID: "a", Query: text, Mode: search.ModeVector, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 || resp.Results[0].Memory.Content == nil || !strings.Contains(string(resp.Results[0].Memory.Content), "kingfisher") {
		t.Fatalf("vector search for the write the keyword reader caught up: %+v", resp.Results)
	}
}

// A search that refills the vector index (a stack with no image yet, as
// after captures alone) saves its image at close with every graph built:
// without waiting, its writes would hold the build off and the image would
// hold no graph, which every later search (a command-line process each)
// would scan exactly and start building again (docs/snapshots.md).
func TestASearchThatRefillsSavesItsGraphsBuilt(t *testing.T) {
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	cfg := app.Config{DataDir: dir, Indexes: app.Indexes{VectorOptions: vectorindex.Options{ANNThreshold: 20}}}
	const memories = 25 // a graph collection (over the threshold)
	captureNotes(t, cfg, memories)
	searcher, err := app.New(ctx, app.Settings{Config: cfg}, app.Search)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := searcher.Core.Vectors.StartedFrom(); ok {
		t.Fatal("the vector index started from an image: the captures saved one")
	}
	if err := searcher.Close(ctx); err != nil { // the refill's image is saved at close
		t.Fatal(err)
	}
	if unbuilt, cols := vectorImage(t, dir); len(cols) != 1 || cols[0].Vectors != memories || unbuilt != 0 {
		t.Fatalf("the refill's image: %d vectors its graphs do not cover, collections %+v", unbuilt, cols)
	}
}

// A server saves a refill's image at once, its graphs partly built, and
// again once they are: the next start then has nothing to build.
func TestAServerSavesItsImageAgainOnceItsGraphsAreBuilt(t *testing.T) {
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	cfg := app.Config{DataDir: dir, Indexes: app.Indexes{VectorOptions: vectorindex.Options{ANNThreshold: 20}}}
	captureNotes(t, cfg, 25)
	server, err := app.New(ctx, app.Settings{Config: cfg}, app.Writes|app.Search)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		unbuilt, cols := vectorImage(t, dir)
		if len(cols) == 1 && unbuilt == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's image: %d vectors its graphs do not cover, collections %+v", unbuilt, cols)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// captureNotes creates n notes in agent a of the stack cfg names, through
// a writer that loads no index (as the local captures do).
func captureNotes(t *testing.T, cfg app.Config, n int) {
	t.Helper()
	ctx := context.Background()
	writer, err := app.New(ctx, app.Settings{Config: cfg}, app.Writes)
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]commands.MemoryInput, n)
	for i := range batch {
		content, _ := json.Marshal(map[string]string{"content": fmt.Sprintf("note %d about the heron by the quarry", i)})
		batch[i] = commands.MemoryInput{Type: "note", Content: content}
	}
	if _, err := writer.Memories.CreateBatch(ctx, meta, "a", batch); err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// vectorImage reads the vector image of the data dir: how many vectors
// its graphs did not cover, and its collections (none: no image yet).
func vectorImage(t *testing.T, dir string) (unbuilt int, cols []vectorindex.CollectionStats) {
	t.Helper()
	f, err := snapshot.Open(filepath.Join(dir, "snapshots"), projections.VectorsProjectionName, vectorindex.SnapshotVersion)
	if errors.Is(err, snapshot.ErrMissing) {
		return 0, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	image, err := vectorindex.ReadSnapshot(f.Body, vectorindex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer image.Index().Close()
	return image.ImageUnbuilt(), image.Index().Stats().PerCollection
}
