package openai

import "github.com/engram-memory/engram/domain"

// ProviderName is what Name returns and what models list as their provider.
const ProviderName = "openai"

// The models of the catalogue (docs/decisions.md#embedding-models).
const (
	ModelTextEmbedding3Small = "text-embedding-3-small"
	ModelTextEmbedding3Large = "text-embedding-3-large"
	ModelTextEmbeddingAda002 = "text-embedding-ada-002"
)

// openAIMaxInputTokens is OpenAI's per-input limit for its embedding models.
const openAIMaxInputTokens = 8191

// KnownModels returns OpenAI's embedding models as the catalogue of
// docs/decisions.md#embedding-models lists them (dimensions, quality, speed,
// cost), with the facts the API needs: the 3-* models accept a smaller
// `dimensions`, ada-002 does not. It returns a fresh slice each call.
func KnownModels() []domain.EmbeddingModel {
	return []domain.EmbeddingModel{
		{
			Name: ModelTextEmbedding3Small, Provider: ProviderName, Dimensions: 1536,
			MaxTokens: openAIMaxInputTokens, Quality: "Good", Speed: "Fast", Cost: "Low",
			Description:        "OpenAI text-embedding-3-small; dimensions can be reduced.",
			FlexibleDimensions: true,
		},
		{
			Name: ModelTextEmbedding3Large, Provider: ProviderName, Dimensions: 3072,
			MaxTokens: openAIMaxInputTokens, Quality: "Best", Speed: "Medium", Cost: "Medium",
			Description:        "OpenAI text-embedding-3-large; dimensions can be reduced.",
			FlexibleDimensions: true,
		},
		{
			Name: ModelTextEmbeddingAda002, Provider: ProviderName, Dimensions: 1536,
			MaxTokens: openAIMaxInputTokens, Quality: "Good", Speed: "Fast", Cost: "Low",
			Description: "OpenAI text-embedding-ada-002 (previous generation); fixed 1536 dimensions.",
		},
	}
}
