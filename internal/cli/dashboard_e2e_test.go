package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dashboardProc is a running `engram dashboard`.
type dashboardProc struct {
	url    string // http://127.0.0.1:PORT/
	port   string
	cmd    *exec.Cmd
	stderr *strings.Builder
}

var dashboardURL = regexp.MustCompile(`at (http://(127\.0\.0\.1):(\d+)/) `)

// startDashboard runs `engram -s STACK dashboard --port 0 …` (with
// --no-open unless args ask for the browser with "--no-open=false")
// and waits for the address it prints; the process is interrupted (as
// Ctrl-C would) when the test ends, and must exit 0.
func (h *cliHome) startDashboard(stack string, args ...string) *dashboardProc {
	h.t.Helper()
	cmd := exec.Command(binPath, append([]string{"-s", stack, "dashboard", "--no-open", "--port", "0"}, args...)...)
	cmd.Env = h.env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	p := &dashboardProc{cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := dashboardURL.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
			}
		}
		close(found)
	}()
	select {
	case m, ok := <-found:
		if !ok {
			_ = cmd.Wait()
			h.t.Fatalf("engram dashboard exited without serving: %s", p.stderr)
		}
		p.url, p.port = m[1], m[3]
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		h.t.Fatalf("engram dashboard printed no address: %s", p.stderr)
	}
	h.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("engram dashboard did not stop cleanly on SIGINT: %v\n%s", err, p.stderr)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			h.t.Errorf("engram dashboard did not stop on SIGINT")
		}
	})
	return p
}

// dashResponse is one dashboard answer.
type dashResponse struct {
	status int
	header http.Header
	body   []byte
}

// do sends method path (relative to the dashboard) with an optional Host.
func (p *dashboardProc) do(t *testing.T, method, path, host string) dashResponse {
	t.Helper()
	req, err := http.NewRequest(method, p.url+strings.TrimPrefix(path, "/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return dashResponse{resp.StatusCode, resp.Header, body}
}

// data GETs path, checks the success envelope and returns its data.
func (p *dashboardProc) data(t *testing.T, path string) map[string]any {
	t.Helper()
	r := p.do(t, "GET", path, "")
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	var env map[string]any
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, r.body)
	}
	assertShape(t, "GET "+path, env, "success", "data")
	if env["success"] != true {
		t.Fatalf("GET %s: %s", path, r.body)
	}
	return env["data"].(map[string]any)
}

// failure GETs path and checks the failure envelope with status and code.
func (p *dashboardProc) failure(t *testing.T, method, path string, status int, code string) map[string]any {
	t.Helper()
	r := p.do(t, method, path, "")
	var env struct {
		Success *bool          `json:"success"`
		Error   map[string]any `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("%s %s: %d %v: %s", method, path, r.status, err, r.body)
	}
	if r.status != status || env.Success == nil || *env.Success || env.Error["code"] != code || env.Error["request_id"] != r.header.Get("X-Request-Id") || env.Error["message"] == "" {
		t.Fatalf("%s %s: %d %s, want %d with code %s", method, path, r.status, r.body, status, code)
	}
	return env.Error
}

func items(t *testing.T, data map[string]any, key string) []map[string]any {
	t.Helper()
	raw, ok := data[key].([]any)
	if !ok {
		t.Fatalf("%s is not a list: %v", key, data[key])
	}
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		out[i] = v.(map[string]any)
	}
	return out
}

// seedDashboardStack fills a stack with one memory of every type the
// dashboard lists, a raw entry the processing pass consumed and one it did
// not, a belief derived from a raw entry, a forgotten note and a weakened
// belief; it returns the ids by name. It imports what it can in one run:
// each run of the binary opens the whole stack.
func seedDashboardStack(h *cliHome, stack string) map[string]string {
	h.t.Helper()
	ids := map[string]string{}
	ids["raw"] = h.object("-s", stack, "raw", "Yesterday I fixed the deploy after debugging the incident; it finally worked and I learned to test first")["id"].(string)
	items := []struct {
		name, typ, content string
		derivedFrom        []string
	}{
		{"episode", "episode", `{"objective":"ship v2","outcome":"shipped late","emotional_valence":-0.5,"emotional_arousal":0.3}`, nil},
		{"belief", "belief", `{"statement":"tests catch deploy bugs","confidence":0.8}`, []string{"raw_entry:" + ids["raw"]}},
		{"weak", "belief", `{"statement":"friday deploys are fine","confidence":0.3}`, nil},
		{"note", "note", `{"content":"call Bob about the release","note_type":"decision"}`, nil},
		{"forgotten", "note", `{"content":"an outdated reminder to forget"}`, nil},
		{"value", "value", `{"name":"honesty","statement":"say what is true","priority":90}`, nil},
		{"goal", "goal", `{"title":"learn Go","goal_type":"aspiration","priority":"high"}`, nil},
		{"relationship", "relationship", `{"entity_name":"Alice","relationship_type":"colleague","entity_type":"person","sentiment":0.7}`, nil},
		{"drive", "drive", `{"drive_type":"curiosity","intensity":0.6,"focus_areas":["databases"]}`, nil},
	}
	var lines strings.Builder
	base := time.Now().UTC().Add(-time.Hour)
	for i, it := range items {
		line, err := json.Marshal(map[string]any{"type": it.typ, "content": json.RawMessage(it.content), "derived_from": it.derivedFrom,
			"created_at": base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)})
		if err != nil {
			h.t.Fatal(err)
		}
		lines.Write(append(line, '\n'))
	}
	r := h.run(lines.String(), "-s", stack, "import", "-")
	if r.code != 0 {
		h.t.Fatalf("import: %d %s", r.code, r.stderr)
	}
	var listed struct {
		Memories []struct {
			ID      string          `json:"id"`
			Content json.RawMessage `json:"content"`
		} `json:"memories"`
	}
	h.json(&listed, "-s", stack, "list", "--limit", "100")
	for _, it := range items {
		for _, m := range listed.Memories {
			if containsFields(mustDecode(h.t, m.Content), mustDecode(h.t, json.RawMessage(it.content))) {
				ids[it.name] = m.ID
			}
		}
	}
	h.ok("-s", stack, "forget", ids["forgotten"])
	h.ok("-s", stack, "weaken", ids["weak"], "--by", "0.8")
	h.ok("-s", stack, "process", "--force", "--transition", "raw_to_episode")
	ids["raw2"] = h.object("-s", stack, "raw", "an unprocessed thought about caching")["id"].(string)
	return ids
}

// containsFields tells whether every field of want is in got, equal.
func containsFields(got, want map[string]any) bool {
	for k, v := range want {
		if !jsonEqual(got[k], v) {
			return false
		}
	}
	return true
}

func mustDecode(t *testing.T, b json.RawMessage) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// dashboardTour is every GET route of the dashboard for a seeded stack.
func dashboardTour(ids map[string]string) []string {
	return []string{
		"/", "/api/stats", "/api/anxiety", "/api/raw", "/api/raw?processed=true", "/api/raw?processed=false&limit=1",
		"/api/raw/" + ids["raw"], "/api/episodes", "/api/beliefs", "/api/notes", "/api/values", "/api/goals",
		"/api/relationships", "/api/drives", "/api/suggestions", "/api/audit", "/api/processing",
		"/api/provenance/raw_entry/" + ids["raw"], "/api/provenance/belief/" + ids["belief"], "/api/settings",
	}
}

// TestDashboard runs one dashboard over one seeded stack (seeding costs
// most of the time) through every check that leaves the stack as it is,
// then checks that it never writes the stack, while the command line does.
func TestDashboard(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	ids := seedDashboardStack(h, "demo")
	ids["other"] = h.object("-s", "other", "belief", "--statement", "another stack's belief")["id"].(string)
	d := h.startDashboard("demo")
	t.Run("endpoints answer the stack's data", func(t *testing.T) { dashboardEndpoints(t, ids, d) })
	t.Run("bad requests get generic errors", func(t *testing.T) { dashboardBadRequests(t, h.in(t), ids, d) })
	t.Run("security headers on every answer", func(t *testing.T) { dashboardHeaders(t, ids, d) })
	t.Run("listens on loopback only", func(t *testing.T) { dashboardLoopbackOnly(t, d) })
	t.Run("a port in use is a clear error", func(t *testing.T) { dashboardPortInUse(t, h.in(t), d) })
	t.Run("opens the browser, or does without", func(t *testing.T) { dashboardOpensBrowser(t, h.in(t)) })
	t.Run("never writes the stack", func(t *testing.T) { dashboardReadOnly(t, h.in(t), ids) })
}

func dashboardEndpoints(t *testing.T, ids map[string]string, d *dashboardProc) {

	stats := d.data(t, "/api/stats")
	assertShape(t, "stats", stats, "agent_id", "total", "by_type", "forgotten", "forgotten_by_type", "weak", "raw", "suggestions")
	if stats["agent_id"] != "demo" || stats["total"] != 11.0 || stats["forgotten"] != 1.0 {
		t.Errorf("stats: %v", stats)
	}

	anxiety := d.data(t, "/api/anxiety")
	if _, ok := anxiety["overall_level"].(string); !ok || anxiety["dimensions"] == nil {
		t.Errorf("anxiety: %v", anxiety)
	}

	// Memory lists: forgotten and weak memories are included, each with
	// its strength and tier.
	lists := []struct {
		path string
		want []string
	}{
		{"/api/episodes", []string{"episode"}},
		{"/api/beliefs", []string{"weak", "belief"}},
		{"/api/notes", []string{"forgotten", "note"}},
		{"/api/values", []string{"value"}},
		{"/api/goals", []string{"goal"}},
		{"/api/relationships", []string{"relationship"}},
		{"/api/drives", []string{"drive"}},
	}
	for _, l := range lists {
		data := d.data(t, l.path)
		assertShape(t, l.path, data, "memories", "next_cursor")
		got := items(t, data, "memories")
		if len(got) != len(l.want) || data["next_cursor"] != nil {
			t.Fatalf("%s: %d memories, next_cursor %v; want %d", l.path, len(got), data["next_cursor"], len(l.want))
		}
		for i, m := range got {
			assertShape(t, l.path+" memory", m, memoryKeys...)
			if m["id"] != ids[l.want[i]] {
				t.Errorf("%s[%d] = %v, want %s (%s)", l.path, i, m["id"], ids[l.want[i]], l.want[i])
			}
		}
	}
	beliefs := items(t, d.data(t, "/api/beliefs"), "memories")
	if weak := beliefs[0]; weak["tier"] == "strong" || weak["strength"].(float64) >= 0.5 {
		t.Errorf("the weakened belief: strength %v tier %v", weak["strength"], weak["tier"])
	}
	if notes := items(t, d.data(t, "/api/notes"), "memories"); notes[0]["forgotten"] != true || notes[0]["tier"] != "forgotten" {
		t.Errorf("the forgotten note: forgotten %v tier %v", notes[0]["forgotten"], notes[0]["tier"])
	}

	// Raw entries, with their processing state, filtered both ways.
	raw := d.data(t, "/api/raw")
	assertShape(t, "raw", raw, "raw_entries", "next_cursor")
	entries := items(t, raw, "raw_entries")
	if len(entries) != 2 || entries[0]["id"] != ids["raw2"] || entries[1]["id"] != ids["raw"] {
		t.Fatalf("raw: %v", entries)
	}
	assertShape(t, "raw entry", entries[0], append(memoryKeys, "processed", "processed_into")...)
	if entries[1]["processed"] != true || entries[0]["processed"] != false {
		t.Errorf("processed flags: %v %v (the pass consumed only the first)", entries[1]["processed"], entries[0]["processed"])
	}
	for _, f := range []struct {
		query string
		want  string
	}{{"true", ids["raw"]}, {"false", ids["raw2"]}} {
		got := items(t, d.data(t, "/api/raw?processed="+f.query), "raw_entries")
		if len(got) != 1 || got[0]["id"] != f.want {
			t.Errorf("raw?processed=%s: %v", f.query, got)
		}
	}
	// The header's counts are the filter's: one processed state.
	if counts, _ := stats["raw"].(map[string]any); counts["processed"] != 1.0 || counts["unprocessed"] != 1.0 {
		t.Errorf("stats raw = %v, want the 1 processed and 1 unprocessed /api/raw?processed= lists", stats["raw"])
	}
	one := d.data(t, "/api/raw/"+ids["raw"])
	assertShape(t, "raw/{id}", one, append(memoryKeys, "processed", "processed_into", "derived")...)
	derived := one["derived"].([]any)
	if len(derived) != 1 || derived[0].(map[string]any)["id"] != ids["belief"] {
		t.Errorf("raw/{id} derived: %v, want the belief", derived)
	}

	sugg := d.data(t, "/api/suggestions")
	assertShape(t, "suggestions", sugg, "suggestions")
	list := items(t, sugg, "suggestions")
	if len(list) != 1 || list[0]["status"] != "pending" || !jsonEqual(list[0]["sources"], []any{"raw_entry:" + ids["raw"]}) {
		t.Errorf("suggestions: %v", list)
	}
	if got := items(t, d.data(t, "/api/suggestions?status=rejected"), "suggestions"); len(got) != 0 {
		t.Errorf("suggestions?status=rejected: %v", got)
	}

	audit := d.data(t, "/api/audit")
	assertShape(t, "audit", audit, "entries", "next_before")
	if n := len(items(t, audit, "entries")); n < 13 {
		t.Errorf("audit: %d entries, want one per capture, forget and weaken at least", n)
	}
	page := d.data(t, "/api/audit?limit=2")
	if len(items(t, page, "entries")) != 2 || page["next_before"] == nil {
		t.Fatalf("audit?limit=2: %v", page)
	}
	older := d.data(t, "/api/audit?limit=2&before="+page["next_before"].(string))
	if items(t, older, "entries")[0]["id"] == items(t, page, "entries")[0]["id"] {
		t.Errorf("audit before= did not move on")
	}

	proc := d.data(t, "/api/processing")
	assertShape(t, "processing", proc, "config", "processor", "triggers", "runs", "raw")
	if proc["processor"].(map[string]any)["model"] == "" {
		t.Errorf("processing: no processor model: %v", proc["processor"])
	}

	settings := d.data(t, "/api/settings")
	for _, k := range []string{"agent_id", "stack_state", "enforce_provenance"} {
		if _, ok := settings[k]; !ok {
			t.Errorf("settings lack %s: %v", k, settings)
		}
	}

	// Provenance both ways: the belief's sources (up), the raw entry's
	// derived memories (down); the type may be singular or plural.
	for _, path := range []string{"/api/provenance/belief/" + ids["belief"], "/api/provenance/beliefs/" + ids["belief"]} {
		prov := d.data(t, path)
		assertShape(t, path, prov, "id", "type", "depth", "up", "down")
		up := prov["up"].(map[string]any)["nodes"].([]any)
		if len(up) != 1 || up[0].(map[string]any)["id"] != ids["raw"] {
			t.Errorf("%s up: %v, want the raw entry", path, up)
		}
	}
	// Every spelling of a type (singular, plural, short) is accepted, as
	// derived_from accepts "raw:<id>".
	for _, typ := range []string{"raw_entry", "raw_entries", "raw"} {
		down := d.data(t, "/api/provenance/"+typ+"/"+ids["raw"])["down"].(map[string]any)["nodes"].([]any)
		if len(down) != 1 || down[0].(map[string]any)["id"] != ids["belief"] {
			t.Errorf("provenance down by %s: %v, want the belief", typ, down)
		}
	}

	// The UI at /.
	ui := d.do(t, "GET", "/", "")
	if ui.status != 200 || !strings.HasPrefix(ui.header.Get("Content-Type"), "text/html") || !strings.Contains(string(ui.body), "<html") {
		t.Errorf("GET /: %d %s", ui.status, ui.header.Get("Content-Type"))
	}
}

func dashboardBadRequests(t *testing.T, h *cliHome, ids map[string]string, d *dashboardProc) {
	otherID := ids["other"]

	cases := []struct {
		method, path string
		status       int
		code         string
		field        string
	}{
		{"GET", "/api/raw?limit=0", 400, "invalid_request", "limit"},
		{"GET", "/api/raw?limit=501", 400, "invalid_request", "limit"},
		{"GET", "/api/raw?limit=ten", 400, "invalid_request", "limit"},
		{"GET", "/api/episodes?limit=-1", 400, "invalid_request", "limit"},
		{"GET", "/api/audit?limit=501", 400, "invalid_request", "limit"},
		{"GET", "/api/suggestions?limit=9999", 400, "invalid_request", "limit"},
		{"GET", "/api/raw?processed=maybe", 400, "invalid_request", "processed"},
		{"GET", "/api/raw?cursor=not-a-cursor", 400, "invalid_request", "cursor"},
		{"GET", "/api/notes?cursor=bad", 400, "invalid_request", "cursor"},
		{"GET", "/api/suggestions?status=lost", 400, "invalid_request", "status"},
		{"GET", "/api/raw?limt=5", 400, "invalid_request", "limt"},
		{"GET", "/api/stats?verbose=1", 400, "invalid_request", "verbose"},
		{"GET", "/api/provenance/widget/" + ids["belief"], 400, "invalid_request", "type"},
		{"GET", "/api/provenance/belief/" + ids["belief"] + "?depth=0", 400, "invalid_request", "depth"},
		{"GET", "/api/provenance/belief/" + ids["belief"] + "?depth=99", 400, "invalid_request", "depth"},
		{"GET", "/api/provenance/episode/" + ids["belief"], 404, "not_found", ""},
		{"GET", "/api/provenance/belief/no-such-id", 404, "not_found", ""},
		{"GET", "/api/raw/no-such-id", 404, "not_found", ""},
		{"GET", "/api/raw/" + ids["belief"], 404, "not_found", ""},
		// Another stack's memory is not found, never shown.
		{"GET", "/api/provenance/belief/" + otherID, 404, "not_found", ""},
		{"GET", "/api/raw/" + otherID, 404, "not_found", ""},
		{"GET", "/api/nope", 404, "not_found", ""},
		{"GET", "/api", 404, "not_found", ""},
		{"GET", "/no/such/page.js", 404, "not_found", ""},
		{"POST", "/api/stats", 405, "method_not_allowed", ""},
		{"PUT", "/api/raw", 405, "method_not_allowed", ""},
		{"DELETE", "/api/raw/" + ids["raw"], 405, "method_not_allowed", ""},
		{"PATCH", "/api/settings", 405, "method_not_allowed", ""},
		{"OPTIONS", "/api/stats", 405, "method_not_allowed", ""},
		{"POST", "/", 405, "method_not_allowed", ""},
	}
	for _, c := range cases {
		e := d.failure(t, c.method, c.path, c.status, c.code)
		if c.field != "" {
			details, _ := e["details"].(map[string]any)
			if details["field"] != c.field {
				t.Errorf("%s %s: details %v, want field %s", c.method, c.path, e["details"], c.field)
			}
		}
		if msg := e["message"].(string); strings.Contains(msg, h.dir) || strings.Contains(strings.ToLower(msg), "sql") {
			t.Errorf("%s %s: the message reveals internals: %s", c.method, c.path, msg)
		}
	}
	if r := d.do(t, "POST", "/api/stats", ""); r.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("405 without Allow: GET, HEAD: %v", r.header)
	}

	// A page elsewhere that points its own name at 127.0.0.1 (DNS
	// rebinding) is refused.
	if r := d.do(t, "GET", "/api/stats", "evil.example:"+d.port); r.status != http.StatusMisdirectedRequest {
		t.Errorf("foreign Host: %d %s", r.status, r.body)
	}
	// HEAD answers like GET without a body.
	if r := d.do(t, "HEAD", "/api/stats", ""); r.status != 200 || len(r.body) != 0 {
		t.Errorf("HEAD /api/stats: %d, %d bytes", r.status, len(r.body))
	}
}

func dashboardHeaders(t *testing.T, ids map[string]string, d *dashboardProc) {
	paths := append(dashboardTour(ids), "/api/nope", "/api/raw?limit=0", "/index.html")
	for _, path := range paths {
		for _, method := range []string{"GET", "HEAD", "POST"} {
			r := d.do(t, method, path, "")
			want := map[string]string{
				"X-Content-Type-Options": "nosniff",
				"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
					"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
				"X-Frame-Options": "DENY",
				"Referrer-Policy": "no-referrer",
			}
			for k, v := range want {
				if got := r.header.Get(k); got != v {
					t.Errorf("%s %s: %s = %q, want %q", method, path, k, got, v)
				}
			}
			for k := range r.header {
				if strings.HasPrefix(k, "Access-Control-") {
					t.Errorf("%s %s: CORS header %s", method, path, k)
				}
			}
			if strings.HasPrefix(path, "/api/") && r.header.Get("Cache-Control") != "no-store" {
				t.Errorf("%s %s: Cache-Control %q", method, path, r.header.Get("Cache-Control"))
			}
		}
	}
}

func TestDashboardPagesThroughRawEntries(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	const n = 1050
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"type":"raw_entry","content":{"content":"imported thought number %d"},"created_at":"2026-01-01T00:%02d:%02dZ"}`+"\n", i, i/60%60, i%60)
	}
	file := filepath.Join(h.dir, "raw.jsonl")
	if err := os.WriteFile(file, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	h.ok("-s", "big", "import", file)
	d := h.startDashboard("big")

	first := d.data(t, "/api/raw")
	if got := len(items(t, first, "raw_entries")); got != 200 || first["next_cursor"] == nil {
		t.Fatalf("default page: %d entries, next %v; want 200 and a cursor", got, first["next_cursor"])
	}
	if got := len(items(t, d.data(t, "/api/raw?limit=500"), "raw_entries")); got != 500 {
		t.Fatalf("limit=500: %d entries", got)
	}
	for _, path := range []string{"/api/raw?limit=500", "/api/raw?limit=500&processed=false", "/api/raw?limit=7&processed=false"} {
		seen := map[string]bool{}
		var last time.Time
		pages := 0
		for next := path; ; pages++ {
			data := d.data(t, next)
			for _, e := range items(t, data, "raw_entries") {
				id := e["id"].(string)
				at, _ := time.Parse(time.RFC3339Nano, e["created_at"].(string))
				if seen[id] || (!last.IsZero() && at.After(last)) {
					t.Fatalf("%s: entry %s repeated or out of order", path, id)
				}
				seen[id], last = true, at
			}
			c, ok := data["next_cursor"].(string)
			if !ok {
				break
			}
			next = path + "&cursor=" + c
		}
		if len(seen) != n {
			t.Errorf("%s: paged through %d entries in %d pages, want %d", path, len(seen), pages+1, n)
		}
	}
	if got := items(t, d.data(t, "/api/raw?processed=true"), "raw_entries"); len(got) != 0 {
		t.Errorf("processed=true on an unprocessed stack: %d entries", len(got))
	}
}

// stackHashes hashes every file under dir (by relative path).
func stackHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, path)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func assertSameFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for name, sum := range before {
		if after[name] != sum {
			t.Errorf("%s: %s changed", what, name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s: %s appeared", what, name)
		}
	}
}

func dashboardReadOnly(t *testing.T, h *cliHome, ids map[string]string) {
	dir := filepath.Join(h.dir, "stacks", "demo")
	before := stackHashes(t, dir)
	if _, ok := before["engram.db-shm"]; !ok {
		t.Fatalf("the stack has no WAL index to check: %v", before)
	}

	d := h.startDashboard("demo")
	tour := func() {
		for range 3 { // refreshing changes nothing either
			for _, path := range dashboardTour(ids) {
				if r := d.do(t, "GET", path, ""); r.status != 200 {
					t.Fatalf("GET %s: %d %s", path, r.status, r.body)
				}
			}
		}
	}
	tour()
	assertSameFiles(t, "after touring the dashboard", before, stackHashes(t, dir))

	// The command line writes meanwhile: the next request shows it, and
	// the dashboard still writes nothing.
	added := h.object("-s", "demo", "raw", "captured while the dashboard runs")["id"].(string)
	written := stackHashes(t, dir)
	if got := items(t, d.data(t, "/api/raw?limit=1"), "raw_entries"); len(got) != 1 || got[0]["id"] != added {
		t.Fatalf("the new capture is not the newest raw entry: %v", got)
	}
	if n := d.data(t, "/api/stats")["total"]; n != 12.0 {
		t.Errorf("stats total %v after the capture, want 12", n)
	}
	tour()
	assertSameFiles(t, "after touring again", written, stackHashes(t, dir))
}

// The dashboard hands its address to xdg-open unless --no-open, and
// serves all the same when there is no xdg-open.
func dashboardOpensBrowser(t *testing.T, h *cliHome) {
	bin := t.TempDir()
	opened := filepath.Join(bin, "opened")
	script := "#!/bin/sh\necho \"$1\" > " + opened + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	withOpener := *h
	withOpener.env = append(append([]string{}, h.env...), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	d := withOpener.startDashboard("demo", "--no-open=false")
	var got []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, _ = os.ReadFile(opened); len(got) > 0 {
			break
		}
	}
	if strings.TrimSpace(string(got)) != d.url {
		t.Errorf("xdg-open got %q, want %s", got, d.url)
	}

	noOpener := *h
	noOpener.env = append(append([]string{}, h.env...), "PATH="+t.TempDir())
	if r := noOpener.startDashboard("demo", "--no-open=false").do(t, "GET", "/api/stats", ""); r.status != 200 {
		t.Errorf("without a browser: %d", r.status)
	}
}

// nonLoopbackIP is an address of this machine other than loopback, or
// nil when it has none.
func nonLoopbackIP(t *testing.T) net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() && n.IP.To4() != nil {
			return n.IP
		}
	}
	return nil
}

func dashboardLoopbackOnly(t *testing.T, d *dashboardProc) {
	if !strings.HasPrefix(d.url, "http://127.0.0.1:") {
		t.Fatalf("dashboard address %s is not 127.0.0.1", d.url)
	}
	if r := d.do(t, "GET", "/api/stats", ""); r.status != 200 {
		t.Fatalf("loopback: %d", r.status)
	}
	ip := nonLoopbackIP(t)
	if ip == nil {
		t.Log("this machine has no non-loopback IPv4 address; the printed 127.0.0.1 address is the check")
		return
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), d.port), 3*time.Second)
	if err == nil {
		conn.Close()
		t.Fatalf("the dashboard answered on %s:%s", ip, d.port)
	}
}

func TestDashboardRefusesAMissingStack(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	r := h.fails(1, "", "-s", "ghost", "dashboard", "--no-open", "--port", "0")
	if !strings.Contains(r.stderr, `"ghost"`) || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("stderr: %s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "stacks", "ghost")); !os.IsNotExist(err) {
		t.Errorf("a dashboard on a missing stack created it: %v", err)
	}
	h.fails(2, "", "dashboard", "--no-open")
	h.fails(2, "", "-s", "demo", "dashboard", "--port", "70000")
	h.fails(2, "", "-s", "demo", "dashboard", "extra")
}

// A second dashboard on the first one's port fails at once, naming the
// address and the flag that changes it.
func dashboardPortInUse(t *testing.T, h *cliHome, d *dashboardProc) {
	port := d.port
	r := h.fails(1, "", "-s", "demo", "dashboard", "--no-open", "-p", port)
	if !strings.Contains(r.stderr, "127.0.0.1:"+port) || !strings.Contains(r.stderr, "--port") {
		t.Errorf("stderr: %s", r.stderr)
	}
}
