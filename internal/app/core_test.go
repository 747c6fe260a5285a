package app_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
	"github.com/engram-memory/engram/infra/qdrant/qdranttest"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/projections/search"
)

func TestIndexesValidate(t *testing.T) {
	cases := []struct {
		name    string
		indexes app.Indexes
		wantErr string // "" for valid
	}{
		{"defaults are embedded", app.Indexes{}, ""},
		{"embedded named", app.Indexes{Keyword: "embedded", Vector: "embedded"}, ""},
		{"remote with urls", app.Indexes{Keyword: "meilisearch", MeilisearchURL: "http://m:7700", Vector: "qdrant", QdrantURL: "http://q:6334"}, ""},
		{"unknown keyword", app.Indexes{Keyword: "lucene"}, `--keyword-index must be embedded or meilisearch, not "lucene"`},
		{"unknown vector", app.Indexes{Vector: "faiss"}, `--vector-index must be embedded or qdrant, not "faiss"`},
		{"meilisearch without url", app.Indexes{Keyword: "meilisearch"}, "needs --meilisearch-url"},
		{"qdrant without url", app.Indexes{Vector: "qdrant"}, "needs --qdrant-url"},
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
	dir := sqlitetest.Dir(t)
	stApp, err := app.New(context.Background(), app.Settings{Config: app.Config{DataDir: dir}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := stApp.Core
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
	want := []string{"accounts", "memories", "keyword", "vectors", "jobs", "provenance", "audit", "suggestions", "webhooks"}
	if !slices.Equal(names, want) {
		t.Fatalf("projections %v, want %v", names, want)
	}
	if _, err := app.New(context.Background(), app.Settings{Config: app.Config{DataDir: dir}}, 0); err == nil {
		t.Fatal("a second writer of the data dir was not refused")
	}
}

// Hybrid fusion per backend pair, as docs/search.md#fusion-per-backend-pair
// documents: a Qdrant vector side keeps the fusion tuned on the embedded
// indexes (same cosine scores); a Meilisearch keyword side turns the
// absolute convex combination into per-query min-max with the same
// weights (its rankingScore is another scale), and leaves the scale-free
// fusions as they are.
func TestHybridFusionPerBackendPair(t *testing.T) {
	meili := meilitest.New(t, meilitest.Options{APIKey: meiliKey})
	qd := qdranttest.Start(t, qdrantKey)
	embedded := app.Indexes{}
	withMeili := app.Indexes{Keyword: app.Meilisearch, MeilisearchURL: meili.URL, MeilisearchAPIKey: meiliKey}
	withQdrant := app.Indexes{Vector: app.Qdrant, QdrantURL: "http://" + qd.Addr, QdrantAPIKey: qdrantKey}
	both := withMeili
	both.Vector, both.QdrantURL, both.QdrantAPIKey = withQdrant.Vector, withQdrant.QdrantURL, withQdrant.QdrantAPIKey
	hash := search.ModelFusion{Fusion: search.FusionConvex, VectorWeight: search.DefaultVectorWeight, KeywordWeight: search.DefaultKeywordWeight}
	glove := search.DefaultModelFusion()[search.GloVeSIFModel]
	relative := func(f search.ModelFusion) search.ModelFusion { f.Fusion = search.FusionMinMax; return f }
	for _, tc := range []struct {
		name             string
		indexes          app.Indexes
		opts             search.Options
		wantHash, wantGl search.ModelFusion
	}{
		{"embedded+embedded", embedded, search.Options{}, hash, glove},
		{"embedded+qdrant", withQdrant, search.Options{}, hash, glove},
		{"meilisearch+embedded", withMeili, search.Options{}, relative(hash), glove},
		{"meilisearch+qdrant", both, search.Options{}, relative(hash), glove},
		{"meilisearch+qdrant, rrf asked", both, search.Options{Fusion: search.FusionRRF},
			search.ModelFusion{Fusion: search.FusionRRF, VectorWeight: search.DefaultVectorWeight, KeywordWeight: search.DefaultKeywordWeight}, glove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stApp, err := app.New(context.Background(), app.Settings{Config: app.Config{DataDir: sqlitetest.Dir(t), Indexes: tc.indexes}}, 0)
			if err != nil {
				t.Fatal(err)
			}
			st := stApp.Core
			defer st.Close()
			svc, err := st.Search(search.ProviderEmbedder{}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := svc.Options().FusionFor("engram-hash-384"); got != tc.wantHash {
				t.Errorf("engram-hash-384 fusion = %+v, want %+v", got, tc.wantHash)
			}
			if got := svc.Options().FusionFor(search.GloVeSIFModel); got != tc.wantGl {
				t.Errorf("glove-sif-100 fusion = %+v, want %+v", got, tc.wantGl)
			}
		})
	}
}
