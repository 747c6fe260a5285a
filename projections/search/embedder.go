package search

import (
	"context"
	"fmt"

	"github.com/engram-memory/engram/domain"
)

// ProviderEmbedder embeds queries through a domain.EmbeddingProvider (the
// embedding catalog in production).
type ProviderEmbedder struct {
	Provider domain.EmbeddingProvider
}

// EmbedQuery implements Embedder.
func (p ProviderEmbedder) EmbedQuery(ctx context.Context, model string, dimensions int, text string) ([]float32, error) {
	res, err := p.Provider.Embed(ctx, domain.EmbedRequest{Model: model, Texts: []string{text}, Dimensions: dimensions})
	if err != nil {
		return nil, err
	}
	if len(res.Vectors) != 1 {
		return nil, fmt.Errorf("search: provider returned %d vectors for one text", len(res.Vectors))
	}
	return res.Vectors[0], nil
}
