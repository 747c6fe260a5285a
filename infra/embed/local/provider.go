// Package local embeds text in process, without any network: two built-in
// models that need no download (glove-sif-100, GloVe word vectors combined
// by smooth inverse frequency, and engram-hash-384, lexical feature
// hashing), plus models loaded from directories: SIF models (sif.json, see
// ImportGloVe) and Model2Vec-style static models (model.safetensors +
// tokenizer.json).
package local

import (
	"context"
	"os"
	"sort"

	"github.com/engram-memory/engram/domain"
)

// ProviderName is what Name returns and what models list as their provider.
const ProviderName = "local"

// Options configures the local provider.
type Options struct {
	// ModelDirs are model directories: a SIF model (it has sif.json) is
	// served under the name in its manifest, a Model2Vec-style static
	// model under the directory's base name (".../potion-base-8M" →
	// "potion-base-8M").
	ModelDirs []string
}

// model is one in-process embedding model.
type model interface {
	info() domain.EmbeddingModel
	// embed returns a unit-length vector and the number of tokens read.
	embed(text string) ([]float32, int)
}

// Provider serves the built-in models and any loaded ones. It is
// immutable after New and safe for concurrent use.
type Provider struct {
	models map[string]model
	order  []string // model names: built-in first, then as configured
}

// New loads every directory in opts.ModelDirs. A directory that cannot be
// loaded is an error, rather than a silently missing model.
func New(opts Options) (*Provider, error) {
	builtin := newBuiltinModel()
	glove, err := builtinSIFModel()
	if err != nil {
		return nil, err
	}
	p := &Provider{
		models: map[string]model{DefaultModelName: glove, builtin.name: builtin},
		order:  []string{DefaultModelName, builtin.name},
	}
	for _, dir := range opts.ModelDirs {
		m, err := loadModelDir(dir)
		if err != nil {
			return nil, err
		}
		name := m.info().Name
		if _, dup := p.models[name]; dup {
			return nil, domain.Invalid("model_dirs", "two local models are named %q", name)
		}
		p.models[name] = m
		p.order = append(p.order, name)
	}
	return p, nil
}

// loadModelDir loads a SIF model directory (it has sif.json) or else a
// Model2Vec-style one.
func loadModelDir(dir string) (model, error) {
	if isSIFModelDir(os.DirFS(dir)) {
		return loadSIFModel(os.DirFS(dir), dir)
	}
	return loadStaticModel(dir)
}

// Name implements domain.EmbeddingProvider.
func (p *Provider) Name() string { return ProviderName }

// Models implements domain.EmbeddingProvider.
func (p *Provider) Models() []domain.EmbeddingModel {
	out := make([]domain.EmbeddingModel, 0, len(p.order))
	for _, name := range p.order {
		out = append(out, p.models[name].info())
	}
	return out
}

// ctxCheckEvery bounds how much work is done after ctx is cancelled.
const ctxCheckEvery = 64

// Embed implements domain.EmbeddingProvider. Local models have fixed
// dimensions: Dimensions must be 0 or the model's own size.
func (p *Provider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	m, ok := p.models[req.Model]
	if !ok {
		return domain.EmbedResult{}, p.modelNotAvailable(req.Model)
	}
	dims := m.info().Dimensions
	if req.Dimensions != 0 && req.Dimensions != dims {
		return domain.EmbedResult{}, domain.Invalid("dimensions",
			"model %s has fixed dimensions %d; %d cannot be requested", req.Model, dims, req.Dimensions).
			WithDetail("allowed", []int{dims})
	}
	res := domain.EmbedResult{Model: req.Model, Dimensions: dims, Vectors: make([][]float32, len(req.Texts))}
	for i, text := range req.Texts {
		if i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				e := domain.Errorf(domain.KindProviderUnavailable, "local embedding interrupted after %d of %d texts", i, len(req.Texts))
				e.Err = err
				return domain.EmbedResult{}, e
			}
		}
		vec, tokens := m.embed(text)
		res.Vectors[i] = vec
		res.TokensUsed += tokens
	}
	return res, nil
}

func (p *Provider) modelNotAvailable(name string) *domain.Error {
	available := append([]string(nil), p.order...)
	sort.Strings(available)
	return domain.Invalid("model", "model %q is not served by the local provider", name).
		WithCode("model_not_available").
		WithDetail("available_models", available)
}
