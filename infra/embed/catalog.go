// Package embed routes embedding requests to the provider that serves the
// requested model, enforces the request limits (docs/decisions.md#embeddings),
// and lists the model catalogue (docs/decisions.md#embedding-models) with what
// this server can serve.
package embed

import (
	"context"
	"sort"
	"unicode/utf8"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/embed/openai"
)

// DefaultAlias is the request value that selects the configured default
// model; an empty model name does the same.
const DefaultAlias = "default"

// Request limits (docs/decisions.md#embeddings; configurable through Limits).
const (
	DefaultMaxTextChars  = 32_000
	DefaultMaxBatchTexts = 2_048
)

// Limits bounds one embedding request. Zero fields take the defaults.
type Limits struct {
	// MaxTextChars is the longest text in Unicode code points.
	MaxTextChars int
	// MaxBatchTexts is the most texts in one request.
	MaxBatchTexts int
}

func (l Limits) withDefaults() Limits {
	if l.MaxTextChars <= 0 {
		l.MaxTextChars = DefaultMaxTextChars
	}
	if l.MaxBatchTexts <= 0 {
		l.MaxBatchTexts = DefaultMaxBatchTexts
	}
	return l
}

// CatalogEntry is one model of the catalogue and whether a configured
// provider serves it here.
type CatalogEntry = domain.CatalogEntry

// CatalogOptions configures a Catalog.
type CatalogOptions struct {
	// Providers in priority order: when two serve a model of the same name,
	// the earlier one gets its requests.
	Providers []domain.EmbeddingProvider
	// DefaultModel is what "default" and "" resolve to. Empty means
	// text-embedding-3-small when served, else the first served model.
	DefaultModel string
	Limits       Limits
}

// route is where requests for one model go.
type route struct {
	provider domain.EmbeddingProvider
	model    domain.EmbeddingModel
}

// Catalog implements domain.EmbeddingProvider over several providers. It is
// immutable after NewCatalog (providers' model lists are read once) and safe
// for concurrent use.
type Catalog struct {
	routes    map[string]route
	served    []domain.EmbeddingModel
	catalogue []CatalogEntry
	def       domain.EmbeddingModel
	limits    Limits
}

// NewCatalog reads each provider's models and picks the default model. It
// fails when nothing is served or the configured default is not.
func NewCatalog(opts CatalogOptions) (*Catalog, error) {
	c := &Catalog{routes: map[string]route{}, limits: opts.Limits.withDefaults()}
	for _, p := range opts.Providers {
		for _, m := range p.Models() {
			if _, taken := c.routes[m.Name]; taken {
				continue
			}
			c.routes[m.Name] = route{provider: p, model: m}
			c.served = append(c.served, m)
		}
	}
	if len(c.served) == 0 {
		return nil, domain.Invalid("providers", "no embedding provider serves any model")
	}
	def, err := c.pickDefault(opts.DefaultModel)
	if err != nil {
		return nil, err
	}
	c.def = def
	c.catalogue = c.buildCatalogue()
	for i := range c.catalogue {
		c.catalogue[i].Default = c.catalogue[i].Name == def.Name
	}
	return c, nil
}

func (c *Catalog) pickDefault(name string) (domain.EmbeddingModel, error) {
	if name != "" && name != DefaultAlias {
		r, ok := c.routes[name]
		if !ok {
			return domain.EmbeddingModel{}, domain.Invalid("default_model",
				"the configured default embedding model %q is not served by any configured provider", name).
				WithCode("model_not_available").
				WithDetail("available_models", c.availableNames())
		}
		return r.model, nil
	}
	if r, ok := c.routes[openai.ModelTextEmbedding3Small]; ok {
		return r.model, nil
	}
	return c.served[0], nil
}

// buildCatalogue lists the models of docs/decisions.md#embedding-models
// first, then every other served model in provider order.
func (c *Catalog) buildCatalogue() []CatalogEntry {
	var out []CatalogEntry
	listed := map[string]bool{}
	for _, ref := range openai.KnownModels() {
		entry := CatalogEntry{EmbeddingModel: ref}
		if r, ok := c.routes[ref.Name]; ok {
			entry = CatalogEntry{EmbeddingModel: withCatalogueRatings(r.model, ref), Available: true}
		}
		out = append(out, entry)
		listed[ref.Name] = true
	}
	for _, m := range c.served {
		if !listed[m.Name] {
			out = append(out, CatalogEntry{EmbeddingModel: m, Available: true})
		}
	}
	return out
}

// withCatalogueRatings fills ratings a provider left empty (say an extra
// model named like an OpenAI one) from docs/decisions.md#embedding-models.
func withCatalogueRatings(m, ref domain.EmbeddingModel) domain.EmbeddingModel {
	if m.Quality == "" {
		m.Quality = ref.Quality
	}
	if m.Speed == "" {
		m.Speed = ref.Speed
	}
	if m.Cost == "" {
		m.Cost = ref.Cost
	}
	return m
}

// Name implements domain.EmbeddingProvider.
func (c *Catalog) Name() string { return "catalog" }

// Models implements domain.EmbeddingProvider: every served model.
func (c *Catalog) Models() []domain.EmbeddingModel {
	return append([]domain.EmbeddingModel(nil), c.served...)
}

// Catalogue lists the models of docs/decisions.md#embedding-models
// (available or not) and the other served models, each marked with whether
// it can be used here.
func (c *Catalog) Catalogue() []CatalogEntry {
	return append([]CatalogEntry(nil), c.catalogue...)
}

// DefaultModel is the model "default" resolves to.
func (c *Catalog) DefaultModel() domain.EmbeddingModel { return c.def }

// Limits returns the enforced request limits.
func (c *Catalog) Limits() Limits { return c.limits }

// Model looks up a served model; "default" and "" give the default model.
func (c *Catalog) Model(name string) (domain.EmbeddingModel, bool) {
	if name == "" || name == DefaultAlias {
		return c.def, true
	}
	r, ok := c.routes[name]
	return r.model, ok
}

// Resolve is Model with the error an unserved name deserves: 400
// model_not_available listing the available models.
func (c *Catalog) Resolve(name string) (domain.EmbeddingModel, error) {
	m, ok := c.Model(name)
	if !ok {
		return domain.EmbeddingModel{}, c.modelNotAvailable(name)
	}
	return m, nil
}

// Embed implements domain.EmbeddingProvider: it resolves the model, checks
// the limits, and hands the request to the provider that serves the model.
// The result names the model that produced the vectors, never "default".
func (c *Catalog) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	m, err := c.Resolve(req.Model)
	if err != nil {
		return domain.EmbedResult{}, err
	}
	if err := c.CheckTexts(req.Texts); err != nil {
		return domain.EmbedResult{}, err
	}
	name := m.Name
	r := c.routes[name]
	req.Model = name
	res, err := r.provider.Embed(ctx, req)
	if err != nil {
		return domain.EmbedResult{}, err
	}
	if len(res.Vectors) != len(req.Texts) {
		return domain.EmbedResult{}, domain.Errorf(domain.KindInternal,
			"provider %s returned %d vectors for %d texts", r.provider.Name(), len(res.Vectors), len(req.Texts))
	}
	if res.Model == "" {
		res.Model = name
	}
	return res, nil
}

// CheckTexts applies the batch and text-length limits; the API can call it
// before queueing work. Errors are 400s naming the field, the limit and, for
// a long text, its index.
func (c *Catalog) CheckTexts(texts []string) error {
	if len(texts) == 0 {
		return domain.Invalid("texts", "at least one text is required").WithDetail("limit", c.limits.MaxBatchTexts)
	}
	if len(texts) > c.limits.MaxBatchTexts {
		return domain.Invalid("texts", "a batch holds at most %d texts, got %d", c.limits.MaxBatchTexts, len(texts)).
			WithCode("batch_too_large").
			WithDetail("limit", c.limits.MaxBatchTexts).
			WithDetail("count", len(texts))
	}
	for i, text := range texts {
		// A text with no more bytes than the limit cannot have more
		// characters, so only long texts are counted.
		if len(text) <= c.limits.MaxTextChars {
			continue
		}
		if n := utf8.RuneCountInString(text); n > c.limits.MaxTextChars {
			return domain.Invalid("texts", "text %d has %d characters, more than the limit of %d", i, n, c.limits.MaxTextChars).
				WithCode("text_too_long").
				WithDetail("index", i).
				WithDetail("limit", c.limits.MaxTextChars).
				WithDetail("length", n)
		}
	}
	return nil
}

func (c *Catalog) modelNotAvailable(name string) *domain.Error {
	return domain.Invalid("model", "embedding model %q is not available on this server", name).
		WithCode("model_not_available").
		WithDetail("available_models", c.availableNames())
}

func (c *Catalog) availableNames() []string {
	names := make([]string, 0, len(c.served))
	for _, m := range c.served {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	return names
}
