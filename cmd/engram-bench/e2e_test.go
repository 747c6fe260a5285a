package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/testserver"
)

// benchDir is shared/bench beside the repository (CI runs with ../shared
// next to the clone).
const benchDir = "../../../shared/bench"

// TestEndToEnd runs both commands against the real server, built once.
func TestEndToEnd(t *testing.T) {
	bin, err := testserver.Binary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Run("quality", func(t *testing.T) { testQuality(t, bin) })
	t.Run("load", func(t *testing.T) { testLoad(t, bin) })
	t.Run("replay", func(t *testing.T) { testReplay(t, bin) })
	t.Run("replay from a postgres log", func(t *testing.T) { testReplayFromPostgres(t, bin) })
	t.Run("server flag", func(t *testing.T) { testAgainstRunningServer(t, bin) })
}

// testAgainstRunningServer measures a server that runs already (--server,
// --api-key), and refuses to mix a second run into the first one's agents.
func testAgainstRunningServer(t *testing.T, bin string) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("SKIP: python3 is not installed; score.py needs it")
	}
	srv := testserver.Start(t, testserver.Options{Binary: bin})
	key := testserver.Register(t, srv.APIURL(), srv.DataDir, "bench@example.com")
	args := []string{"quality", "--corpus", "testdata/corpus.jsonl", "--queries", "testdata/queries.jsonl",
		"--bench-dir", benchDir, "--modes", "keyword", "--check-targets=false",
		"--server", srv.APIURL(), "--api-key", key}
	var stderr bytes.Buffer
	if code := run(t.Context(), append(args, "--out", t.TempDir()), io.Discard, &stderr); code != exitOK {
		t.Fatalf("first run: exit %d\n%s", code, stderr.String())
	}
	stderr.Reset()
	code := run(t.Context(), append(args, "--out", t.TempDir()), io.Discard, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "already has memories") {
		t.Fatalf("second run into the same agents: exit %d\n%s", code, stderr.String())
	}
}

// testQuality runs `engram-bench quality` on a tiny made-up corpus
// (testdata: 30 records of two invented conversations, 5 queries; not
// LoCoMo data) in both protocols.
func testQuality(t *testing.T, bin string) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("SKIP: python3 is not installed; score.py needs it")
	}
	if _, err := os.Stat(filepath.Join(benchDir, "score.py")); err != nil {
		t.Skipf("SKIP: %s/score.py not found: %v", benchDir, err)
	}
	for _, proto := range []string{"turns", "turns+notes"} {
		t.Run(proto, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), []string{"quality",
				"--corpus", "testdata/corpus.jsonl", "--queries", "testdata/queries.jsonl",
				"--bench-dir", benchDir, "--out", out, "--protocol", proto,
				"--engram-bin", bin, "--check-targets=false",
			}, &stdout, &stderr)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			for _, mode := range []string{"hybrid", "vector", "keyword", "bm25"} {
				if !strings.Contains(stdout.String(), "\n"+mode+" ") {
					t.Errorf("table lacks %s:\n%s", mode, stdout.String())
				}
				data, err := os.ReadFile(filepath.Join(out, "score-"+mode+".json"))
				if err != nil {
					t.Fatal(err)
				}
				s, err := parseScoreFile(data)
				if err != nil {
					t.Fatal(err)
				}
				if s.Missing != 0 || s.Groups[subsetAll].N != 5 || s.Groups[subsetExclAdv].N != 4 {
					t.Errorf("%s: %+v", mode, s)
				}
				// The fixture's queries share distinctive words with their
				// gold turns, so a working keyword index finds them.
				if mode == "keyword" && s.Groups[subsetAll].R10 < 0.8 {
					t.Errorf("keyword R@10 %.3f on the fixture", s.Groups[subsetAll].R10)
				}
			}
			results, err := readJSONL[resultLine](filepath.Join(out, "results-hybrid.jsonl"))
			if err != nil || len(results) != 5 {
				t.Fatalf("results-hybrid.jsonl: %d lines, %v", len(results), err)
			}
			for _, r := range results {
				for _, id := range r.RankedIDs {
					if !strings.HasPrefix(id, strings.Split(r.QueryID, ":")[0]+":") {
						t.Fatalf("query %s ranked %s: another agent's record, or an unmapped id", r.QueryID, id)
					}
				}
			}
			md, err := os.ReadFile(filepath.Join(out, "quality.md"))
			if err != nil || !bytes.Contains(md, []byte("| bm25 |")) || !bytes.Contains(md, []byte("protocol **"+proto+"**")) {
				t.Fatalf("quality.md: %v\n%s", err, md)
			}
		})
	}
}

// testLoad runs a short `engram-bench load` and checks its JSON report.
func testLoad(t *testing.T, bin string) {
	out := filepath.Join(t.TempDir(), "load.json")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"load",
		"--n", "300", "--batch-size", "100", "--ingest-concurrency", "2", "--concurrency", "4",
		"--duration", "500ms", "--warmup", "100ms", "--out", out, "--engram-bin", bin,
	}, &stdout, &stderr)
	checkLoadReport(t, out, code, &stdout, &stderr)
	// The same searches through the MCP tool search_memories, with the raw
	// client (all three modes) and the SDK's (one): both read the server's
	// time from the tool's answer, as REST reads it from /v1/search's.
	for _, tc := range []struct{ client, modes string }{{mcpClientRaw, "hybrid,vector,keyword"}, {mcpClientSDK, "keyword"}} {
		out = filepath.Join(t.TempDir(), "load-mcp.json")
		stdout.Reset()
		stderr.Reset()
		code = run(t.Context(), []string{"load", "--via", "mcp", "--mcp-client", tc.client, "--modes", tc.modes,
			"--n", "300", "--batch-size", "100", "--concurrency", "4", "--recall-queries", "0",
			"--duration", "500ms", "--warmup", "100ms", "--out", out, "--engram-bin", bin,
		}, &stdout, &stderr)
		if code != exitOK {
			t.Fatalf("--via mcp --mcp-client %s: exit %d\nstdout:\n%s\nstderr:\n%s", tc.client, code, stdout.String(), stderr.String())
		}
		var rep loadReport
		data, err := os.ReadFile(out)
		if err == nil {
			err = json.Unmarshal(data, &rep)
		}
		if err != nil || rep.Via != viaMCP || rep.MCPClient != tc.client || len(rep.Modes) != len(strings.Split(tc.modes, ",")) || !strings.Contains(stdout.String(), "search_memories") {
			t.Fatalf("--via mcp --mcp-client %s report %+v (%v)\n%s", tc.client, rep, err, stdout.String())
		}
		for _, m := range rep.Modes {
			if m.Requests == 0 || m.Errors != 0 || m.EndToEnd.P50 <= 0 || m.ServerSide.P50 <= 0 || m.ServerWholeMS || m.MeanHits == 0 {
				t.Errorf("--via mcp --mcp-client %s %s: %+v", tc.client, m.Mode, m)
			}
		}
	}
}

// checkLoadReport checks the report of a `load` run over REST.
func checkLoadReport(t *testing.T, out string, code int, stdout, stderr *bytes.Buffer) {
	t.Helper()
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Ingest.Memories != 300 || rep.Ingest.Batches != 3 || rep.Dimensions <= 0 || rep.Memory.AfterFill == nil || rep.PID == 0 {
		t.Fatalf("report: %+v", rep)
	}
	if c := rep.Ingest.Curve; len(c) == 0 || c[0].From != 0 || c[len(c)-1].To != 300 || c[0].PerSecond <= 0 || c[0].ServerCPUMsPerMemory == nil {
		t.Fatalf("ingest curve: %+v", c)
	}
	if len(rep.Modes) != 3 {
		t.Fatalf("modes: %+v", rep.Modes)
	}
	for _, m := range rep.Modes {
		if m.Requests == 0 || m.Errors != 0 || m.EndToEnd.P50 <= 0 || m.EndToEnd.P99 < m.EndToEnd.P50 || m.Throughput <= 0 {
			t.Errorf("%s: %+v", m.Mode, m)
		}
	}
	if !strings.Contains(stdout.String(), "hybrid") || !strings.Contains(stdout.String(), "memories/s") {
		t.Errorf("table:\n%s", stdout.String())
	}
	// 300 vectors are below the graph threshold: the index scans exactly,
	// so the driver's exact top 10 must be the index's.
	if rc := rep.Recall; rc == nil || rc.Queries != 100 || rc.Vectors != 300 || rc.Recall != 1 || !strings.Contains(stdout.String(), "recall@10 against exact search: 1.0000") {
		t.Errorf("recall %+v; table:\n%s", rc, stdout.String())
	}
}

// testReplay fills a data dir through the real server, then rebuilds it
// (all projections and each alone) twice: after the fill, and again on
// the kept data dir with --skip-fill. Both rebuilds replay the same log.
func testReplay(t *testing.T, bin string) {
	dir := t.TempDir()
	replay := func(extra ...string) replayReport {
		t.Helper()
		out := filepath.Join(t.TempDir(), "replay.json")
		var stdout, stderr bytes.Buffer
		args := append([]string{"replay", "--n", "120", "--batch-size", "50", "--data-dir", dir, "--out", out, "--engram-bin", bin}, extra...)
		if code := run(t.Context(), args, &stdout, &stderr); code != exitOK {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
		}
		if !strings.Contains(stdout.String(), "events/s") || !strings.Contains(stdout.String(), "target: all projections") {
			t.Errorf("table:\n%s", stdout.String())
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var rep replayReport
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	filled := replay()
	// 120 memories are at least 240 events (created and embedded).
	if filled.Ingest.Memories != 120 || filled.Events < 240 || filled.Cores <= 0 || filled.LoadAverage == "" || filled.EventStore != "sqlite" {
		t.Fatalf("report: %+v", filled)
	}
	names := []string{"all", "accounts", "memories", "keyword", "vectors", "jobs", "provenance", "audit", "suggestions", "webhooks"}
	if len(filled.Rebuilds) != len(names) {
		t.Fatalf("rebuilds: %+v", filled.Rebuilds)
	}
	for i, r := range filled.Rebuilds {
		if r.Projection != names[i] || r.Seconds <= 0 || r.EventsPerSecond <= 0 {
			t.Errorf("rebuild %d: %+v, want %s", i, r, names[i])
		}
	}
	again := replay("--skip-fill", "--each=false", "--floor")
	if again.Events != filled.Events || len(again.Rebuilds) != 1 || again.Rebuilds[0].Projection != "all" {
		t.Fatalf("rebuild of the kept data dir: %+v", again)
	}
	testStorageFloor(t, again.Floor, filepath.Join(dir, sqlite.FileName))
}

// testStorageFloor checks --floor's report against the rebuilt database:
// every read-model table copied whole, the memories' rows among them,
// then the deferred indexes built.
func testStorageFloor(t *testing.T, f *replayFloor, dbPath string) {
	t.Helper()
	if f == nil || f.CPUSeconds <= 0 || f.EventsPerSecond <= 0 || len(f.Steps) == 0 {
		t.Fatalf("floor: %+v", f)
	}
	if last := f.Steps[len(f.Steps)-1]; last.Table != sqlite.DeferredIndexesStep {
		t.Errorf("last step %+v, want the deferred indexes", last)
	}
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	copied := map[string]int64{}
	for _, s := range f.Steps[:len(f.Steps)-1] {
		var rows int64
		if err := db.QueryRow(`SELECT count(*) FROM ` + s.Table).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if s.Rows != rows {
			t.Errorf("%s: copied %d rows of %d", s.Table, s.Rows, rows)
		}
		copied[s.Table] = s.Rows
	}
	for _, table := range []string{"memories", "memory_embeddings", "vector_memories", "vector_vectors", "keyword_docs", "audit_entries"} {
		if copied[table] < 120 {
			t.Errorf("%s: %d rows copied, want the 120 memories' at least", table, copied[table])
		}
	}
}

// testReplayFromPostgres fills a PostgreSQL log through the real server
// and rebuilds from it.
func testReplayFromPostgres(t *testing.T, bin string) {
	dbURL := pg.Database(t)
	out := filepath.Join(t.TempDir(), "replay.json")
	var stdout, stderr bytes.Buffer
	args := []string{"replay", "--n", "120", "--batch-size", "50", "--each=false", "--data-dir", t.TempDir(), "--out", out, "--engram-bin", bin,
		"--event-store", "postgres", "--event-store-url", dbURL}
	if code := run(t.Context(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep replayReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.EventStore != "postgres" || rep.Ingest.Memories != 120 || rep.Events < 240 || len(rep.Rebuilds) != 1 || rep.Rebuilds[0].EventsPerSecond <= 0 {
		t.Fatalf("report: %+v", rep)
	}
	if !strings.Contains(stdout.String(), "from the postgres log") {
		t.Errorf("table:\n%s", stdout.String())
	}
}
