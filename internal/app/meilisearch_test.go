package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/meilisearch"
	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

const meiliKey = "stack-test-meili-key"

// A stack opened with --keyword-index meilisearch writes new memories to
// Meilisearch and searches them there; its Backends follow the server's
// health, and a search while Meilisearch is down fails with
// keyword_index_unavailable (keyword) or degrades to vector (hybrid).
func TestMeilisearchStackServesKeywordSearch(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{APIKey: meiliKey})
	s := searchtest.New(t, searchtest.Options{Indexes: app.Indexes{
		Keyword: app.Meilisearch, MeilisearchURL: srv.URL, MeilisearchAPIKey: meiliKey,
	}})
	ctx := context.Background()
	if b := s.Backends(ctx); b["keyword_index"] != nil || b["vector_index"] != nil {
		t.Fatalf("backends = %v, want both ready", b)
	}

	want := s.Note(t, "u-ann", "claire", "the quarterly budget review moved to thursday", nil, time.Time{})
	cat := s.Note(t, "u-ann", "claire", "feed the cat before leaving", nil, time.Time{})
	other := s.Note(t, "u-bob", "claire", "the quarterly budget review of bob", nil, time.Time{})
	waitFor(t, func() bool {
		for _, id := range []string{want, cat, other} {
			if _, ok := srv.Document(meilisearch.DefaultIndexName, id); !ok {
				return false
			}
		}
		return s.VectorCount(t, "u-ann", "claire") == 2
	})

	for _, mode := range []search.Mode{search.ModeKeyword, search.ModeHybrid} {
		resp, err := s.Search.Search(ctx, search.Request{UserID: "u-ann", AgentID: "claire", Query: "quarterly budget", Mode: mode, Limit: 10})
		if err != nil {
			t.Fatalf("%s search: %v", mode, err)
		}
		if len(resp.Results) == 0 || resp.Results[0].Memory.ID != want || resp.Degraded != "" {
			t.Fatalf("%s search = %+v, want u-ann's %s first, not degraded", mode, resp, want)
		}
		for _, r := range resp.Results {
			if r.Memory.ID == other {
				t.Fatalf("%s search of u-ann found u-bob's memory", mode)
			}
		}
	}
	forgetAndRecover(t, s, "u-ann", "claire", want, "quarterly budget", search.ModeKeyword)

	srv.Close()
	b := s.Backends(ctx)
	if b["vector_index"] != nil || !errors.Is(b["keyword_index"], domain.ErrIndexUnavailable) {
		t.Fatalf("backends with meilisearch stopped = %v, want keyword_index unavailable only", b)
	}
	_, err := s.Search.Search(ctx, search.Request{UserID: "u-ann", AgentID: "claire", Query: "budget", Mode: search.ModeKeyword, Limit: 10})
	if de, ok := domain.AsError(err); !ok || de.Code != "keyword_index_unavailable" {
		t.Fatalf("keyword search with meilisearch stopped: %v, want keyword_index_unavailable", err)
	}
	resp, err := s.Search.Search(ctx, search.Request{UserID: "u-ann", AgentID: "claire", Query: "quarterly budget review", Mode: search.ModeHybrid, Limit: 10})
	if err != nil || resp.Degraded != search.DegradedKeywordUnavailable || len(resp.Results) == 0 || resp.Results[0].Memory.ID != want {
		t.Fatalf("hybrid search with meilisearch stopped = %+v, %v; want the vector hits, degraded %s", resp, err, search.DegradedKeywordUnavailable)
	}
}

// A Meilisearch that refuses the key, and a bad URL, are refused when the
// stack opens, naming the flag.
func TestMeilisearchStackRefusesBadConfig(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{APIKey: meiliKey})
	for _, ix := range []app.Indexes{
		{Keyword: app.Meilisearch, MeilisearchURL: srv.URL, MeilisearchAPIKey: "wrong"},
		{Keyword: app.Meilisearch, MeilisearchURL: "ftp://m:7700"},
	} {
		a, err := app.New(context.Background(), app.Settings{Config: app.Config{DataDir: t.TempDir(), Indexes: ix}}, 0)
		if err == nil {
			a.Close(context.Background())
		}
		if err == nil || !strings.Contains(err.Error(), "--keyword-index meilisearch") {
			t.Fatalf("open with %+v: %v, want an error naming --keyword-index meilisearch", ix, err)
		}
	}
}
