package domain

import (
	"context"
	"fmt"
	"math"
	"time"
)

// EmbeddingModel describes one model a provider can serve.
type EmbeddingModel struct {
	Name        string `json:"name"`
	Provider    string `json:"provider"`
	Dimensions  int    `json:"dimensions"`
	MaxTokens   int    `json:"max_tokens,omitempty"`
	Quality     string `json:"quality,omitempty"`
	Speed       string `json:"speed,omitempty"`
	Cost        string `json:"cost,omitempty"`
	Description string `json:"description,omitempty"`
	// Dimensions that may be requested instead of the default (empty: fixed).
	FlexibleDimensions bool `json:"flexible_dimensions"`
}

// CatalogEntry is one model of the server's catalogue: whether a configured
// provider serves it here, and whether "default" selects it.
type CatalogEntry struct {
	EmbeddingModel
	Available bool `json:"available"`
	Default   bool `json:"default"`
}

// EmbedRequest asks for vectors of texts with one model. Dimensions 0 means
// the model's native size.
type EmbedRequest struct {
	Model      string
	Texts      []string
	Dimensions int
}

// CodeProviderRejectedInput is the code of the KindInvalid error of an
// embedding backend that refused the texts themselves (longer than its
// model takes, say): sending them again cannot succeed.
const CodeProviderRejectedInput = "provider_rejected_input"

// EmbedResult holds one unit-length vector per input text, in input order.
type EmbedResult struct {
	Model      string
	Dimensions int
	Vectors    [][]float32
	TokensUsed int
}

// EmbeddingProvider turns text into vectors. Implementations return an *Error
// of KindProviderUnavailable when the backend cannot be reached (after their
// own retries), KindInvalid with code "model_not_available" for a model
// they do not serve, and KindInvalid with CodeProviderRejectedInput for
// texts the backend refuses.
type EmbeddingProvider interface {
	Name() string
	Models() []EmbeddingModel
	Embedder
}

// Embedder turns texts into vectors: what the writes, the embedding queue
// and the search need of a provider. EmbeddingProvider (and so the model
// catalog, infra/embed.Catalog) satisfies it.
type Embedder interface {
	Embed(ctx context.Context, req EmbedRequest) (EmbedResult, error)
}

// EmbedExactly asks e, within timeout, for one vector per text in exactly
// model and dims, and checks the answer before anything is recorded: a
// vector of another model or size would be stored against the wrong index.
func EmbedExactly(ctx context.Context, e Embedder, timeout time.Duration, model string, dims int, texts []string) ([][]float32, error) {
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := e.Embed(callCtx, EmbedRequest{Model: model, Texts: texts, Dimensions: dims})
	if err != nil {
		return nil, err
	}
	if res.Model != model || res.Dimensions != dims || len(res.Vectors) != len(texts) {
		return nil, fmt.Errorf("embed: provider answered %d vectors of %s/%d for %d texts of %s/%d",
			len(res.Vectors), res.Model, res.Dimensions, len(texts), model, dims)
	}
	for i, v := range res.Vectors {
		if len(v) != dims {
			return nil, fmt.Errorf("embed: provider vector %d has %d dimensions, not %d", i, len(v), dims)
		}
	}
	return res.Vectors, nil
}

// CheckVector refuses a vector that no similarity can be computed with: one
// holding NaN or an infinity, or all zeros. The API's similar search and a
// sync push both refuse such a vector with the same error.
func CheckVector(field string, v []float32) error {
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 || math.IsInf(norm, 0) || math.IsNaN(norm) {
		return Invalid(field, "%s must be a finite, non-zero vector", field)
	}
	return nil
}
