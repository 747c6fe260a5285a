// Package openai embeds text through any OpenAI-compatible /embeddings
// endpoint (OpenAI, Azure, Ollama, vLLM, LM Studio, another Engram) using
// go-openai, with batching, retries and order restoration.
package openai

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/engram-memory/engram/domain"
	goopenai "github.com/sashabaranov/go-openai"
)

// Provider is safe for concurrent use.
type Provider struct {
	client *goopenai.Client
	opts   Options
	models map[string]domain.EmbeddingModel
	order  []string
}

// New configures a provider; it does not contact the server.
func New(opts Options) (*Provider, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cfg := goopenai.DefaultConfig(opts.APIKey)
	cfg.BaseURL = opts.BaseURL
	cfg.OrgID = opts.Organization
	cfg.HTTPClient = capturingDoer{next: opts.HTTPClient}
	p := &Provider{client: goopenai.NewClientWithConfig(cfg), opts: opts, models: map[string]domain.EmbeddingModel{}}
	var served []domain.EmbeddingModel
	if !opts.OnlyExtraModels {
		served = KnownModels()
	}
	for _, m := range append(served, opts.ExtraModels...) {
		m.Provider = ProviderName
		if _, dup := p.models[m.Name]; !dup {
			p.order = append(p.order, m.Name)
		}
		p.models[m.Name] = m
	}
	return p, nil
}

// Name implements domain.EmbeddingProvider.
func (p *Provider) Name() string { return ProviderName }

// Models implements domain.EmbeddingProvider.
func (p *Provider) Models() []domain.EmbeddingModel {
	out := make([]domain.EmbeddingModel, 0, len(p.order))
	for _, name := range p.order {
		out = append(out, p.models[name])
	}
	return out
}

// Embed implements domain.EmbeddingProvider. Texts are sent in batches within
// the provider's limits; vectors come back in input order, unit length, and
// Model is the requested name (not the provider's echo, which may carry a
// version suffix), so stored vectors name the model they were asked of.
func (p *Provider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	m, ok := p.models[req.Model]
	if !ok {
		return domain.EmbedResult{}, p.modelNotAvailable(req.Model)
	}
	dims, err := resolveDimensions(m, req.Dimensions)
	if err != nil {
		return domain.EmbedResult{}, err
	}
	for i, text := range req.Texts {
		if text == "" {
			// OpenAI rejects empty inputs; say which one before a round trip.
			return domain.EmbedResult{}, domain.Invalid("texts", "text %d is empty", i).WithDetail("index", i)
		}
	}
	res := domain.EmbedResult{Model: m.Name, Dimensions: dims, Vectors: make([][]float32, len(req.Texts))}
	sendDims := 0
	if req.Dimensions != 0 && m.FlexibleDimensions {
		sendDims = req.Dimensions
	}
	for _, s := range splitBatches(req.Texts, p.opts.MaxInputsPerRequest, p.opts.MaxTokensPerRequest) {
		resp, err := p.embedWithRetry(ctx, m.Name, req.Texts[s.start:s.end], sendDims)
		if err != nil {
			return domain.EmbedResult{}, err
		}
		if err := placeVectors(res.Vectors[s.start:s.end], resp, dims); err != nil {
			e := domain.Errorf(domain.KindProviderUnavailable, "the embedding provider sent an unusable response for %s", m.Name)
			e.Err = err
			return domain.EmbedResult{}, e
		}
		tokens := resp.Usage.TotalTokens
		if tokens == 0 {
			tokens = resp.Usage.PromptTokens
		}
		res.TokensUsed += tokens
	}
	return res, nil
}

// resolveDimensions returns the vector length to expect: the native size, or
// a smaller requested one for models that support it.
func resolveDimensions(m domain.EmbeddingModel, requested int) (int, error) {
	switch {
	case requested == 0 || requested == m.Dimensions:
		return m.Dimensions, nil
	case !m.FlexibleDimensions:
		return 0, domain.Invalid("dimensions", "model %s has fixed dimensions %d; %d cannot be requested",
			m.Name, m.Dimensions, requested).WithDetail("allowed", []int{m.Dimensions})
	case requested < 1 || requested > m.Dimensions:
		return 0, domain.Invalid("dimensions", "model %s supports 1 to %d dimensions, not %d",
			m.Name, m.Dimensions, requested).WithDetail("max", m.Dimensions)
	}
	return requested, nil
}

// embedWithRetry sends one batch, retrying transient failures with
// exponential backoff, or after the server's Retry-After when it sends one.
func (p *Provider) embedWithRetry(ctx context.Context, model string, texts []string, dims int) (goopenai.EmbeddingResponse, error) {
	req := goopenai.EmbeddingRequest{Input: texts, Model: goopenai.EmbeddingModel(model), Dimensions: dims}
	for attempt := 1; ; attempt++ {
		actx, meta := withAttemptMeta(ctx)
		resp, err := p.client.CreateEmbeddings(actx, req)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return resp, cancelled(model, attempt, ctx.Err())
		}
		f := classify(err, meta)
		if !f.retryable {
			return resp, permanentError(model, f)
		}
		if attempt >= p.opts.MaxAttempts {
			return resp, unavailableError(model, attempt, "retries exhausted", f)
		}
		wait := backoff(attempt, p.opts.BackoffBase, p.opts.BackoffMax)
		if meta.retryAfter > 0 {
			if meta.retryAfter > p.opts.MaxRetryAfter {
				return resp, unavailableError(model, attempt,
					fmt.Sprintf("it asks to retry after %s", meta.retryAfter.Round(time.Second)), f).
					WithDetail("retry_after_seconds", int(math.Ceil(meta.retryAfter.Seconds())))
			}
			wait = meta.retryAfter
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return resp, unavailableError(model, attempt, "the next retry would pass the request deadline", f)
		}
		if err := sleep(ctx, wait); err != nil {
			return resp, cancelled(model, attempt, err)
		}
	}
}

func cancelled(model string, attempts int, cause error) *domain.Error {
	e := domain.Errorf(domain.KindProviderUnavailable, "embedding with %s stopped after %d attempt(s)", model, attempts).
		WithDetail("attempts", attempts)
	e.Err = cause
	return e
}

// placeVectors puts each returned embedding at its `index` (providers may
// answer out of order), checks every slot is filled once with the expected
// length, and normalises vectors that are not already unit length.
func placeVectors(dst [][]float32, resp goopenai.EmbeddingResponse, dims int) error {
	if len(resp.Data) != len(dst) {
		return fmt.Errorf("got %d embeddings for %d inputs", len(resp.Data), len(dst))
	}
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(dst) {
			return fmt.Errorf("embedding index %d out of range [0, %d)", d.Index, len(dst))
		}
		if dst[d.Index] != nil {
			return fmt.Errorf("embedding index %d returned twice", d.Index)
		}
		if len(d.Embedding) != dims {
			return fmt.Errorf("embedding %d has %d dimensions, expected %d", d.Index, len(d.Embedding), dims)
		}
		v, err := unitLength(d.Embedding)
		if err != nil {
			return fmt.Errorf("embedding %d: %w", d.Index, err)
		}
		dst[d.Index] = v
	}
	return nil
}

// unitTolerance is how far from 1 a norm may be before we renormalise;
// float32 rounding alone stays well inside it.
const unitTolerance = 1e-4

func unitLength(v []float32) ([]float32, error) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	norm := math.Sqrt(sum)
	switch {
	case norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0):
		return nil, errors.New("zero or non-finite vector")
	case math.Abs(norm-1) <= unitTolerance:
		return v, nil
	}
	inv := 1 / norm
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return v, nil
}

func (p *Provider) modelNotAvailable(name string) *domain.Error {
	available := append([]string(nil), p.order...)
	sort.Strings(available)
	return domain.Invalid("model", "model %q is not served by the openai provider", name).
		WithCode("model_not_available").
		WithDetail("available_models", available)
}
