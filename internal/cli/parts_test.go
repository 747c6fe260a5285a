package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/internal/app"
)

// A local command opens only the parts of the application it uses: no
// local command starts a server's background workers (the job runner, the
// scheduler, the mailer, the embedding queue, the usage recorder), a read
// runs no projection engine, and a keyword search loads neither the vector
// index nor an embedding model. What each command opened is read from the
// application's own debug log line ("application opened" with its
// components), which ENGRAM_LOG_LEVEL=debug shows. Which in-process index
// a command restored from its image, filled from its state or saved an
// image of is read from the index's own log lines: a capture or a read
// touches none, a search only those it searches (docs/snapshots.md).
func TestLocalCommandsOpenOnlyWhatTheyUse(t *testing.T) {
	t.Setenv("ENGRAM_HOME", t.TempDir())
	t.Setenv("ENGRAM_STACK", "")
	t.Setenv("ENGRAM_LOG_LEVEL", "debug")
	serverOnly := []string{app.ComponentJobRunner, app.ComponentScheduler, app.ComponentMailer, app.ComponentEmbedQueue, app.ComponentUsageRecorder}
	const keyword, vectors = "keyword", "vectors"
	cases := []struct {
		name    string
		args    []string
		want    []string // opened
		notWant []string // on top of serverOnly
		indexes []string // the in-process indexes restored, filled or saved
	}{
		{"a capture applies its write through the engine, and no index", []string{"-s", "st", "note", "the heron nests by the quarry"},
			[]string{app.ComponentProjectionEngine, app.ComponentEmbeddingModels}, nil, nil},
		{"a raw capture", []string{"-s", "st", "raw", "saw a heron at the quarry"},
			[]string{app.ComponentProjectionEngine}, nil, nil},
		{"a hybrid search loads both indexes and the models", []string{"-s", "st", "search", "--local", "heron"},
			[]string{app.ComponentKeywordIndex, app.ComponentVectorIndex, app.ComponentEmbeddingModels}, []string{app.ComponentProjectionEngine}, []string{keyword, vectors}},
		{"a keyword search loads the keyword index alone", []string{"-s", "st", "search", "--local", "--mode", "keyword", "heron"},
			[]string{app.ComponentKeywordIndex}, []string{app.ComponentProjectionEngine, app.ComponentVectorIndex, app.ComponentEmbeddingModels}, []string{keyword}},
		{"a capture after the indexes have images", []string{"-s", "st", "note", "the heron left the quarry"},
			[]string{app.ComponentProjectionEngine, app.ComponentEmbeddingModels}, nil, nil},
		{"list reads the read models", []string{"-s", "st", "list"},
			nil, []string{app.ComponentProjectionEngine, app.ComponentKeywordIndex, app.ComponentVectorIndex, app.ComponentEmbeddingModels}, nil},
		{"stats", []string{"-s", "st", "stats"},
			nil, []string{app.ComponentProjectionEngine, app.ComponentKeywordIndex, app.ComponentVectorIndex, app.ComponentEmbeddingModels}, nil},
		{"raw list", []string{"-s", "st", "raw", "list"},
			nil, []string{app.ComponentProjectionEngine, app.ComponentKeywordIndex, app.ComponentVectorIndex}, nil},
		{"status reads the model from the agent record", []string{"-s", "st", "status"},
			nil, []string{app.ComponentProjectionEngine, app.ComponentKeywordIndex, app.ComponentVectorIndex, app.ComponentEmbeddingModels}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("engram %s: exit %d\n%s", strings.Join(tc.args, " "), code, stderr.String())
			}
			opened := openedComponents(t, stderr.String())
			for _, c := range tc.want {
				if !slices.Contains(opened, c) {
					t.Errorf("opened %v, want %s among them", opened, c)
				}
			}
			for _, c := range append(slices.Clone(serverOnly), tc.notWant...) {
				if slices.Contains(opened, c) {
					t.Errorf("opened %v, must not open %s", opened, c)
				}
			}
			if touched := indexesTouched(stderr.String()); !slices.Equal(touched, tc.indexes) {
				t.Errorf("restored, filled or saved the indexes %v, want %v", touched, tc.indexes)
			}
		})
	}
}

// The server opens every part, so the log line above would name the
// workers if a command asked for them.
func TestServerOpensEveryPart(t *testing.T) {
	var cfg serveConfig
	dataDir := t.TempDir()
	if err := parseFlags(serveFlags(&cfg), []string{"--data-dir", dataDir, "--mail-outbox", filepath.Join(dataDir, "outbox")}); err != nil {
		t.Fatal(err)
	}
	cfg.fillFromStandardEnv()
	a, err := newServer(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.close(context.Background())
	if err := a.startScheduler(cfg); err != nil {
		t.Fatal(err)
	}
	opened := a.app.Components()
	for _, c := range []string{app.ComponentProjectionEngine, app.ComponentKeywordIndex, app.ComponentVectorIndex, app.ComponentEmbeddingModels,
		app.ComponentJobRunner, app.ComponentScheduler, app.ComponentMailer, app.ComponentEmbedQueue, app.ComponentUsageRecorder} {
		if !slices.Contains(opened, c) {
			t.Errorf("serve opened %v, want %s among them", opened, c)
		}
	}
}

// openedComponents reads the components of the one "application opened"
// log line in stderr.
func openedComponents(t *testing.T, stderr string) []string {
	t.Helper()
	var lines []string
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, `msg="application opened"`) {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("want one application opened log line, got %d:\n%s", len(lines), stderr)
	}
	_, list, ok := strings.Cut(lines[0], "components=")
	if !ok {
		t.Fatalf("no components in %q", lines[0])
	}
	list = strings.Trim(strings.TrimSpace(list), `"[]`)
	return strings.Fields(list)
}

// indexesTouched names, sorted, the in-process indexes whose log lines in
// stderr say the process opened their image, found none to open (and so
// fills the index from its state) or saved one.
func indexesTouched(stderr string) []string {
	var touched []string
	for line := range strings.Lines(stderr) {
		if !strings.Contains(line, `msg="index snapshot read"`) && !strings.Contains(line, `msg="index snapshot saved"`) &&
			!strings.Contains(line, `msg="no index snapshot: the index is filled from its state"`) &&
			!strings.Contains(line, `msg="index snapshot not used: the index is filled from its state"`) {
			continue
		}
		for _, index := range []string{"keyword", "vectors"} {
			if slices.Contains(strings.Fields(line), "index="+index) && !slices.Contains(touched, index) {
				touched = append(touched, index)
			}
		}
	}
	slices.Sort(touched)
	return touched
}
