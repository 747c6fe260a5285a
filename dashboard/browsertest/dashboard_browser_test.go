// Package browsertest drives the dashboard's UI in a real headless
// Chromium: the built engram binary serves a stack seeded through the
// command line, and the test uses the page as a person would.
package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/engram-memory/engram/internal/testlog"
	"github.com/engram-memory/engram/internal/testserver"
)

// Environment of the browser test.
const (
	// requireChromiumEnv=1 (set by .ci/run) makes a missing Chromium a
	// failure; elsewhere the test skips without one.
	requireChromiumEnv = "ENGRAM_REQUIRE_CHROMIUM"
	// artifactsEnv names a directory for the screenshots; default a
	// temporary directory of the test.
	artifactsEnv = "ENGRAM_TEST_ARTIFACTS"
	// updateScreenshotsEnv=1 writes the Overview screenshot to
	// docs/dashboard-overview.png, the image the README and docs/dashboard.md show.
	updateScreenshotsEnv = "ENGRAM_UPDATE_SCREENSHOTS"
)

const readmeScreenshot = "../../docs/dashboard-overview.png"

// stepTimeout bounds each wait for the page; the whole test takes well
// under a minute.
const stepTimeout = 20 * time.Second

// TestDashboardInBrowser seeds a stack with every kind of record, serves
// it with `engram dashboard`, and walks the UI in headless Chromium: every
// tab and sub-tab, the raw filter and limit and paging, a row expanded
// from the keyboard, provenance links followed both ways, the theme
// toggle, and auto-refresh showing a capture made meanwhile. The page
// must log no console error and throw no exception.
func TestDashboardInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	bin, err := testserver.Binary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cli := newStackCLI(t, bin, "demo")
	start := time.Now()
	seed := seedStack(t, cli)
	t.Logf("seeded the stack in %v", time.Since(start).Round(time.Millisecond))
	baseURL := startDashboard(t, cli)
	shots := screenshotDir(t)

	b := newBrowser(t, chromium)
	b.do("load the page", chromedp.Navigate(baseURL))
	b.waitJS("the header shows the stack", `document.getElementById("stack-id").textContent === "demo"`)
	b.waitJS("the header shows the counts", `document.querySelectorAll("#header-counts dd").length === 4`)
	if got := b.text("#header-counts dd[data-count=Memories]"); got != fmt.Sprint(seed.memories) {
		t.Errorf("header Memories = %q, want %d", got, seed.memories)
	}
	if badge := b.text("#anxiety-badge"); !regexp.MustCompile(`^Anxiety \d+ · (Calm|Aware|Elevated|High|Critical)$`).MatchString(badge) {
		t.Errorf("anxiety badge = %q", badge)
	}

	// Overview: count cards, anxiety dimensions as bars, processing layers.
	b.waitJS("the overview cards", `document.querySelectorAll("#count-cards .card").length > 0`)
	if got := b.text(`#count-cards [data-card="Episodes"] .value`); got != "2" {
		t.Errorf("Episodes card = %q, want 2", got)
	}
	if got := b.text(`#count-cards [data-card="Raw entries"] .value`); got != fmt.Sprint(seed.raw) {
		t.Errorf("Raw entries card = %q, want %d", got, seed.raw)
	}
	b.waitJS("anxiety bars", `document.querySelectorAll("#anxiety-dimensions meter").length >= 5`)
	b.waitJS("processing layers", `document.querySelectorAll("#processing-layers tbody tr[data-layer]").length >= 5`)
	overview := b.screenshot(shots, "overview", false)
	if os.Getenv(updateScreenshotsEnv) == "1" {
		if err := os.WriteFile(readmeScreenshot, overview, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", readmeScreenshot)
	}

	// Theme: auto → light → dark → auto.
	for _, theme := range []string{"light", "dark", "auto"} {
		b.click("#theme-toggle")
		b.waitJS("theme "+theme, fmt.Sprintf(`document.getElementById("theme-name").textContent === %q && (document.documentElement.getAttribute("data-theme") || "auto") === %[1]q`, theme))
		if theme == "dark" {
			b.screenshot(shots, "overview-dark", true)
		}
	}

	// The tabs are an ARIA tablist: the arrow keys move between them.
	b.do("focus the Overview tab", chromedp.Focus(chromedp.ID("tab-overview")))
	b.do("press ArrowRight", chromedp.KeyEvent(kb.ArrowRight))
	b.waitJS("Raw Entries selected by the keyboard", `document.getElementById("tab-raw").getAttribute("aria-selected") === "true" && document.activeElement.id === "tab-raw" && !document.getElementById("panel-raw").hidden`)

	// Raw Entries: the default limit shows every seeded entry; the newest
	// (the markup-laden one) is first, previewed in 120 characters as text.
	b.waitJS("all raw rows", fmt.Sprintf(`document.querySelectorAll("#raw-table .expander").length === %d`, seed.raw))
	first := b.text("#raw-table tbody tr.item .preview")
	if want := preview(seed.markupBlob); first != want {
		t.Errorf("first raw preview = %q, want %q", first, want)
	}
	if n := []rune(first); len(n) != 121 || n[120] != '…' {
		t.Errorf("preview has %d characters, want 120 and an ellipsis", len(n))
	}
	b.screenshot(shots, "raw", true)

	// Enter expands the row from the keyboard: the whole blob, as text.
	b.do("focus the first raw row", chromedp.Focus(chromedp.CSS(`#raw-table .expander[data-key="`+seed.markupRaw+`"]`)))
	b.do("press Enter", chromedp.KeyEvent("\r"))
	b.waitJS("the expanded blob", fmt.Sprintf(`(() => { const b = document.querySelector('#raw-table tr.detail:not([hidden]) pre.blob'); return b !== null && b.textContent === %q })()`, seed.markupBlob))
	if injected := evalJS[bool](b, `document.querySelectorAll("main script, main b").length > 0 || window.__pwned === 1`); injected {
		t.Error("stored markup became elements of the page")
	}
	b.do("press Space", chromedp.KeyEvent(" "))
	b.waitJS("Space collapses the row", `document.querySelector('#raw-table .expander[aria-expanded="true"]') === null`)

	// Provenance: the processed entry links to the episode derived from it,
	// and the episode links back to its source.
	b.click(`#raw-table .expander[data-key="` + seed.deployRaw + `"]`)
	b.waitJS("the processed entry's derived episode", `document.querySelector('#raw-table tr.detail:not([hidden]) a.ref[data-ref="episode:`+seed.derivedEpisode+`"]') !== null`)
	b.screenshot(shots, "raw-expanded", true)
	b.click(`#raw-table tr.detail:not([hidden]) a.ref[data-ref="episode:` + seed.derivedEpisode + `"]`)
	b.waitJS("the derived episode, focused in Memories", `location.hash === "#memories/episode/`+seed.derivedEpisode+`" && document.getElementById("subtab-episode").getAttribute("aria-selected") === "true" && document.querySelector('#memory-table tr.focused .expander[data-key="`+seed.derivedEpisode+`"][aria-expanded="true"]') !== null`)
	b.waitJS("the episode's source link", `document.querySelector('#memory-table tr.detail:not([hidden]) a.ref[data-ref="raw_entry:`+seed.deployRaw+`"]') !== null`)
	b.screenshot(shots, "memory-provenance", true)
	b.click(`#memory-table tr.detail:not([hidden]) a.ref[data-ref="raw_entry:` + seed.deployRaw + `"]`)
	b.waitJS("the source raw entry, shown in full", fmt.Sprintf(`location.hash === "#raw/%s" && (() => { const b = document.querySelector(".focused-raw pre.blob"); return b !== null && b.textContent === %q })()`, seed.deployRaw, seed.deployBlob))
	b.click(".focused-raw .close")
	b.waitJS("the raw entry box closed", `location.hash === "#raw" && document.querySelector(".focused-raw") === null`)

	// The filter and the limit, and paging through the API's pages. The
	// filters show what the API says of each entry; the seeded stack has
	// two processed entries (both went through a processing pass).
	processed, unprocessed := rawCount(t, baseURL, "true"), rawCount(t, baseURL, "false")
	if processed != 2 || processed+unprocessed != seed.raw {
		t.Errorf("the API lists %d processed and %d unprocessed raw entries, want 2 and %d", processed, unprocessed, seed.raw-2)
	}
	for _, f := range []struct {
		filter string
		want   int
	}{{"processed", processed}, {"unprocessed", unprocessed}, {"all", seed.raw}} {
		b.click(`#raw-filter [data-filter="` + f.filter + `"]`)
		b.waitJS("filter "+f.filter, fmt.Sprintf(`document.querySelector('#raw-filter [data-filter=%q]').getAttribute("aria-checked") === "true" && document.querySelectorAll("#raw-table .expander").length === %d`, f.filter, f.want))
		if f.filter != "all" {
			if wrong := evalJS[int](b, fmt.Sprintf(`[...document.querySelectorAll("#raw-table tr.item td:nth-child(3)")].filter((td) => td.textContent !== %q).length`, f.filter)); wrong != 0 {
				t.Errorf("filter %s shows %d rows of the other state", f.filter, wrong)
			}
		}
	}
	b.choose("#raw-limit", "50")
	b.waitJS("limit 50", `document.querySelectorAll("#raw-table .expander").length === 50 && !document.querySelector('#raw-pager [data-page="next"]').disabled`)
	b.click(`#raw-pager [data-page="next"]`)
	b.waitJS("the second page", fmt.Sprintf(`document.querySelectorAll("#raw-table .expander").length === %d && document.querySelector("#raw-pager").textContent.includes("page 2")`, seed.raw-50))
	b.click(`#raw-pager [data-page="prev"]`)
	b.waitJS("back on the first page", `document.querySelectorAll("#raw-table .expander").length === 50 && document.querySelector('#raw-pager [data-page="prev"]').disabled`)

	// Memories: every sub-tab lists its type with that type's columns;
	// the forgotten and the weak memory are shown as such.
	b.click("#tab-memories")
	for _, typ := range []string{"episode", "belief", "value", "goal", "note", "relationship", "drive"} {
		b.click("#subtab-" + typ)
		b.waitJS(typ+" rows", fmt.Sprintf(`location.hash === "#memories/%s" && document.getElementById("subtab-%[1]s").getAttribute("aria-selected") === "true" && document.querySelectorAll("#memory-table .expander").length === %d`, typ, seed.byType[typ]))
		b.screenshot(shots, "memories-"+typ, true)
	}
	b.do("focus the Drives sub-tab", chromedp.Focus(chromedp.ID("subtab-drive")))
	b.do("press Home", chromedp.KeyEvent(kb.Home))
	b.waitJS("Episodes selected and focused by the keyboard", `location.hash === "#memories/episode" && document.activeElement && document.activeElement.id === "subtab-episode" && document.activeElement.getAttribute("aria-selected") === "true"`)
	b.click("#subtab-note")
	b.waitJS("the forgotten note", `document.querySelector('#memory-table tr.is-forgotten .expander[data-key="`+seed.forgottenNote+`"]') !== null`)
	b.click("#subtab-belief")
	b.waitJS("the weak belief", `document.querySelector('#memory-table tr.is-weak .expander[data-key="`+seed.weakBelief+`"]') !== null && document.querySelector("#memory-table .tier-weak") !== null`)

	// Suggestions: promoted and rejected; the status filter.
	b.click("#tab-suggestions")
	b.waitJS("suggestion rows", `document.querySelectorAll("#suggestion-table .expander").length === 2`)
	b.screenshot(shots, "suggestions", true)
	b.choose("#suggestion-status", "rejected")
	b.waitJS("only the rejected suggestion", `document.querySelectorAll("#suggestion-table .expander").length === 1 && document.querySelector("#suggestion-table td.status-rejected") !== null`)
	b.choose("#suggestion-status", "")

	// Audit Log and Settings.
	b.click("#tab-audit")
	b.waitJS("audit rows with the forget", `document.querySelectorAll("#audit-table tbody tr.item").length >= 10 && [...document.querySelectorAll("#audit-table td")].some((td) => td.textContent === "forget")`)
	b.screenshot(shots, "audit", true)
	b.click("#tab-settings")
	b.waitJS("the settings", `document.querySelector('#settings-list dd[data-key="stack_state"]') !== null && document.querySelector('#processing-list dd[data-key="processor.model"]') !== null`)
	b.screenshot(shots, "settings", true)

	// Auto-refresh: a capture made with the command line meanwhile appears
	// without any action on the page.
	b.click("#tab-raw")
	b.waitJS("the raw tab", `!document.getElementById("panel-raw").hidden && document.querySelectorAll("#raw-table .expander").length === 50`)
	b.click("#auto-refresh")
	b.waitJS("auto-refresh on", `document.getElementById("auto-refresh").getAttribute("aria-pressed") === "true"`)
	// The keyboard focus stays on its row across the refreshes. The row is
	// found and focused in one script: with auto-refresh on, a refresh can
	// replace the row between a CSS lookup and a separate Focus command.
	b.waitJS("focus a raw row", `(() => {
		const row = document.querySelector('#raw-table .expander[data-key="`+seed.markupRaw+`"]');
		if (!row) return false;
		row.focus();
		return document.activeElement === row;
	})()`)
	const live = "A capture made while the dashboard watches"
	cli.run("raw", live)
	b.waitJS("the new capture", fmt.Sprintf(`[...document.querySelectorAll("#raw-table .preview")].some((p) => p.textContent === %q)`, live))
	b.waitJS("the focus kept on its row", `document.activeElement && document.activeElement.dataset.key === "`+seed.markupRaw+`"`)
	b.click("#auto-refresh")
	b.waitJS("auto-refresh off", `document.getElementById("auto-refresh").getAttribute("aria-pressed") === "false"`)

	b.noProblems()
	t.Logf("the whole test took %v", time.Since(start).Round(time.Millisecond))
}

// TestDashboardInBrowserEmptyStack: a stack with nothing in it shows every
// tab with its empty state and no error.
func TestDashboardInBrowserEmptyStack(t *testing.T) {
	chromium := chromiumPath(t)
	bin, err := testserver.Binary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cli := newStackCLI(t, bin, "empty")
	// A stack exists once something was written to it; forgetting the only
	// capture leaves it with no memory to show.
	var raw struct{ ID string }
	cli.json(&raw, "raw", "the only capture")
	cli.run("forget", raw.ID)
	baseURL := startDashboard(t, cli)
	shots := screenshotDir(t)

	b := newBrowser(t, chromium)
	b.do("load the page", chromedp.Navigate(baseURL+"#raw"))
	b.waitJS("the raw tab", `!document.getElementById("panel-raw").hidden && document.getElementById("stack-id").textContent === "empty"`)
	// What each tab shows once loaded: the one forgotten raw entry, empty
	// lists, and the stack's own settings.
	loaded := map[string]string{
		"overview":    `document.querySelector('#count-cards [data-card="Raw entries"] .value')?.textContent === "1"`,
		"raw":         `document.querySelectorAll("#raw-table tr.is-forgotten .expander").length === 1`,
		"memories":    `document.querySelector("#memory-table td.empty")?.textContent === "No episodes yet."`,
		"suggestions": `document.querySelector("#suggestion-table td.empty") !== null`,
		"audit":       `document.querySelectorAll("#audit-table tbody tr.item").length >= 2`,
		"settings":    `document.querySelector('#settings-list dd[data-key="stack_state"]') !== null`,
	}
	for _, tab := range []string{"overview", "raw", "memories", "suggestions", "audit", "settings"} {
		b.click("#tab-" + tab)
		b.waitJS(tab+" loaded", fmt.Sprintf(`(() => { const p = document.getElementById("panel-%s"); return !p.hidden && p.getAttribute("aria-busy") === "false" && %s })()`, tab, loaded[tab]))
		b.screenshot(shots, tab, true)
	}
	b.noProblems()
}

// ---- the seeded stack ---------------------------------------------------------

// seeded is what seedStack put in the stack, for the assertions.
type seeded struct {
	raw, memories  int
	byType         map[string]int
	deployRaw      string // processed: a suggestion from it was accepted
	deployBlob     string
	derivedEpisode string // the episode accepted from deployRaw
	markupRaw      string // the newest raw entry, full of markup
	markupBlob     string
	forgottenNote  string
	weakBelief     string
}

// seedStack fills the stack through the command line as a user would:
// two raw captures processed into suggestions (one accepted, which makes
// an episode derived from its raw entry, one rejected), an import of
// sixty raw entries and a memory of every type, a forgotten note, a weak
// belief, and last a raw entry full of markup. It uses few commands: each
// one opens the stack anew.
func seedStack(t *testing.T, cli *stackCLI) seeded {
	t.Helper()
	s := seeded{}
	s.deployBlob = "Today I deployed the new login service and it broke for Safari users; we rolled back and learned to canary first"
	s.deployRaw = cli.id("raw", s.deployBlob)
	cli.run("raw", "Today I shipped the billing migration and it broke for EU customers; we rolled back and learned to test plans first")
	cli.run("process", "--force", "--transition", "raw_to_episode")
	var pending struct {
		Suggestions []struct {
			ID      string
			Sources []string
		}
	}
	cli.json(&pending, "suggestions", "list", "--status", "pending")
	if len(pending.Suggestions) != 2 {
		t.Fatalf("%d pending suggestions, want 2", len(pending.Suggestions))
	}
	for _, sg := range pending.Suggestions {
		if slices.Equal(sg.Sources, []string{"raw_entry:" + s.deployRaw}) {
			var accepted struct{ Memory struct{ ID string } }
			cli.json(&accepted, "suggestions", "accept", sg.ID)
			s.derivedEpisode = accepted.Memory.ID
		} else {
			cli.run("suggestions", "reject", sg.ID, "--reason", "not a lesson")
		}
	}

	lines := []string{
		`{"type":"episode","content":{"objective":"Ship billing v2 behind a feature flag","outcome":"Shipped; the flag let us roll back in seconds","emotional_valence":0.6,"emotional_arousal":0.4,"confidence":0.9}}`,
		`{"type":"belief","content":{"statement":"Canary releases catch browser-specific bugs","confidence":0.7}}`,
		`{"type":"value","content":{"name":"Safety","statement":"Prefer reversible changes","priority":80}}`,
		`{"type":"goal","content":{"title":"Cut deploy time to five minutes","priority":"high"}}`,
		`{"type":"note","content":{"content":"Safari needs the Intl.Segmenter polyfill","note_type":"diagnostic"}}`,
		`{"type":"note","content":{"content":"Release notes go out on Thursdays"}}`,
		`{"type":"relationship","content":{"entity_name":"Dana","relationship_type":"colleague","entity_type":"person","sentiment":0.7}}`,
		`{"type":"drive","content":{"drive_type":"curiosity","intensity":0.8,"focus_areas":["databases","browsers"]}}`,
	}
	for i := range 60 {
		lines = append(lines, fmt.Sprintf(`{"type":"raw_entry","content":{"content":"Imported capture %02d about the release train","source":"import"}}`, i))
	}
	importFile := filepath.Join(t.TempDir(), "memories.jsonl")
	if err := os.WriteFile(importFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli.run("import", importFile)
	var list struct {
		Memories []struct {
			ID, Type string
			Content  map[string]any
		}
	}
	cli.json(&list, "list", "--type", "belief", "--type", "note", "--limit", "10")
	for _, m := range list.Memories {
		switch {
		case m.Type == "belief":
			s.weakBelief = m.ID
		case m.Content["note_type"] == "diagnostic":
			s.forgottenNote = m.ID
		}
	}
	if s.weakBelief == "" || s.forgottenNote == "" {
		t.Fatalf("the imported belief and note are not listed: %+v", list)
	}
	cli.run("weaken", s.weakBelief, "--by", "0.6")
	cli.run("forget", s.forgottenNote)

	s.markupBlob = `<script>window.__pwned = 1</script> <b>not bold</b> & "quoted": a capture longer than the preview, ` + strings.Repeat("lorem ipsum dolor ", 12) + "END"
	s.markupRaw = cli.id("raw", s.markupBlob)

	s.byType = map[string]int{"episode": 2, "belief": 1, "value": 1, "goal": 1, "note": 2, "relationship": 1, "drive": 1}
	s.raw = 2 + 60 + 1
	s.memories = s.raw
	for _, n := range s.byType {
		s.memories += n
	}
	return s
}

// stackCLI runs the engram binary on one stack of a private ENGRAM_HOME.
type stackCLI struct {
	t     *testing.T
	bin   string
	stack string
	env   []string
}

func newStackCLI(t *testing.T, bin, stack string) *stackCLI {
	return &stackCLI{t: t, bin: bin, stack: stack, env: testserver.Environ(t.TempDir())}
}

// run runs `engram -s STACK args…` and returns its stdout.
func (c *stackCLI) run(args ...string) []byte {
	c.t.Helper()
	cmd := exec.Command(c.bin, append([]string{"-s", c.stack}, args...)...)
	cmd.Env = c.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("engram %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func (c *stackCLI) json(out any, args ...string) {
	c.t.Helper()
	if err := json.Unmarshal(c.run(append(args, "--json")...), out); err != nil {
		c.t.Fatalf("engram %s --json: %v", strings.Join(args, " "), err)
	}
}

// id captures a memory and returns its id.
func (c *stackCLI) id(args ...string) string {
	c.t.Helper()
	var m struct{ ID string }
	c.json(&m, args...)
	if m.ID == "" {
		c.t.Fatalf("engram %s returned no id", strings.Join(args, " "))
	}
	return m.ID
}

// startDashboard runs `engram dashboard` on a free loopback port and
// returns its address once it serves.
func startDashboard(t *testing.T, c *stackCLI) string {
	t.Helper()
	cmd := exec.Command(c.bin, "dashboard", "--stack", c.stack, "--port", "0", "--no-open")
	cmd.Env = c.env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testlog.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := dashboardURL.FindString(sc.Text()); m != "" {
				addr <- m
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-addr:
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("engram dashboard printed no address\n%s", stderr.String())
		return ""
	}
}

var dashboardURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)

// rawCount counts the raw entries /api/raw lists as processed ("true") or
// not ("false"), which the UI's filters must agree with.
func rawCount(t *testing.T, baseURL, processed string) int {
	t.Helper()
	res, err := http.Get(baseURL + "api/raw?limit=500&processed=" + processed)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var env struct {
		Data struct {
			RawEntries []json.RawMessage `json:"raw_entries"`
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	return len(env.Data.RawEntries)
}

// preview is the UI's blob preview: whitespace folded, 120 characters and
// an ellipsis.
func preview(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}

// ---- the browser ----------------------------------------------------------------

// chromiumPath finds Chromium. Without one the test skips, unless
// ENGRAM_REQUIRE_CHROMIUM=1 (CI), where it fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on PATH (Debian: apt-get install chromium); the dashboard browser test needs one"
	if os.Getenv(requireChromiumEnv) == "1" {
		t.Fatal(msg + " and " + requireChromiumEnv + "=1")
	}
	t.Skip(msg)
	return ""
}

// browser is one headless Chromium tab that records what the page logs.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	console []string // errors and exceptions the page logged
}

func newBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.WindowSize(1280, 900),
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run its sandbox as root
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx}
	messages := chromedp.Console(ctx) // starts the browser
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.console = append(b.console, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// noProblems fails the test for every console error or exception the
// page logged and for an error it shows.
func (b *browser) noProblems() {
	b.t.Helper()
	for _, p := range b.problems() {
		b.t.Errorf("console: %s", p)
	}
	if shown := evalJS[string](b, `document.getElementById("error-banner").hidden ? "" : document.getElementById("error-banner").textContent`); shown != "" {
		b.t.Errorf("the page shows an error: %s", shown)
	}
}

// problems returns the errors and exceptions the page logged so far.
func (b *browser) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.console...)
}

func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\nconsole: %v", what, err, b.problems())
	}
}

// waitJS waits until the JavaScript expression is true.
func (b *browser) waitJS(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout))); err != nil {
		b.t.Fatalf("waiting for %s: %v\nconsole: %v\npage: %s", what, err, b.problems(), b.pageText())
	}
}

// pageText is what the page shows, to explain a failed wait.
func (b *browser) pageText() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash + "\n" + document.body.innerText.slice(0, 3000)`))
	if err != nil {
		return err.Error()
	}
	return text
}

func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return evalJS[string](b, fmt.Sprintf(`(document.querySelector(%q) || {textContent: "(missing)"}).textContent`, sel))
}

// choose picks an option of a <select> and tells the page, as a person
// choosing with the mouse or the keyboard would.
func (b *browser) choose(sel, value string) {
	b.t.Helper()
	evalJS[bool](b, fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.focus(); s.value = %q; s.dispatchEvent(new Event("change", {bubbles: true})); return true })()`, sel, value))
}

// screenshot saves a PNG of the viewport, or of the whole page when full,
// into dir and returns it.
func (b *browser) screenshot(dir, name string, full bool) []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	shot := chromedp.CaptureScreenshot()
	if full {
		shot = chromedp.FullScreenshot(100)
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return png
}

// screenshotDir is where the screenshots go: $ENGRAM_TEST_ARTIFACTS/<test>
// when set, else a temporary directory of the test.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if root := os.Getenv(artifactsEnv); root != "" {
		dir = filepath.Join(root, t.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", dir)
	return dir
}
