package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/embed/local"
)

func TestCLIEmbed(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	out := h.object("embed", "the", "quick", "fox")
	assertShape(t, "embed", out, "embedding", "dimensions", "model", "tokens_used")
	// The built-in default model: glove-sif-100, 100 dimensions.
	if out["model"] != local.DefaultModelName || out["dimensions"] != 100.0 || len(out["embedding"].([]any)) != 100 {
		t.Fatalf("embed = model %v dims %v len %d", out["model"], out["dimensions"], len(out["embedding"].([]any)))
	}
	if again := h.object("embed", "the quick fox"); !jsonEqual(again["embedding"], out["embedding"]) {
		t.Fatal("the same text embedded differently")
	}
	plain := h.ok("embed", "hello")
	if !strings.HasPrefix(plain.stdout, "[") || !strings.Contains(plain.stderr, local.DefaultModelName+", 100 dimensions") {
		t.Fatalf("plain embed: %q / %q", plain.stdout, plain.stderr)
	}
	if r := h.fails(1, "", "embed", "x", "--model", "text-embedding-3-small"); !strings.Contains(r.stderr, "not available") {
		t.Fatalf("unavailable model: %q", r.stderr)
	}
	h.fails(2, "", "embed")
}

func TestCLIStatus(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	empty := h.object("status")
	assertShape(t, "status", empty, "stack", "path", "exists", "counts", "total", "forgotten", "events", "unpushed_events", "embedding", "cloud")
	assertShape(t, "status.embedding", empty["embedding"], "provider", "model", "dimensions")
	assertShape(t, "status.cloud", empty["cloud"], "base_url", "configured", "reachable")
	if empty["exists"] != false || empty["cloud"].(map[string]any)["configured"] != false {
		t.Fatalf("status of nothing = %v", empty)
	}
	h.ok("note", "--content", "one")
	h.ok("note", "--content", "two")
	id := h.object("belief", "--statement", "three")["id"].(string)
	h.ok("drive", "--drive-type", "curiosity")
	h.ok("forget", id)
	st := h.object("status")
	counts := st["counts"].(map[string]any)
	if counts["note"] != 2.0 || counts["drive"] != 1.0 || counts["belief"] != 0.0 || st["total"] != 3.0 || st["forgotten"] != 1.0 {
		t.Fatalf("status = %v", st)
	}
	if st["events"].(float64) < 5 || st["unpushed_events"] != st["events"] {
		t.Fatalf("events = %v, unpushed %v", st["events"], st["unpushed_events"])
	}
	plain := h.ok("status").stdout
	for _, want := range []string{"3 (1 forgotten)", "note", local.DefaultModelName, "not configured"} {
		if !strings.Contains(plain, want) {
			t.Fatalf("plain status lacks %q:\n%s", want, plain)
		}
	}

	srv := startCloud(t)
	loginCLI(t, h, srv, "status@example.com")
	if c := h.object("status")["cloud"].(map[string]any); c["configured"] != true || c["reachable"] != true {
		t.Fatalf("cloud up: %v", c)
	}
	h.ok("sync", "push")
	if st := h.object("status"); st["unpushed_events"] != 0.0 {
		t.Fatalf("unpushed after sync push = %v", st["unpushed_events"])
	}
	srv.Kill()
	if c := h.object("status")["cloud"].(map[string]any); c["configured"] != true || c["reachable"] != false || !strings.Contains(c["error"].(string), "unreachable") {
		t.Fatalf("cloud down: %v", c)
	}
}

func TestCLIImport(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	var lines bytes.Buffer
	for i := range 2500 {
		fmt.Fprintf(&lines, `{"type": "notes", "content": {"content": "imported note %d"}, "tags": ["import"]}`+"\n", i)
	}
	file := filepath.Join(t.TempDir(), "memories.jsonl")
	if err := os.WriteFile(file, lines.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.ok("-s", "imported", "import", file)
	if r.stderr != "" {
		t.Fatalf("progress went to a pipe: %q", r.stderr)
	}
	if st := h.object("-s", "imported", "status"); st["total"] != 2500.0 {
		t.Fatalf("imported %v memories, want 2500", st["total"])
	}

	// A bad line anywhere stops the import before anything is written.
	bad := "{\"type\": \"note\", \"content\": {\"content\": \"fine\"}}\n{\"type\": \"belief\", \"content\": {\"statment\": \"typo\"}}\n"
	res := h.fails(1, bad, "-s", "fresh", "import", "-")
	if !strings.Contains(res.stderr, "line 2") {
		t.Fatalf("bad line: %q", res.stderr)
	}
	h.fails(1, "", "-s", "fresh", "list") // the stack was never created
	h.fails(1, "not json\n", "-s", "fresh", "import", "-")
	h.fails(1, "", "-s", "fresh", "import", "-")
	if r := h.run("{\"type\": \"note\", \"content\": {\"content\": \"x\"}}\n", "-s", "fresh", "import", "-", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"imported": 1`) {
		t.Fatalf("import --json: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestProgressOnlyOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	c := &cli{stderr: &buf}
	if c.progress("x", 1).enabled {
		t.Fatal("progress enabled on a writer that is not a terminal")
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if (&cli{stderr: f}).progress("x", 1).enabled {
		t.Fatal("progress enabled on /dev/null")
	}
}
