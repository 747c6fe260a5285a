package textindex_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/keywordindextest"
	"github.com/engram-memory/engram/infra/textindex"
)

func TestPortConformance(t *testing.T) {
	keywordindextest.Run(t, keywordindextest.Target{
		Open: func(*testing.T) domain.KeywordIndex { return textindex.NewPort(textindex.Options{}, 0) },
	})
}

// The port's score is x/(x+K) of the BM25 relevance x: a document whose
// BM25 is K scores 0.5, and scores stay in (0, 1).
func TestPortScoreSaturation(t *testing.T) {
	ctx := context.Background()
	scope := domain.IndexScope{UserID: "u", AgentID: "a"}
	doc := domain.KeywordDocument{MemoryID: "m1", UserID: "u", AgentID: "a", Type: "note", Text: "quartz", CreatedAt: time.Unix(0, 0)}
	raw := textindex.New(textindex.Options{})
	raw.Upsert("c", textindex.Doc{ID: "m1", Text: "quartz", Type: "note"})
	rawHits, err := raw.Search(ctx, "c", "quartz", 1, textindex.Filter{})
	if err != nil || len(rawHits) != 1 {
		t.Fatalf("raw search: %v %v", rawHits, err)
	}
	bm25 := rawHits[0].Score
	for _, k := range []float64{bm25, 2 * bm25} {
		p := textindex.NewPort(textindex.Options{}, k)
		if err := p.UpsertDocuments(ctx, doc); err != nil {
			t.Fatal(err)
		}
		hits, err := p.SearchKeyword(ctx, domain.KeywordQuery{Scope: scope, Text: "quartz", Limit: 1})
		if err != nil || len(hits) != 1 {
			t.Fatalf("K=%v: %v %v", k, hits, err)
		}
		if want := bm25 / (bm25 + k); math.Abs(hits[0].Score-want) > 1e-12 {
			t.Errorf("K=%v: score %v, want %v", k, hits[0].Score, want)
		}
	}
}
