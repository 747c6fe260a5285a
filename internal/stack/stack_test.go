package stack_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/internal/stack"
)

func TestIndexesValidate(t *testing.T) {
	cases := []struct {
		name    string
		indexes stack.Indexes
		wantErr string // "" for valid
	}{
		{"defaults are embedded", stack.Indexes{}, ""},
		{"embedded named", stack.Indexes{Keyword: "embedded", Vector: "embedded"}, ""},
		{"remote with urls", stack.Indexes{Keyword: "meilisearch", MeilisearchURL: "http://m:7700", Vector: "qdrant", QdrantURL: "http://q:6334"}, ""},
		{"unknown keyword", stack.Indexes{Keyword: "lucene"}, `--keyword-index must be embedded or meilisearch, not "lucene"`},
		{"unknown vector", stack.Indexes{Vector: "faiss"}, `--vector-index must be embedded or qdrant, not "faiss"`},
		{"meilisearch without url", stack.Indexes{Keyword: "meilisearch"}, "needs --meilisearch-url"},
		{"qdrant without url", stack.Indexes{Vector: "qdrant"}, "needs --qdrant-url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.indexes.Validate()
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("Validate() = %v, want %q", err, c.wantErr)
			}
		})
	}
}

func TestEmbeddedStackReportsItsBackends(t *testing.T) {
	dir := t.TempDir()
	st, err := stack.Open(context.Background(), stack.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	backends := st.Backends(context.Background())
	if len(backends) != 2 || backends["keyword_index"] != nil || backends["vector_index"] != nil {
		t.Fatalf("backends = %v, want keyword_index and vector_index ready", backends)
	}
	if st.EmbeddedVectors == nil {
		t.Fatal("the embedded stack does not expose its vector index")
	}
	var names []string
	for _, p := range st.Projections() {
		names = append(names, p.Name())
	}
	want := []string{"accounts", "memories", "keyword", "vectors", "jobs", "provenance", "audit", "suggestions"}
	if !slices.Equal(names, want) {
		t.Fatalf("projections %v, want %v", names, want)
	}
	if _, err := stack.Open(context.Background(), stack.Config{DataDir: dir}); err == nil {
		t.Fatal("a second writer of the data dir was not refused")
	}
}
