package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/kurrentdb"
)

func init() {
	// The document describes exports and imports as JSON Lines; the
	// validator reads such a body as a string.
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.FileBodyDecoder)
}

// exportAgent reads GET /v1/agents/{agent}/export (format "" for the
// default) and returns its status and body.
func (s *stack) exportAgent(t testing.TB, bearer, agent, format string) (int, []byte) {
	t.Helper()
	path := "/v1/agents/" + agent + "/export"
	if format != "" {
		path += "?format=" + format
	}
	req, err := http.NewRequest("GET", s.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	res, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode == http.StatusOK && res.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export content type %q", res.Header.Get("Content-Type"))
	}
	return res.StatusCode, body
}

// importAgent posts body to POST /v1/agents/{agent}/import.
func (s *stack) importAgent(t testing.TB, bearer, agent string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest("POST", s.srv.URL+"/v1/agents/"+agent+"/import", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Authorization", "Bearer "+bearer)
	return s.sendAs(t, req)
}

type importResult struct {
	Format     string `json:"format"`
	Appended   int    `json:"appended"`
	Duplicates int    `json:"duplicates"`
	Skipped    int    `json:"skipped"`
	Remapped   int    `json:"remapped"`
}

// buildRichAgent fills the user's agent with every memory type, provenance,
// strength changes, a forget, a settings change, and suggestions of a
// processing pass, one accepted and one rejected.
func buildRichAgent(t *testing.T, s *stack, key, agent string) {
	t.Helper()
	raws := s.raws(t, key, agent, goldenRaw...)
	s.process(t, key, agent, map[string]any{"force": true})
	sgs := s.suggestions(t, key, agent, "?status=pending")
	if len(sgs) < 2 {
		t.Fatalf("the pass proposed %d suggestions", len(sgs))
	}
	s.request(t, "POST", "/v1/suggestions/"+sgs[0].ID+"/accept", key, nil).must(t, http.StatusOK, nil)
	s.request(t, "POST", "/v1/suggestions/"+sgs[1].ID+"/reject", key, map[string]any{"reason": "not now"}).must(t, http.StatusOK, nil)
	ep := s.createFrom(t, key, agent, "episode", map[string]any{"objective": "ship the billing service", "outcome": "it failed on a migration", "lessons": []string{"check migrations"}}, "raw_entry:"+raws[goldenRaw[1]])
	b := s.createFrom(t, key, agent, "belief", map[string]any{"statement": "migrations need a dry run"}, "episode:"+ep.ID)
	s.createFrom(t, key, agent, "value", map[string]any{"name": "care", "statement": "check before shipping"}, "belief:"+b.ID)
	goal := s.create(t, key, agent, "goal", map[string]any{"title": "automate migration checks", "goal_type": "task"})
	s.create(t, key, agent, "playbook", map[string]any{"name": "release", "description": "how we ship", "steps": []map[string]any{{"action": "dry run", "details": "staging"}}})
	s.create(t, key, agent, "relationship", map[string]any{"entity_name": "Dana", "relationship_type": "colleague", "notes": "owns billing"})
	s.create(t, key, agent, "drive", map[string]any{"drive_type": "curiosity", "intensity": 0.6})
	note := s.create(t, key, agent, "note", map[string]any{"content": "the staging database is shared"})
	s.request(t, "PATCH", "/v1/memories/"+goal.ID, key, map[string]any{"content": map[string]any{"goal_type": "commitment"}, "tags": []string{"q3"}}).must(t, http.StatusOK, nil)
	s.request(t, "POST", "/v1/memories/"+ep.ID+"/weaken", key, map[string]any{"by": 0.25, "reason": "doubt"}).must(t, http.StatusOK, nil)
	s.request(t, "POST", "/v1/memories/"+b.ID+"/verify", key, nil).must(t, http.StatusOK, nil)
	s.request(t, "POST", "/v1/memories/"+b.ID+"/protect", key, nil).must(t, http.StatusOK, nil)
	s.request(t, "DELETE", "/v1/memories/"+note.ID, key, nil).must(t, http.StatusOK, nil)
	s.settings(t, key, agent, map[string]any{"lazy_decay": false})
}

// agentSnapshot is everything the API shows of an agent, ids replaced by
// their position in the listing (so that an import with mapped ids
// compares equal), strengths rounded, and the audit as its operations.
func agentSnapshot(t *testing.T, s *stack, key, agent string) string {
	t.Helper()
	var b strings.Builder
	mems := s.listAll(t, key, "agent_id="+agent+"&include_forgotten=true&include_weak=true", 100)
	sort.Slice(mems, func(i, j int) bool {
		if !mems[i].CreatedAt.Equal(mems[j].CreatedAt) {
			return mems[i].CreatedAt.Before(mems[j].CreatedAt)
		}
		return string(mems[i].Content) < string(mems[j].Content)
	})
	alias := map[string]string{}
	for i, m := range mems {
		alias[m.ID] = fmt.Sprintf("m%d", i)
	}
	name := func(ref string) string {
		typ, id, _ := strings.Cut(ref, ":")
		if a, ok := alias[id]; ok {
			return typ + ":" + a
		}
		return typ + ":?" + id
	}
	for _, m := range mems {
		got := s.get(t, key, m.ID)
		refs := make([]string, len(got.DerivedFrom))
		for i, r := range got.DerivedFrom {
			refs[i] = name(r)
		}
		fmt.Fprintf(&b, "%s %s %s tags=%v from=%v created=%s updated=%s forgotten=%v strength=%.3f protected=%v verified=%d embedding=%s/%s\n",
			alias[m.ID], got.Type, got.Content, got.Tags, refs, got.CreatedAt.UTC().Format("15:04:05.000000"), got.UpdatedAt.UTC().Format("15:04:05.000000"),
			got.Forgotten, math.Round(got.Strength*1000)/1000, got.Protected, got.VerificationCount, got.Embedding.Status, got.Embedding.Model)
	}
	for _, mode := range []string{"keyword", "vector", "hybrid"} {
		for _, q := range []string{"billing migration", "staging database", "caching latency"} {
			var res struct {
				Results []struct {
					Type  string  `json:"type"`
					ID    string  `json:"id"`
					Score float64 `json:"score"`
				} `json:"results"`
			}
			s.request(t, "POST", "/v1/search", key, map[string]any{"agent_id": agent, "query": q, "mode": mode}).must(t, http.StatusOK, &res)
			fmt.Fprintf(&b, "search %s %q:", mode, q)
			for _, r := range res.Results {
				fmt.Fprintf(&b, " %s=%.4f", name(r.Type+":"+r.ID), r.Score)
			}
			b.WriteString("\n")
		}
	}
	sgs := s.suggestions(t, key, agent, "")
	sort.Slice(sgs, func(i, j int) bool { return string(sgs[i].Content) < string(sgs[j].Content) })
	for _, sg := range sgs {
		srcs := make([]string, len(sg.Sources))
		for i, r := range sg.Sources {
			srcs[i] = name(r)
		}
		promoted := ""
		if sg.PromotedTo != "" {
			promoted = name(sg.PromotedTo)
		}
		fmt.Fprintf(&b, "suggestion %s %s %s %.2f sources=%v status=%s reason=%q promoted=%s\n", sg.Transition, sg.MemoryType, sg.Content, sg.Confidence, srcs, sg.Status, sg.Reason, promoted)
	}
	for _, m := range mems {
		if len(m.DerivedFrom) == 0 {
			continue
		}
		var tree map[string]any
		s.request(t, "GET", "/v1/memories/"+m.ID+"/provenance", key, nil).must(t, http.StatusOK, &tree)
		raw, _ := json.Marshal(tree)
		text := string(raw)
		for id, a := range alias {
			text = strings.ReplaceAll(text, id, a)
		}
		fmt.Fprintf(&b, "provenance %s %s\n", alias[m.ID], text)
	}
	var audit struct {
		Entries []struct {
			Operation  string `json:"operation"`
			MemoryType string `json:"memory_type"`
			MemoryID   string `json:"memory_id"`
		} `json:"entries"`
	}
	s.request(t, "GET", "/v1/agents/"+agent+"/audit?limit=1000", key, nil).must(t, http.StatusOK, &audit)
	b.WriteString("audit:")
	for _, e := range audit.Entries {
		if e.Operation == "import" {
			continue // the import's own entry, checked apart
		}
		id := ""
		if e.MemoryID != "" {
			id = name(e.MemoryType + ":" + e.MemoryID)
		}
		fmt.Fprintf(&b, " %s(%s)", e.Operation, id)
	}
	b.WriteString("\n")
	var settings map[string]any
	s.request(t, "GET", "/v1/agents/"+agent+"/settings", key, nil).must(t, http.StatusOK, &settings)
	delete(settings, "updated_at")
	delete(settings, "agent_id")
	fmt.Fprintf(&b, "settings %v\n", settings)
	return b.String()
}

// TestTransferRoundTripsAnAgent exports an agent holding every memory
// type, provenance, strength changes, a forget and suggestions, imports it
// into a fresh server under another user, and every read model and both
// indexes answer the same through the API; a second import changes
// nothing, and the audit names the importer and the origin.
func TestTransferRoundTripsAnAgent(t *testing.T) {
	t.Parallel()
	src := newStack(t, stackOptions{})
	_, keyA := src.user(t, "export-a@example.com")
	buildRichAgent(t, src, keyA, "claire")
	status, export := src.exportAgent(t, keyA, "claire", "")
	if status != http.StatusOK {
		t.Fatalf("export: %d %s", status, export)
	}
	want := agentSnapshot(t, src, keyA, "claire")

	dst := newStack(t, stackOptions{})
	_, keyB := dst.user(t, "import-b@example.com")
	var res importResult
	dst.importAgent(t, keyB, "claire", export).must(t, http.StatusOK, &res)
	lines := bytes.Count(export, []byte("\n"))
	if res.Appended != lines-1 || res.Duplicates != 0 || res.Remapped != 0 {
		t.Fatalf("first import: %+v for %d event lines", res, lines-1)
	}
	if got := agentSnapshot(t, dst, keyB, "claire"); got != want {
		t.Fatalf("the import differs from the export's agent:\n--- exported\n%s\n--- imported\n%s", want, got)
	}

	var again importResult
	dst.importAgent(t, keyB, "claire", export).must(t, http.StatusOK, &again)
	if again.Appended != 0 || again.Duplicates != lines-1 {
		t.Fatalf("second import: %+v, want nothing appended and %d duplicates", again, lines-1)
	}
	if got := agentSnapshot(t, dst, keyB, "claire"); got != want {
		t.Fatalf("a second import changed the agent:\n%s", got)
	}

	var audit struct {
		Entries []struct {
			Operation string         `json:"operation"`
			Actor     string         `json:"actor"`
			Details   map[string]any `json:"details"`
		} `json:"entries"`
	}
	dst.request(t, "GET", "/v1/agents/claire/audit?limit=1000", keyB, nil).must(t, http.StatusOK, &audit)
	imports := 0
	for _, e := range audit.Entries {
		if !strings.HasPrefix(e.Actor, "key:") {
			t.Errorf("audit entry %s by %s: the importer's key should be the actor", e.Operation, e.Actor)
		}
		if e.Operation == "import" {
			imports++
			if e.Details["origin"] != src.srv.URL+"/v1" || e.Details["source_agent_id"] != "claire" || e.Details["format"] != "events" {
				t.Errorf("import entry details: %v", e.Details)
			}
		}
	}
	if imports != 1 {
		t.Fatalf("%d import entries, want 1 (the repeated import appended nothing)", imports)
	}
}

// TestTransferRemapsIdsTheServerHolds imports an export into the same
// server, for another user and for another agent of the same user: the ids
// are taken, so they are mapped, and every reference follows. On both
// read-model backends.
func TestTransferRemapsIdsTheServerHolds(t *testing.T) {
	t.Parallel()
	onEachReadModelBackend(t, stackOptions{}, testTransferRemapsIdsTheServerHolds)
}

func testTransferRemapsIdsTheServerHolds(t *testing.T, s *stack) {
	_, keyA := s.user(t, "remap-a@example.com")
	_, keyB := s.user(t, "remap-b@example.com")
	buildRichAgent(t, s, keyA, "claire")
	_, export := s.exportAgent(t, keyA, "claire", "")
	want := agentSnapshot(t, s, keyA, "claire")
	for _, tc := range []struct{ key, agent string }{{keyB, "claire"}, {keyA, "copy"}} {
		var res importResult
		s.importAgent(t, tc.key, tc.agent, export).must(t, http.StatusOK, &res)
		if res.Remapped == 0 || res.Appended == 0 {
			t.Fatalf("import into %s: %+v, want remapped ids", tc.agent, res)
		}
		if got := agentSnapshot(t, s, tc.key, tc.agent); got != want {
			t.Fatalf("import into %s differs:\n--- exported\n%s\n--- imported\n%s", tc.agent, want, got)
		}
		var again importResult
		s.importAgent(t, tc.key, tc.agent, export).must(t, http.StatusOK, &again)
		if again.Appended != 0 {
			t.Fatalf("second import into %s: %+v", tc.agent, again)
		}
	}
	// The source is untouched.
	if got := agentSnapshot(t, s, keyA, "claire"); got != want {
		t.Fatalf("importing elsewhere changed the source:\n%s", got)
	}
}

// TestTransferMemoriesForm exports each memory's current state and imports
// it: the memories, their provenance, strengths and forgets arrive.
func TestTransferMemoriesForm(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, keyA := s.user(t, "mem-form-a@example.com")
	_, keyB := s.user(t, "mem-form-b@example.com")
	buildRichAgent(t, s, keyA, "claire")
	status, export := s.exportAgent(t, keyA, "claire", "memories")
	if status != http.StatusOK || !bytes.HasPrefix(export, []byte(`{"header":{"format":"memories"`)) {
		t.Fatalf("memories export: %d %.200s", status, export)
	}
	var res importResult
	s.importAgent(t, keyB, "claire", export).must(t, http.StatusOK, &res)
	src := s.listAll(t, keyA, "agent_id=claire&include_forgotten=true&include_weak=true", 100)
	dst := s.listAll(t, keyB, "agent_id=claire&include_forgotten=true&include_weak=true", 100)
	if len(src) != len(dst) {
		t.Fatalf("%d memories imported, want %d", len(dst), len(src))
	}
	byContent := map[string]memory.View{}
	for _, m := range dst {
		byContent[string(m.Content)] = m
	}
	for _, m := range src {
		got, ok := byContent[string(m.Content)]
		if !ok || got.Type != m.Type || got.Forgotten != m.Forgotten || got.Protected != m.Protected ||
			math.Abs(got.Strength-m.Strength) > 0.01 || len(got.DerivedFrom) != len(m.DerivedFrom) {
			t.Errorf("memory %s %s: imported as %+v", m.Type, m.Content, got)
		}
	}
	var again importResult
	s.importAgent(t, keyB, "claire", export).must(t, http.StatusOK, &again)
	if again.Appended != 0 {
		t.Fatalf("second memories import appended %d", again.Appended)
	}

	// A memory line without created_at is created now, as a create
	// without one is (its zero time is not taken as a time before 1970).
	lines := bytes.Split(bytes.TrimSpace(export), []byte("\n"))
	var line map[string]map[string]any
	if err := json.Unmarshal(lines[1], &line); err != nil || line["memory"] == nil {
		t.Fatalf("second line of a memories export: %v %.200s", err, lines[1])
	}
	delete(line["memory"], "created_at")
	undated, err := json.Marshal(line)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	s.importAgent(t, keyB, "undated", append(append(lines[0], '\n'), append(undated, '\n')...)).must(t, http.StatusOK, nil)
	if got := s.listAll(t, keyB, "agent_id=undated&include_forgotten=true&include_weak=true", 10); len(got) != 1 || got[0].CreatedAt.Before(before) {
		t.Fatalf("a memory line without created_at imported as %+v, want one created now", got)
	}
}

// TestTransferRefusals: a bad line anywhere refuses the whole import and
// stores nothing; another user's agent is not found; quotas hold; the
// body must be JSON Lines within the body limit.
func TestTransferRefusals(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{quotas: memory.Quotas{MemoriesPerAgent: 12}, maxBody: 64 << 10})
	_, keyA := s.user(t, "refuse-a@example.com")
	userB, keyB := s.user(t, "refuse-b@example.com")
	for i := range 10 {
		s.create(t, keyA, "claire", "note", map[string]any{"content": fmt.Sprintf("note %d about the release", i)})
	}
	_, export := s.exportAgent(t, keyA, "claire", "")

	t.Run("a bad last line stores nothing", func(t *testing.T) {
		bad := append(bytes.Clone(export), []byte(`{"event":{"id":"01936c9e-0000-7000-8000-000000000001","type":"MemoryCreated","time":"2020-01-01T00:00:00Z","payload":{"memory_id":"01936c9e-0000-7000-8000-000000000002","type":"note","content":{}}}}`+"\n")...)
		r := s.importAgent(t, keyB, "fresh", bad)
		wantError(t, r, http.StatusBadRequest, "invalid_request")
		if line, _ := r.details()["line"].(float64); int(line) != bytes.Count(bad, []byte("\n")) {
			t.Fatalf("error names line %v, want the last: %s", r.details()["line"], r.raw)
		}
		if n := s.streamLength(t, userB, "fresh"); n != 0 {
			t.Fatalf("a refused import appended %d events", n)
		}
	})
	t.Run("another user's agent is not found", func(t *testing.T) {
		status, body := s.exportAgent(t, keyB, "claire", "")
		if status != http.StatusNotFound || !bytes.Contains(body, []byte(`"not_found"`)) {
			t.Fatalf("export of another user's agent: %d %s", status, body)
		}
		wantError(t, s.request(t, "GET", "/v1/agents/nobody/export", keyA, nil), http.StatusNotFound, "not_found")
	})
	t.Run("quotas hold", func(t *testing.T) {
		for i := range 5 {
			s.create(t, keyB, "busy", "note", map[string]any{"content": fmt.Sprintf("already here %d", i)})
		}
		before := s.streamLength(t, userB, "busy")
		wantError(t, s.importAgent(t, keyB, "busy", export), http.StatusForbidden, memory.CodeQuotaMemoriesPerAgent)
		if n := s.streamLength(t, userB, "busy"); n != before {
			t.Fatalf("a refused import appended %d events", n-before)
		}
	})
	t.Run("the body is JSON Lines within the limit", func(t *testing.T) {
		r := s.request(t, "POST", "/v1/agents/claire/import", keyA, string(export))
		if r.status != http.StatusUnsupportedMediaType {
			t.Fatalf("JSON content type: %d %s", r.status, r.raw)
		}
		wantError(t, s.importAgent(t, keyA, "claire", []byte("{\n")), http.StatusBadRequest, "invalid_request")
		wantError(t, s.importAgent(t, keyA, "claire", []byte("\n")), http.StatusBadRequest, "invalid_request")
		big := bytes.Repeat(export, 1+(64<<10)/len(export))
		r = s.importAgent(t, keyA, "claire", big)
		if r.status != http.StatusRequestEntityTooLarge {
			t.Fatalf("a body over the limit: %d %s", r.status, r.raw)
		}
		wantError(t, s.request(t, "GET", "/v1/agents/claire/export?format=csv", keyA, nil), http.StatusBadRequest, "invalid_request")
	})
}

// TestTransferIsOneWrite: an import whose memory events the log refuses
// at the append (a memory id the log has claimed for good, which no read
// model shows since its memory was purged, so the checks before the
// append pass) stores nothing, its cognition events included: the memory
// and cognition streams are appended in one write: one transaction on
// SQLite, one v2 multi-stream append on KurrentDB 25.1 (the test server).
func TestTransferIsOneWrite(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		log  string
		opts stackOptions
	}{
		{"sqlite", stackOptions{}},
		{"kurrentdb 25.1", stackOptions{kurrentMaxAppend: kurrentdb.DefaultMaxAppendSize}},
	} {
		t.Run(c.log, func(t *testing.T) { transferIsOneWrite(t, c.opts) })
	}
}

func transferIsOneWrite(t *testing.T, opts stackOptions) {
	s := newStack(t, opts)
	user, key := s.user(t, "one-write@example.com")
	buildRichAgent(t, s, key, "claire")
	_, export := s.exportAgent(t, key, "claire", "")

	// The file as another server would have written it: the same memory
	// ids, other event ids (so none of its events is found in this log).
	var purged string
	var lines [][]byte
	cognition := 0
	for _, raw := range bytes.Split(bytes.TrimSpace(export), []byte("\n")) {
		var l commands.ExportLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		if l.Event != nil {
			l.Event.ID = uuid.NewString()
			var p struct {
				MemoryID string            `json:"memory_id"`
				Promotes *memory.Promotion `json:"promotes"`
			}
			_ = json.Unmarshal(l.Event.Payload, &p)
			// A memory accepted from a suggestion takes its id from the
			// suggestion's, which is mapped: not that one.
			if l.Event.Type == (memory.MemoryCreated{}).EventType() && p.Promotes == nil && purged == "" {
				purged = p.MemoryID
			}
			if l.Event.Type == (processing.SuggestionCreated{}).EventType() || l.Event.Type == (processing.PassRecorded{}).EventType() {
				cognition++
			}
		}
		out, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, out)
	}
	if purged == "" || cognition == 0 {
		t.Fatalf("the export holds no memory of its own (%q) or no cognition events (%d)", purged, cognition)
	}
	s.request(t, "DELETE", "/v1/memories/"+purged+"?purge=true", key, nil).must(t, http.StatusOK, nil)

	r := s.importAgent(t, key, "copy", append(bytes.Join(lines, []byte("\n")), '\n'))
	wantError(t, r, http.StatusConflict, "memory_exists")
	for _, stream := range []string{memory.AgentStream(user, "copy"), processing.Stream(user, "copy")} {
		events, err := s.store.ReadStream(context.Background(), stream, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 0 {
			t.Fatalf("a refused import left %d events in %s", len(events), stream)
		}
	}
}

// TestTransferRestoresADeletedAgent exports an agent, deletes it, and
// imports the export into another agent of the same user: the ids of the
// deleted memories stay claimed in the log, so they are mapped, and the
// restored agent equals the exported one.
func TestTransferRestoresADeletedAgent(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, key := s.user(t, "restore@example.com")
	buildRichAgent(t, s, key, "claire")
	_, export := s.exportAgent(t, key, "claire", "")
	want := agentSnapshot(t, s, key, "claire")
	s.request(t, "DELETE", "/v1/agents/claire", key, nil).must(t, http.StatusOK, nil)
	var res importResult
	s.importAgent(t, key, "restored", export).must(t, http.StatusOK, &res)
	if got := agentSnapshot(t, s, key, "restored"); got != want {
		t.Fatalf("the restored agent differs:\n--- exported\n%s\n--- restored\n%s", want, got)
	}
	var again importResult
	s.importAgent(t, key, "restored", export).must(t, http.StatusOK, &again)
	if again.Appended != 0 {
		t.Fatalf("a repeated restore appended %d", again.Appended)
	}
}

// TestTransferRestoresIntoTheDeletedAgentsID: an export restored into the
// agent id it was taken from, after that agent was deleted, brings it back
// whole (reads, the three search modes, provenance, suggestions, audit:
// agentSnapshot), although the log holds every event id of the file in
// the agent's own streams: those belong to the deleted agent, and
// duplicates are judged among the live agent's events only. A repeat, or
// a second restore after a second delete, works the same.
func TestTransferRestoresIntoTheDeletedAgentsID(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, key := s.user(t, "restore-same@example.com")
	buildRichAgent(t, s, key, "claire")
	_, export := s.exportAgent(t, key, "claire", "")
	want := agentSnapshot(t, s, key, "claire")
	for round := 1; round <= 2; round++ {
		s.request(t, "DELETE", "/v1/agents/claire", key, nil).must(t, http.StatusOK, nil)
		var res importResult
		s.importAgent(t, key, "claire", export).must(t, http.StatusOK, &res)
		if res.Appended == 0 || res.Duplicates != 0 {
			t.Fatalf("round %d: restore %+v, want every event appended, none a duplicate", round, res)
		}
		if got := agentSnapshot(t, s, key, "claire"); got != want {
			t.Fatalf("round %d: the restored agent differs:\n--- exported\n%s\n--- restored\n%s", round, want, got)
		}
		var again importResult
		s.importAgent(t, key, "claire", export).must(t, http.StatusOK, &again)
		if again.Appended != 0 {
			t.Fatalf("round %d: a repeated restore appended %d", round, again.Appended)
		}
		var audit struct {
			Entries []struct {
				Operation string `json:"operation"`
			} `json:"entries"`
		}
		s.request(t, "GET", "/v1/agents/claire/audit?limit=1000", key, nil).must(t, http.StatusOK, &audit)
		imports := 0
		for _, e := range audit.Entries {
			if e.Operation == "import" {
				imports++
			}
		}
		if imports != 1 {
			t.Fatalf("round %d: the audit shows %d imports, want the restore's one", round, imports)
		}
	}
}
