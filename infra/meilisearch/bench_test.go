package meilisearch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/meilisearch"
	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
)

// The benchmarks measure the adapter's own cost against meilitest over
// loopback HTTP (encoding, the n-query multi-search, task polling), not
// Meilisearch's: the test server's search is a linear scan.

func benchIndex(b *testing.B, docs int) *meilisearch.Index {
	b.Helper()
	srv := meilitest.New(b, meilitest.Options{TaskDelay: time.Microsecond})
	ix, err := meilisearch.New(context.Background(), meilisearch.Config{URL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	words := []string{"harbour", "crane", "report", "tram", "museum", "violin", "glacier", "orchard"}
	batch := make([]domain.KeywordDocument, docs)
	for i := range batch {
		batch[i] = domain.KeywordDocument{MemoryID: fmt.Sprintf("m%05d", i), UserID: "u", AgentID: "a", Type: "note",
			CreatedAt: time.Unix(int64(i), 0), Text: words[i%len(words)] + " " + words[(i/len(words))%len(words)]}
	}
	if err := ix.UpsertDocuments(context.Background(), batch...); err != nil {
		b.Fatal(err)
	}
	return ix
}

func BenchmarkSearchKeyword3Words1000Docs(b *testing.B) {
	ix := benchIndex(b, 1000)
	q := domain.KeywordQuery{Scope: domain.IndexScope{UserID: "u", AgentID: "a"}, Text: "harbour crane museum", Limit: 20}
	for b.Loop() {
		if _, err := ix.SearchKeyword(context.Background(), q); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpsertDocumentAndWait(b *testing.B) {
	ix := benchIndex(b, 0)
	d := domain.KeywordDocument{MemoryID: "m1", UserID: "u", AgentID: "a", Type: "note", CreatedAt: time.Unix(1, 0), Text: "harbour crane"}
	for b.Loop() {
		if err := ix.UpsertDocuments(context.Background(), d); err != nil {
			b.Fatal(err)
		}
	}
}
