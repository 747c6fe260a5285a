package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

// loginWithKey logs h in to srv with an existing key, as a second machine
// of the same account would.
func loginWithKey(t *testing.T, h *cliHome, srv *testserver.Server, key string) {
	t.Helper()
	h.ok("config", "set", "cloud.base_url", srv.APIURL())
	if r := h.run(key+"\n", "auth", "login"); r.code != 0 {
		t.Fatalf("auth login: %s", r.stderr)
	}
}

// cloudMemories lists the cloud agent's memories through the API.
func cloudMemories(t *testing.T, api *client.Client, agent string) map[string]client.Memory {
	t.Helper()
	page, err := api.ListMemories(context.Background(), client.ListMemoriesOptions{AgentID: agent, Limit: 1000, IncludeForgotten: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]client.Memory{}
	for _, m := range page.Memories {
		out[m.ID] = m
	}
	return out
}

func TestCLISyncTwoMachinesConverge(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	laptop, desktop := newCLIHome(t), newCLIHome(t)

	// Offline on the laptop: three memories, one of them a raw entry.
	fact := laptop.object("belief", "--statement", "the staging database moved to eu-west")["id"].(string)
	shared := laptop.object("note", "--content", "release checklist v0")["id"].(string)
	raw := laptop.object("raw", "private scratch text")["id"].(string)
	key := loginCLI(t, laptop, srv, "sync@example.com")
	api := client.New(srv.APIURL(), key)

	push := laptop.object("sync", "push")
	assertShape(t, "sync push", push, "sent", "appended", "duplicates", "skipped", "raw_withheld", "pushed", "cloud_events", "events_per_second")
	if push["raw_withheld"] != 2.0 || push["duplicates"] != 0.0 {
		t.Fatalf("push = %v", push)
	}
	inCloud := cloudMemories(t, api, "default")
	if _, ok := inCloud[fact]; !ok || len(inCloud) != 2 {
		t.Fatalf("cloud after push has %v; want the belief and the note, not the raw entry", inCloud)
	}
	if _, ok := inCloud[raw]; ok {
		t.Fatal("a raw entry was pushed with sync.raw off")
	}
	found := laptop.object("search", "staging database", "--cloud")
	if r := found["results"].([]any); len(r) == 0 || r[0].(map[string]any)["id"] != fact {
		t.Fatalf("cloud search after push = %v", found)
	}

	// An interrupted push (the acknowledgement lost) repeated: no duplicates.
	resetSyncCursor(t, laptop, "pushed")
	again := laptop.object("sync", "push")
	if again["appended"] != 0.0 || again["duplicates"].(float64) == 0 {
		t.Fatalf("repeated push = %v", again)
	}
	if n := len(cloudMemories(t, api, "default")); n != 2 {
		t.Fatalf("the cloud has %d memories after a repeated push, want 2", n)
	}

	// A second machine pulls them.
	loginWithKey(t, desktop, srv, key)
	pull := desktop.object("sync", "pull")
	assertShape(t, "sync pull", pull, "received", "appended", "duplicates", "skipped", "superseded", "pulled", "resolved", "events_per_second", "cloud_events")
	local := desktop.object("search", "staging database", "--local")
	if r := local["results"].([]any); len(r) == 0 || r[0].(map[string]any)["id"] != fact {
		t.Fatalf("desktop local search after pull = %v", local)
	}
	resetSyncCursor(t, desktop, "pulled")
	if repeat := desktop.object("sync", "pull"); repeat["appended"] != 0.0 {
		t.Fatalf("repeated pull appended %v", repeat["appended"])
	}
	if n := len(desktop.object("list", "--include-forgotten")["memories"].([]any)); n != 2 {
		t.Fatalf("desktop has %d memories after a repeated pull, want 2", n)
	}

	// Concurrent edits of one memory: the change pushed last is later in
	// the cloud's log and wins on both machines.
	desktop.ok("edit", shared, "--content", "release checklist: desktop")
	laptop.ok("edit", shared, "--content", "release checklist: laptop")
	desktop.ok("sync", "run")
	laptopRun := laptop.object("sync", "run")
	desktop.ok("sync", "run")
	for name, h := range map[string]*cliHome{"laptop": laptop, "desktop": desktop} {
		c := h.object("show", shared)["content"].(map[string]any)["content"]
		if c != "release checklist: laptop" {
			t.Errorf("%s shows %q, want the laptop's later change", name, c)
		}
	}
	if c := cloudMemories(t, api, "default")[shared]; !strings.Contains(string(c.Content), "release checklist: laptop") {
		t.Errorf("cloud shows %s", c.Content)
	}
	resolved := laptopRun["pull"].(map[string]any)["resolved"].([]any)
	if len(resolved) != 1 || resolved[0].(map[string]any)["memory_id"] != shared {
		t.Fatalf("laptop's pull resolved %v", resolved)
	}
	status := laptop.object("sync", "status")
	assertShape(t, "sync status", status, "stack", "base_url", "local_events", "pushed", "unpushed", "pulled", "cloud_events", "unpulled",
		"last_push", "last_pull", "sync_raw", "conflict_rule", "resolved")
	if status["unpushed"] != 0.0 || status["unpulled"] != 0.0 || len(status["resolved"].([]any)) != 1 {
		t.Fatalf("sync status = %v", status)
	}
	assertShape(t, "resolution", status["resolved"].([]any)[0], "memory_id", "winner", "loser", "outcome", "at")

	// A forget on one machine reaches the other.
	desktop.ok("forget", fact)
	desktop.ok("sync", "run")
	laptop.ok("sync", "run")
	if laptop.object("show", fact)["forgotten"] != true {
		t.Error("a forget did not travel")
	}

	// Pull refuses to run over unpushed changes; run pushes first.
	laptop.ok("note", "--content", "not pushed yet")
	if r := laptop.fails(1, "", "sync", "pull"); !strings.Contains(r.stderr, "not pushed yet") {
		t.Fatalf("pull over unpushed events: %q", r.stderr)
	}

	// With sync.raw on, raw entries travel.
	laptop.ok("config", "set", "sync.raw", "true")
	resetSyncCursor(t, laptop, "pushed")
	laptop.ok("sync", "push")
	if _, ok := cloudMemories(t, api, "default")[raw]; !ok {
		t.Fatal("sync.raw true did not push the raw entry")
	}

	// The cloud down: sync fails with exit code 3 and loses nothing.
	laptop.ok("note", "--content", "written while the cloud is down")
	srv.Kill()
	if r := laptop.fails(3, "", "sync", "push"); !strings.Contains(r.stderr, "cloud unreachable") {
		t.Fatalf("push with the cloud down: %q", r.stderr)
	}
	if st := laptop.object("status"); st["unpushed_events"].(float64) < 1 {
		t.Fatalf("the unpushed note was lost: %v", st)
	}
}

// resetSyncCursor sets a cursor of the stack's sync.json back to 0, as if
// the acknowledgement of a push or pull had been lost.
func resetSyncCursor(t *testing.T, h *cliHome, cursor string) {
	t.Helper()
	path := filepath.Join(h.dir, "stacks", "default", "sync.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(raw, &state); err != nil {
		t.Fatal(err)
	}
	state[cursor] = 0
	raw, _ = json.Marshal(state)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSyncEndpointsCheckInputAndIsolateUsers(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	ctx := context.Background()
	alice := client.New(srv.APIURL(), testserver.Register(t, srv.APIURL(), srv.DataDir, "alice@example.com"))
	bob := client.New(srv.APIURL(), testserver.Register(t, srv.APIURL(), srv.DataDir, "bob@example.com"))
	if _, err := alice.CreateMemory(ctx, client.CreateMemoryRequest{AgentID: "claire", Type: "notes", Content: client.NoteContent{Content: "alice's"}}); err != nil {
		t.Fatal(err)
	}
	page, err := alice.PullEvents(ctx, "claire", 0, 0)
	if err != nil || len(page.Events) == 0 || page.Next != page.Head {
		t.Fatalf("alice pulls her agent: %v %v", page, err)
	}
	if strings.Contains(string(page.Events[0].Payload), "user_id") {
		t.Fatalf("a pulled payload names its owner: %s", page.Events[0].Payload)
	}

	// Bob cannot read Alice's agent, nor take over her event or memory ids.
	if _, err := bob.PullEvents(ctx, "claire", 0, 0); !client.IsStatus(err, http.StatusNotFound) {
		t.Fatalf("bob pulls alice's agent: %v", err)
	}
	if _, err := bob.PushEvents(ctx, "claire", page.Events); !client.IsCode(err, "event_conflict") {
		t.Fatalf("bob pushes alice's events: %v, want 409 event_conflict", err)
	}
	var created struct {
		MemoryID string `json:"memory_id"`
	}
	var createdEvent client.SyncEvent
	for _, e := range page.Events {
		if e.Type == "MemoryCreated" {
			createdEvent = e
			_ = json.Unmarshal(e.Payload, &created)
		}
	}
	createdEvent.ID = "01a2094a-d0cb-7149-8b2a-a76389add9ff" // a fresh event id, alice's memory id
	if _, err := bob.PushEvents(ctx, "claire", []client.SyncEvent{createdEvent}); !client.IsCode(err, "memory_exists") {
		t.Fatalf("bob pushes a memory with alice's memory id: %v, want 409 memory_exists", err)
	}
	mine, _ := alice.ListMemories(ctx, client.ListMemoriesOptions{AgentID: "claire"})
	if len(mine.Memories) != 1 || mine.Memories[0].ID != created.MemoryID {
		t.Fatalf("alice's memories after bob's pushes: %v", mine.Memories)
	}
	if r, err := alice.Search(ctx, client.SearchRequest{AgentID: "claire", Query: "alice's"}); err != nil || len(r.Results) != 1 {
		t.Fatalf("alice's search after bob's pushes: %v %v", r, err)
	}
	if agents, err := bob.ListAgents(ctx, client.ListAgentsOptions{}); err != nil || len(agents.Agents) != 0 {
		t.Fatalf("rejected pushes created agents for bob: %+v %v", agents, err)
	}

	good := page.Events[0]
	tooMany := make([]client.SyncEvent, 1001)
	for i := range tooMany {
		tooMany[i] = good
	}
	cases := []struct {
		name   string
		push   func() error
		status int
	}{
		{"no credential", func() error {
			_, err := client.New(srv.APIURL(), "").PushEvents(ctx, "claire", page.Events)
			return err
		}, 401},
		{"too many events", func() error { _, err := alice.PushEvents(ctx, "claire", tooMany); return err }, 400},
		{"no events", func() error { _, err := alice.PushEvents(ctx, "claire", nil); return err }, 400},
		{"bad agent id", func() error { _, err := alice.PushEvents(ctx, "a/b", page.Events); return err }, 400},
		{"id not a UUID", func() error {
			_, err := alice.PushEvents(ctx, "claire", []client.SyncEvent{{ID: "x", Type: good.Type, Time: good.Time, Payload: good.Payload}})
			return err
		}, 400},
		{"unknown event type", func() error {
			_, err := alice.PushEvents(ctx, "claire", []client.SyncEvent{{ID: "01a2094a-d0cb-7149-8b2a-a76389add91e", Type: "UserRegistered", Payload: json.RawMessage(`{}`)}})
			return err
		}, 400},
		{"invalid content", func() error {
			_, err := alice.PushEvents(ctx, "claire", []client.SyncEvent{{ID: "01a2094a-d0cb-7149-8b2a-a76389add91f", Type: "MemoryCreated",
				Payload: json.RawMessage(`{"memory_id": "01a2094a-d0cb-7149-8b2a-a76389add920", "type": "belief", "content": {}}`)}})
			return err
		}, 400},
		{"vector length not its dimensions", func() error {
			_, err := alice.PushEvents(ctx, "claire", []client.SyncEvent{{ID: "01a2094a-d0cb-7149-8b2a-a76389add921", Type: "MemoryEmbedded",
				Payload: json.RawMessage(`{"memory_id": "01a2094a-d0cb-7149-8b2a-a76389add920", "model": "m", "dimensions": 3, "vector": [1, 2]}`)}})
			return err
		}, 400},
		{"bad pull limit", func() error { _, err := alice.PullEvents(ctx, "claire", 0, 5000); return err }, 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.push(); !client.IsStatus(err, tc.status) {
				t.Fatalf("got %v, want HTTP %d", err, tc.status)
			}
		})
	}
	if after, _ := alice.PullEvents(ctx, "claire", 0, 0); after.Head != page.Head {
		t.Fatalf("rejected pushes changed alice's log: head %d → %d", page.Head, after.Head)
	}
}

// TestCLISyncPushLeavesOutReferencesToWithheldRawEntries: the cloud
// refuses derived_from references to memories it does not hold, so with
// sync.raw off a note derived from a raw entry travels without that
// reference, and the push succeeds.
func TestCLISyncPushLeavesOutReferencesToWithheldRawEntries(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	laptop := newCLIHome(t)
	raw := laptop.object("raw", "private scratch text")["id"].(string)
	note := laptop.object("note", "--content", "what the scratch text taught", "--derived-from", "raw:"+raw)["id"].(string)
	key := loginCLI(t, laptop, srv, "withheld@example.com")

	laptop.object("sync", "push")
	inCloud := cloudMemories(t, client.New(srv.APIURL(), key), "default")
	if _, ok := inCloud[raw]; ok || len(inCloud) != 1 {
		t.Fatalf("cloud after push has %v; want the note only", inCloud)
	}
	if m, ok := inCloud[note]; !ok || len(m.DerivedFrom) != 0 {
		t.Fatalf("the note in the cloud = %+v; want it without the withheld reference", m)
	}
}
