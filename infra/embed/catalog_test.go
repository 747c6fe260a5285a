package embed

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/embed/local"
)

// stubProvider serves fixed models and records what it was asked.
type stubProvider struct {
	name   string
	models []domain.EmbeddingModel
	asked  []domain.EmbedRequest
}

func (s *stubProvider) Name() string                    { return s.name }
func (s *stubProvider) Models() []domain.EmbeddingModel { return s.models }
func (s *stubProvider) Embed(_ context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	s.asked = append(s.asked, req)
	vecs := make([][]float32, len(req.Texts))
	for i := range vecs {
		vecs[i] = []float32{1}
	}
	return domain.EmbedResult{Model: req.Model, Dimensions: 1, Vectors: vecs}, nil
}

func newLocal(t *testing.T) *local.Provider {
	t.Helper()
	p, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func openAIStub() *stubProvider {
	return &stubProvider{name: "openai", models: []domain.EmbeddingModel{
		{Name: "text-embedding-3-small", Provider: "openai", Dimensions: 1536, FlexibleDimensions: true},
		{Name: "nomic-embed-text", Provider: "openai", Dimensions: 768},
	}}
}

func TestCatalogRoutesAndResolvesDefault(t *testing.T) {
	oa := openAIStub()
	c, err := NewCatalog(CatalogOptions{Providers: []domain.EmbeddingProvider{newLocal(t), oa}})
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultModel().Name != "text-embedding-3-small" {
		t.Errorf("default %q, want text-embedding-3-small when served", c.DefaultModel().Name)
	}
	tests := []struct {
		model, wantModel, wantProvider string
	}{
		{"", "text-embedding-3-small", "openai"},
		{"default", "text-embedding-3-small", "openai"},
		{"nomic-embed-text", "nomic-embed-text", "openai"},
		{"engram-hash-384", "engram-hash-384", "local"},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			before := len(oa.asked)
			res, err := c.Embed(context.Background(), domain.EmbedRequest{Model: tt.model, Texts: []string{"hello"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Model != tt.wantModel {
				t.Errorf("result model %q, want %q", res.Model, tt.wantModel)
			}
			if sentToOpenAI := len(oa.asked) > before; sentToOpenAI != (tt.wantProvider == "openai") {
				t.Errorf("routed wrongly: openai asked %v", sentToOpenAI)
			}
			if m, ok := c.Model(tt.model); !ok || m.Name != tt.wantModel {
				t.Errorf("Model(%q) = %v, %v", tt.model, m.Name, ok)
			}
			if m, err := c.Resolve(tt.model); err != nil || m.Name != tt.wantModel {
				t.Errorf("Resolve(%q) = %v, %v", tt.model, m.Name, err)
			}
		})
	}
}

func TestCatalogDefaultWithoutOpenAI(t *testing.T) {
	c, err := NewCatalog(CatalogOptions{Providers: []domain.EmbeddingProvider{newLocal(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultModel().Name != local.DefaultModelName {
		t.Errorf("default %q", c.DefaultModel().Name)
	}
	if _, err := NewCatalog(CatalogOptions{Providers: []domain.EmbeddingProvider{newLocal(t)}, DefaultModel: "text-embedding-3-large"}); err == nil ||
		!strings.Contains(err.Error(), "not served") {
		t.Errorf("unserved default accepted: %v", err)
	}
	if _, err := NewCatalog(CatalogOptions{}); err == nil {
		t.Error("catalog without providers accepted")
	}
}

func TestCatalogUnknownModel(t *testing.T) {
	c, err := NewCatalog(CatalogOptions{Providers: []domain.EmbeddingProvider{newLocal(t)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"text-embedding-3-small", "nope"} {
		_, err := c.Embed(context.Background(), domain.EmbedRequest{Model: name, Texts: []string{"x"}})
		e, ok := domain.AsError(err)
		if !ok || e.Kind != domain.KindInvalid || e.PublicCode() != "model_not_available" || e.Details["field"] != "model" {
			t.Fatalf("%s: err = %v", name, err)
		}
		if got := e.Details["available_models"].([]string); !slices.Equal(got, []string{"engram-hash-384", "glove-sif-100"}) {
			t.Errorf("available_models %v", got)
		}
	}
	if _, ok := c.Model("nope"); ok {
		t.Error("Model(nope) found")
	}
	if _, err := c.Resolve("nope"); domain.ErrorKind(err) != domain.KindInvalid {
		t.Errorf("Resolve(nope) = %v", err)
	}
}

func TestCatalogLimits(t *testing.T) {
	c, err := NewCatalog(CatalogOptions{Providers: []domain.EmbeddingProvider{newLocal(t)}})
	if err != nil {
		t.Fatal(err)
	}
	many := func(n int) []string { return slices.Repeat([]string{"x"}, n) }
	tests := []struct {
		name      string
		texts     []string
		wantCode  string // "" = accepted
		wantIndex any
	}{
		{"empty batch", nil, "invalid_request", nil},
		{"full batch", many(2048), "", nil},
		{"batch over limit", many(2049), "batch_too_large", nil},
		{"text at limit", []string{strings.Repeat("a", 32000)}, "", nil},
		{"multi-byte text at limit", []string{strings.Repeat("é", 32000)}, "", nil},
		{"text over limit", []string{"ok", strings.Repeat("é", 32001)}, "text_too_long", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Embed(context.Background(), domain.EmbedRequest{Texts: tt.texts})
			if tt.wantCode == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			e, ok := domain.AsError(err)
			if !ok || e.Kind != domain.KindInvalid || e.PublicCode() != tt.wantCode || e.Details["field"] != "texts" {
				t.Fatalf("err = %v", err)
			}
			if e.Details["index"] != tt.wantIndex {
				t.Errorf("index %v, want %v", e.Details["index"], tt.wantIndex)
			}
			if tt.wantCode != "invalid_request" && e.Details["limit"] == nil {
				t.Errorf("error does not name the limit: %v", e.Details)
			}
		})
	}
	small, err := NewCatalog(CatalogOptions{Providers: []domain.EmbeddingProvider{newLocal(t)}, Limits: Limits{MaxTextChars: 5, MaxBatchTexts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if small.Limits() != (Limits{MaxTextChars: 5, MaxBatchTexts: 2}) || small.CheckTexts([]string{"123456"}) == nil || small.CheckTexts(many(3)) == nil {
		t.Error("configured limits not applied")
	}
	if c.Limits() != (Limits{MaxTextChars: DefaultMaxTextChars, MaxBatchTexts: DefaultMaxBatchTexts}) {
		t.Errorf("default limits %+v", c.Limits())
	}
}

func TestCatalogue(t *testing.T) {
	type row struct {
		name                 string
		quality, speed, cost string
		available, isDefault bool
	}
	summarise := func(entries []CatalogEntry) []row {
		var out []row
		for _, e := range entries {
			out = append(out, row{e.Name, e.Quality, e.Speed, e.Cost, e.Available, e.Default})
		}
		return out
	}
	localOnly, err := NewCatalog(CatalogOptions{Providers: []domain.EmbeddingProvider{newLocal(t)}})
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"text-embedding-3-small", "Good", "Fast", "Low", false, false},
		{"text-embedding-3-large", "Best", "Medium", "Medium", false, false},
		{"text-embedding-ada-002", "Good", "Fast", "Low", false, false},
		{"glove-sif-100", "Fair", "Very fast", "Free", true, true},
		{"engram-hash-384", "Basic", "Fastest", "Free", true, false},
	}
	if got := summarise(localOnly.Catalogue()); !slices.Equal(got, want) {
		t.Errorf("local-only catalogue\n got %v\nwant %v", got, want)
	}
	both, err := NewCatalog(CatalogOptions{Providers: []domain.EmbeddingProvider{newLocal(t), openAIStub()}})
	if err != nil {
		t.Fatal(err)
	}
	want = []row{
		{"text-embedding-3-small", "Good", "Fast", "Low", true, true}, // ratings from the catalogue of docs/decisions.md
		{"text-embedding-3-large", "Best", "Medium", "Medium", false, false},
		{"text-embedding-ada-002", "Good", "Fast", "Low", false, false},
		{"glove-sif-100", "Fair", "Very fast", "Free", true, false},
		{"engram-hash-384", "Basic", "Fastest", "Free", true, false},
		{"nomic-embed-text", "", "", "", true, false},
	}
	if got := summarise(both.Catalogue()); !slices.Equal(got, want) {
		t.Errorf("catalogue\n got %v\nwant %v", got, want)
	}
	if both.Catalogue()[0].Dimensions != 1536 || !both.Catalogue()[0].FlexibleDimensions {
		t.Errorf("3-small entry %+v", both.Catalogue()[0])
	}
	if n := len(both.Models()); n != 4 || both.Name() != "catalog" {
		t.Errorf("%d served models", n)
	}
}

func TestCatalogFirstProviderWinsDuplicateNames(t *testing.T) {
	first := &stubProvider{name: "first", models: []domain.EmbeddingModel{{Name: "m", Dimensions: 1}}}
	second := &stubProvider{name: "second", models: []domain.EmbeddingModel{{Name: "m", Dimensions: 1}}}
	c, err := NewCatalog(CatalogOptions{Providers: []domain.EmbeddingProvider{first, second}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(context.Background(), domain.EmbedRequest{Model: "m", Texts: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if len(first.asked) != 1 || len(second.asked) != 0 {
		t.Errorf("first asked %d, second %d", len(first.asked), len(second.asked))
	}
}
