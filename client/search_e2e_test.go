package client_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

func TestSearchModes(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	texts := []string{
		"the deploy-v2.4.7-hotfix was rolled back after the outage",
		"we planted tomatoes and basil in the garden",
		"the cat sleeps on the warm windowsill all afternoon",
		"quarterly budget review moved to thursday",
	}
	items := make([]client.BatchMemory, len(texts))
	for i, s := range texts {
		at := time.Date(2024, 1, 1+i, 0, 0, 0, 0, time.UTC)
		items[i] = client.BatchMemory{Type: "raw_entries", Content: client.RawEntryContent{Content: s}, CreatedAt: &at, Tags: []string{"t"}}
	}
	created, err := f.c.CreateMemories(ctx, client.BatchRequest{AgentID: "claire", Memories: items})
	noErr(t, err)

	for _, mode := range []string{client.ModeHybrid, client.ModeVector, client.ModeKeyword} {
		res, err := f.c.Search(ctx, client.SearchRequest{AgentID: "claire", Query: "deploy-v2.4.7-hotfix rolled back", Mode: mode, Limit: 3, Explain: true})
		noErr(t, err)
		if len(res.Results) == 0 || res.Total != len(res.Results) || len(res.Results) > 3 || res.QueryTimeMS < 0 {
			t.Fatalf("%s: %+v", mode, res)
		}
		top := res.Results[0]
		if top.ID != created[0].ID || top.Type != "raw_entry" || top.Score <= 0 || top.Score > 1 || top.CreatedAt.IsZero() {
			t.Fatalf("%s: top hit %+v, want %s", mode, top, created[0].ID)
		}
		if top.Explain == nil {
			t.Fatalf("%s: explain missing", mode)
		}
	}

	// Filters: a time window that excludes the matching memory.
	after := time.Date(2024, 1, 2, 12, 0, 0, 0, time.UTC)
	res, err := f.c.Search(ctx, client.SearchRequest{AgentID: "claire", Query: "deploy hotfix", Mode: client.ModeKeyword, CreatedAfter: &after})
	noErr(t, err)
	for _, r := range res.Results {
		if r.ID == created[0].ID {
			t.Fatal("created_after did not exclude an older memory")
		}
	}

	// A bad request is a 400 naming the field.
	_, err = f.c.Search(ctx, client.SearchRequest{AgentID: "claire", Query: "x", Mode: "fuzzy"})
	var e *client.Error
	if !client.IsStatus(err, http.StatusBadRequest) || !asError(err, &e) || e.Code == "" {
		t.Fatalf("bad mode: %v", err)
	}
	// Another user's agent of the same name is theirs, and empty.
	other := registerAnother(t, f, "other@example.com")
	res, err = other.Search(ctx, client.SearchRequest{AgentID: "claire", Query: "deploy"})
	if err == nil && len(res.Results) > 0 {
		t.Fatalf("other user sees %d results", len(res.Results))
	}
}

// registerAnother registers a second user on the fixture's server.
func registerAnother(t *testing.T, f fixture, email string) *client.Client {
	t.Helper()
	return client.New(f.srv.APIURL(), testserver.Register(t, f.srv.APIURL(), f.srv.DataDir, email))
}
