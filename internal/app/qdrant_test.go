package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/qdrant/qdranttest"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

const qdrantKey = "stack-test-key"

// A stack opened with --vector-index qdrant writes the vectors of new
// memories to Qdrant and searches them there; its Backends follow the
// server's health, and a search while Qdrant is down fails with
// vector_index_unavailable (vector) or degrades to keyword (hybrid).
func TestQdrantStackServesVectorSearch(t *testing.T) {
	srv := qdranttest.Start(t, qdrantKey)
	s := searchtest.New(t, searchtest.Options{Indexes: app.Indexes{
		Vector: app.Qdrant, QdrantURL: "http://" + srv.Addr, QdrantAPIKey: qdrantKey,
	}})
	if s.EmbeddedVectors != nil {
		t.Fatal("a Qdrant stack exposes an embedded vector index")
	}
	ctx := context.Background()
	if b := s.Backends(ctx); b["keyword_index"] != nil || b["vector_index"] != nil {
		t.Fatalf("backends = %v, want both ready", b)
	}

	want := s.Note(t, "u-ann", "claire", "the quarterly budget review moved to thursday", nil, time.Time{})
	s.Note(t, "u-ann", "claire", "feed the cat before leaving", nil, time.Time{})
	s.Note(t, "u-bob", "claire", "the quarterly budget review of bob", nil, time.Time{})
	waitFor(t, func() bool {
		resp, err := s.Search.Search(ctx, search.Request{UserID: "u-ann", AgentID: "claire", Query: "budget", Mode: search.ModeKeyword, Limit: 10})
		return err == nil && len(resp.Results) == 1 && s.VectorCount(t, "u-ann", "claire") == 2
	})
	if len(srv.Collections()) != 1 {
		t.Fatalf("qdrant collections = %v, want the agent's one space", srv.Collections())
	}

	for _, mode := range []search.Mode{search.ModeVector, search.ModeHybrid} {
		resp, err := s.Search.Search(ctx, search.Request{UserID: "u-ann", AgentID: "claire", Query: "quarterly budget review", Mode: mode, Limit: 10})
		if err != nil {
			t.Fatalf("%s search: %v", mode, err)
		}
		if len(resp.Results) != 2 || resp.Results[0].Memory.ID != want || resp.Degraded != "" {
			t.Fatalf("%s search = %+v, want u-ann's 2 memories, %s first, not degraded", mode, resp, want)
		}
	}
	forgetAndRecover(t, s, "u-ann", "claire", want, "quarterly budget review", search.ModeVector)

	srv.Stop()
	b := s.Backends(ctx)
	if b["keyword_index"] != nil || !errors.Is(b["vector_index"], domain.ErrIndexUnavailable) {
		t.Fatalf("backends with qdrant stopped = %v, want vector_index unavailable only", b)
	}
	_, err := s.Search.Search(ctx, search.Request{UserID: "u-ann", AgentID: "claire", Query: "budget", Mode: search.ModeVector, Limit: 10})
	if de, ok := domain.AsError(err); !ok || de.Code != "vector_index_unavailable" {
		t.Fatalf("vector search with qdrant stopped: %v, want vector_index_unavailable", err)
	}
	resp, err := s.Search.Search(ctx, search.Request{UserID: "u-ann", AgentID: "claire", Query: "budget", Mode: search.ModeHybrid, Limit: 10})
	if err != nil || resp.Degraded != search.DegradedVectorUnavailable || len(resp.Results) != 1 || resp.Results[0].Memory.ID != want {
		t.Fatalf("hybrid search with qdrant stopped = %+v, %v; want the keyword hit, degraded %s", resp, err, search.DegradedVectorUnavailable)
	}
}

// A bad Qdrant URL is refused when the stack opens, naming the flag.
func TestQdrantStackRefusesBadURL(t *testing.T) {
	_, err := app.New(context.Background(), app.Settings{Config: app.Config{DataDir: t.TempDir(), Indexes: app.Indexes{Vector: app.Qdrant, QdrantURL: "ftp://q:6334"}}}, 0)
	if err == nil || !strings.Contains(err.Error(), "--vector-index qdrant") || !strings.Contains(err.Error(), "scheme") {
		t.Fatalf("open with ftp:// qdrant url: %v, want a scheme error naming --vector-index qdrant", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// forgetAndRecover forgets id and checks, in mode, that the remote index
// kept it flagged: hidden by default, found with include_forgotten, and
// found again (weak, so with include_weak) once recovered, and by default
// once verified.
func forgetAndRecover(t *testing.T, s *searchtest.Env, userID, agentID, id, query string, mode search.Mode) {
	t.Helper()
	ctx := context.Background()
	found := func(req search.Request) bool {
		req.UserID, req.AgentID, req.Query, req.Mode, req.Limit = userID, agentID, query, mode, 10
		resp, err := s.Search.Search(ctx, req)
		if err != nil {
			t.Fatalf("%s search %+v: %v", mode, req, err)
		}
		for _, r := range resp.Results {
			if r.Memory.ID == id {
				return true
			}
		}
		return false
	}
	if _, err := s.Memories.Forget(ctx, searchtest.Meta(userID), id, nil); err != nil {
		t.Fatal(err)
	}
	if found(search.Request{}) || !found(search.Request{IncludeForgotten: true}) {
		t.Fatalf("%s: forgotten %s: default finds it %v, include_forgotten finds it %v; want false, true",
			mode, id, found(search.Request{}), found(search.Request{IncludeForgotten: true}))
	}
	if _, err := s.Memories.Recover(ctx, searchtest.Meta(userID), id, nil); err != nil {
		t.Fatal(err)
	}
	if !found(search.Request{IncludeWeak: true}) {
		t.Fatalf("%s: recovered %s not found with include_weak", mode, id)
	}
	// Verifying it three times (0.25 + 3·0.1) makes it strong enough for
	// default searches again.
	for range 3 {
		if _, err := s.Memories.Verify(ctx, searchtest.Meta(userID), id, commands.StrengthChange{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if !found(search.Request{}) {
		t.Fatalf("%s: recovered and verified %s not found", mode, id)
	}
}
