package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/engram-memory/engram/client"
)

// digestLine is one memory as the digests compare it.
func digestLine(id, typ string, content json.RawMessage, derived []string, forgotten, protected bool) string {
	var compact bytes.Buffer
	_ = json.Compact(&compact, content)
	return strings.Join([]string{id, typ, compact.String(), strings.Join(derived, ","), boolWord(forgotten), boolWord(protected)}, " ")
}

// memoryDigest is what a local stack's listing says of its memories, ids
// included, in a stable order.
func memoryDigest(t *testing.T, h *cliHome) string {
	t.Helper()
	var out struct {
		Memories []struct {
			ID          string          `json:"id"`
			Type        string          `json:"type"`
			Content     json.RawMessage `json:"content"`
			DerivedFrom []string        `json:"derived_from"`
			Forgotten   bool            `json:"forgotten"`
			Protected   bool            `json:"is_protected"`
		} `json:"memories"`
	}
	h.json(&out, "list", "--include-forgotten", "--limit", "100")
	lines := make([]string, len(out.Memories))
	for i, m := range out.Memories {
		lines[i] = digestLine(m.ID, m.Type, m.Content, m.DerivedFrom, m.Forgotten, m.Protected)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// cloudDigest is memoryDigest of the cloud agent, through the API.
func cloudDigest(t *testing.T, api *client.Client, agent string) string {
	t.Helper()
	var lines []string
	for _, m := range cloudMemories(t, api, agent) {
		lines = append(lines, digestLine(m.ID, m.Type, m.Content, m.DerivedFrom, m.Forgotten, m.IsProtected))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// TestCLIExportImportLocalToCloudAndBack exports a local stack holding
// several memory types, provenance, a strength change, a forget and an
// accepted suggestion, imports it into the cloud, exports it from there on
// a second machine and imports it into that machine's stack: both stacks
// list the same memories, ids included; a repeated import changes
// nothing; on pipes no progress bar is drawn.
func TestCLIExportImportLocalToCloudAndBack(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	laptop, desktop := newCLIHome(t), newCLIHome(t)

	raw := laptop.object("raw", "Yesterday we deployed the billing service and it failed, then I learned to check migrations")["id"].(string)
	laptop.object("raw", "Reminder: the docs are at https://example.com/docs")
	ep := laptop.object("episode", "--objective", "ship billing", "--outcome", "failed on a migration", "--derived-from", "raw_entry:"+raw)["id"].(string)
	belief := laptop.object("belief", "--statement", "migrations need a dry run", "--derived-from", "episode:"+ep)["id"].(string)
	note := laptop.object("note", "--content", "the staging database is shared")["id"].(string)
	laptop.object("goal", "--title", "automate migration checks")
	laptop.ok("weaken", ep, "--by", "0.3")
	laptop.ok("protect", belief)
	laptop.ok("forget", note)
	laptop.ok("process", "--force")
	var sgs struct {
		Suggestions []struct {
			ID string `json:"id"`
		} `json:"suggestions"`
	}
	laptop.json(&sgs, "suggestions", "list")
	if len(sgs.Suggestions) == 0 {
		t.Fatal("processing proposed nothing")
	}
	laptop.ok("suggestions", "accept", sgs.Suggestions[0].ID)
	want := memoryDigest(t, laptop)

	file := filepath.Join(laptop.dir, "laptop.jsonl")
	exported := laptop.ok("export", "--local", "--output", file)
	if strings.Contains(exported.stderr, "\r") {
		t.Fatalf("export drew a progress bar on a pipe: %q", exported.stderr)
	}
	if first := firstLine(t, file); !strings.HasPrefix(first, `{"header":{"format":"events"`) {
		t.Fatalf("export starts with %s", first)
	}

	// Into the cloud: the laptop is logged in, so import goes there.
	key := loginCLI(t, laptop, srv, "export@example.com")
	imported := laptop.object("import", file)
	if imported["side"] != "cloud" || imported["appended"].(float64) == 0 {
		t.Fatalf("import into the cloud: %v", imported)
	}
	if got := cloudDigest(t, client.New(srv.APIURL(), key), "default"); got != want {
		t.Fatalf("the cloud's memories differ from the stack's:\n--- stack\n%s\n--- cloud\n%s", want, got)
	}
	if again := laptop.object("import", file); again["appended"] != 0.0 {
		t.Fatalf("a repeated import appended: %v", again)
	}

	// And back, on another machine: export from the cloud, import locally.
	loginWithKey(t, desktop, srv, key)
	back := filepath.Join(desktop.dir, "cloud.jsonl")
	desktop.ok("export", "--output", back)
	local := desktop.object("import", back, "--local")
	if local["side"] != "local" {
		t.Fatalf("import --local: %v", local)
	}
	if got := memoryDigest(t, desktop); got != want {
		t.Fatalf("the desktop's stack differs from the laptop's:\n--- laptop\n%s\n--- desktop\n%s", want, got)
	}
	if again := desktop.object("import", back, "--local"); again["appended"] != 0.0 || again["duplicates"].(float64) == 0 {
		t.Fatalf("a repeated local import: %v", again)
	}

	// The memories form, to stdout, for other tools.
	mem := desktop.ok("export", "--local", "--format", "memories")
	if !strings.HasPrefix(mem.stdout, `{"header":{"format":"memories"`) || strings.Count(mem.stdout, "\n") < 6 {
		t.Fatalf("memories export:\n%s", mem.stdout)
	}
}

func firstLine(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	sc.Scan()
	return sc.Text()
}
