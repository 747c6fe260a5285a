package domain

import "context"

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

// EmbedResult holds one unit-length vector per input text, in input order.
type EmbedResult struct {
	Model      string
	Dimensions int
	Vectors    [][]float32
	TokensUsed int
}

// EmbeddingProvider turns text into vectors. Implementations return an *Error
// of KindProviderUnavailable when the backend cannot be reached (after their
// own retries) and KindInvalid with code "model_not_available" for a model
// they do not serve.
type EmbeddingProvider interface {
	Name() string
	Models() []EmbeddingModel
	Embed(ctx context.Context, req EmbedRequest) (EmbedResult, error)
}
