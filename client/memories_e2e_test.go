package client_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/client"
)

func TestMemoriesCreateGetBatchList(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	at := time.Date(2024, 5, 8, 13, 56, 0, 0, time.UTC)

	one, err := f.c.CreateMemory(ctx, client.CreateMemoryRequest{
		AgentID: "claire", Type: "notes", CreatedAt: &at, Tags: []string{"ops"},
		Content: client.NoteContent{Content: "deploy-v2.4.7-hotfix rolled back on friday", NoteType: "observation"},
	})
	noErr(t, err)
	if one.ID == "" || one.Type != "note" || !one.CreatedAt.Equal(at) || one.Embedding.Model == "" || one.Embedding.Dimensions <= 0 {
		t.Fatalf("created: %+v", one)
	}

	got, err := f.c.GetMemory(ctx, one.ID)
	noErr(t, err)
	var note client.NoteContent
	noErr(t, got.DecodeContent(&note))
	if got.ID != one.ID || got.AgentID != "claire" || note.Content != "deploy-v2.4.7-hotfix rolled back on friday" ||
		note.NoteType != "observation" || !slices.Equal(got.Tags, []string{"ops"}) || got.Forgotten {
		t.Fatalf("get: %+v / %+v", got, note)
	}

	tags := []string{"ops", "incident"}
	patched, err := f.c.UpdateMemory(ctx, one.ID, client.UpdateMemoryRequest{
		Content: client.NoteContent{Content: "deploy-v2.4.8 replaced the hotfix", NoteType: "observation"}, Tags: &tags,
	})
	noErr(t, err)
	noErr(t, patched.DecodeContent(&note))
	if note.Content != "deploy-v2.4.8 replaced the hotfix" || !slices.Equal(patched.Tags, tags) || patched.UpdatedAt.Before(patched.CreatedAt) {
		t.Fatalf("patch: %+v / %+v", patched, note)
	}

	items := make([]client.BatchMemory, 25)
	for i := range items {
		items[i] = client.BatchMemory{Type: "raw_entries", Content: client.RawEntryContent{Content: fmt.Sprintf("turn %d about gardening", i)}}
	}
	items[3] = client.BatchMemory{Type: "beliefs", Content: client.BeliefContent{Statement: "tomatoes need sun"}}
	batch, err := f.c.CreateMemories(ctx, client.BatchRequest{AgentID: "claire", Memories: items})
	noErr(t, err)
	if len(batch) != len(items) || batch[0].Type != "raw_entry" || batch[3].Type != "belief" {
		t.Fatalf("batch: %d items, %+v", len(batch), batch[:min(4, len(batch))])
	}
	for i, m := range batch {
		g, err := f.c.GetMemory(ctx, m.ID)
		noErr(t, err)
		var c client.RawEntryContent
		noErr(t, g.DecodeContent(&c))
		if i != 3 && c.Content != fmt.Sprintf("turn %d about gardening", i) {
			t.Fatalf("batch item %d out of order: %q", i, c.Content)
		}
	}

	// One invalid item fails the whole batch and names its index.
	_, err = f.c.CreateMemories(ctx, client.BatchRequest{AgentID: "claire", Memories: []client.BatchMemory{
		{Type: "notes", Content: client.NoteContent{Content: "fine"}},
		{Type: "notes", Content: map[string]any{}},
	}})
	if !client.IsStatus(err, http.StatusBadRequest) {
		t.Fatalf("invalid batch: %v", err)
	}

	// Paging walks every memory once.
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		page, err := f.c.ListMemories(ctx, client.ListMemoriesOptions{AgentID: "claire", Limit: 10, Cursor: cursor})
		noErr(t, err)
		for _, m := range page.Memories {
			if seen[m.ID] {
				t.Fatalf("memory %s listed twice", m.ID)
			}
			seen[m.ID] = true
		}
		if cursor = page.NextCursor; cursor == "" || pages > 10 {
			break
		}
	}
	if len(seen) != 26 {
		t.Fatalf("listed %d memories, want 26", len(seen))
	}

	agents, err := f.c.ListAgents(ctx, client.ListAgentsOptions{})
	noErr(t, err)
	if len(agents.Agents) != 1 || agents.Agents[0].AgentID != "claire" || agents.NextCursor != "" || agents.Agents[0].StoredMemories != 26 {
		t.Fatalf("agents: %+v", agents)
	}

	// If-Match: a change made meanwhile refuses an update or forget.
	current, err := f.c.GetMemory(ctx, one.ID)
	noErr(t, err)
	if current.Version != 2 || current.ETag() != `"2"` {
		t.Fatalf("version after one patch: %d", current.Version)
	}
	_, err = f.c.UpdateMemory(ctx, one.ID, client.UpdateMemoryRequest{Tags: &[]string{"stale"}, IfMatch: `"1"`})
	if !client.IsStatus(err, http.StatusPreconditionFailed) || !client.IsCode(err, "precondition_failed") {
		t.Fatalf("stale update: %v", err)
	}
	_, err = f.c.ForgetMemory(ctx, one.ID, client.ForgetOptions{IfMatch: `"1"`})
	if !client.IsStatus(err, http.StatusPreconditionFailed) {
		t.Fatalf("stale forget: %v", err)
	}
	updated, err := f.c.UpdateMemory(ctx, one.ID, client.UpdateMemoryRequest{Tags: &[]string{"ops"}, IfMatch: current.ETag()})
	noErr(t, err)
	if updated.Version != 3 {
		t.Fatalf("conditional update: version %d", updated.Version)
	}

	forgotten, err := f.c.ForgetMemory(ctx, one.ID, client.ForgetOptions{IfMatch: updated.ETag()})
	noErr(t, err)
	if !forgotten.Forgotten || forgotten.ID != one.ID {
		t.Fatalf("forget: %+v", forgotten)
	}
	purged, err := f.c.ForgetMemory(ctx, batch[0].ID, client.ForgetOptions{Purge: true})
	noErr(t, err)
	if !purged.Purged {
		t.Fatalf("purge: %+v", purged)
	}
	if _, err := f.c.GetMemory(ctx, batch[0].ID); !client.IsCode(err, "not_found") {
		t.Fatalf("get purged: %v", err)
	}

	noErr(t, f.c.DeleteAgent(ctx, "claire"))
	if _, err := f.c.GetMemory(ctx, batch[1].ID); !client.IsCode(err, "not_found") {
		t.Fatalf("get after agent delete: %v", err)
	}
}

func TestMemoriesOfOtherUsersAreNotFound(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	m, err := f.c.CreateMemory(ctx, client.CreateMemoryRequest{AgentID: "a", Type: "note", Content: client.NoteContent{Content: "mine"}})
	noErr(t, err)

	other := registerAnother(t, f, "other@example.com")
	if _, err := other.GetMemory(ctx, m.ID); !client.IsCode(err, "not_found") {
		t.Fatalf("other user's get: %v, want not_found", err)
	}
}

func TestAgentsPages(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	want := []string{"a", "b", "c", "d", "e"}
	for _, id := range slices.Backward(want) {
		_, err := f.c.CreateMemory(ctx, client.CreateMemoryRequest{AgentID: id, Type: "notes", Content: client.NoteContent{Content: "in " + id}})
		noErr(t, err)
	}
	var got []string
	var pages int
	for cursor := ""; ; pages++ {
		page, err := f.c.ListAgents(ctx, client.ListAgentsOptions{Limit: 2, Cursor: cursor})
		noErr(t, err)
		for _, a := range page.Agents {
			got = append(got, a.AgentID)
		}
		if cursor = page.NextCursor; cursor == "" || pages > 5 {
			break
		}
	}
	if !slices.Equal(got, want) || pages != 2 {
		t.Fatalf("agents %v in %d pages, want %v in 3", got, pages+1, want)
	}
	_, err := f.c.ListAgents(ctx, client.ListAgentsOptions{Cursor: "not a cursor"})
	if !client.IsCode(err, "invalid_request") {
		t.Fatalf("bad cursor: %v", err)
	}
}
