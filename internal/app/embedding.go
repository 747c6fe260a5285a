package app

import (
	"fmt"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/embed"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/embed/openai"
	"github.com/engram-memory/engram/infra/llm"
)

// NewEmbedCatalog builds the embedding providers from configuration. The
// local provider is always there (it needs nothing); the openai provider
// is added when selected or configured, and comes first when selected.
func NewEmbedCatalog(cfg Embedding) (*embed.Catalog, error) {
	lp, err := local.New(local.Options{ModelDirs: cfg.ModelDirs})
	if err != nil {
		return nil, fmt.Errorf("local embedding models: %w", err)
	}
	providers := []domain.EmbeddingProvider{lp}
	defaultModel := cfg.Model
	switch cfg.Provider {
	case "", "local":
		if defaultModel == "" {
			defaultModel = local.DefaultModelName
		}
	case "openai":
		if defaultModel == "" {
			defaultModel = openai.ModelTextEmbedding3Small
		}
	default:
		return nil, fmt.Errorf("--embed-provider must be local or openai, not %q", cfg.Provider)
	}
	if cfg.Provider == "openai" || cfg.OpenAIAPIKey != "" || cfg.OpenAIBaseURL != "" {
		op, err := openai.New(openai.Options{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, Organization: cfg.OpenAIOrg, ExtraModels: cfg.OpenAIExtraModels})
		if err != nil {
			return nil, fmt.Errorf("openai embedding provider: %w", err)
		}
		if cfg.Provider == "openai" {
			providers = append([]domain.EmbeddingProvider{op}, providers...)
		} else {
			providers = append(providers, op)
		}
	}
	if cfg.Observe != nil {
		for i, p := range providers {
			providers[i] = cfg.Observe(p)
		}
	}
	return embed.NewCatalog(embed.CatalogOptions{Providers: providers, DefaultModel: defaultModel})
}

// NewProcessor is the processing pipeline's processor: the chat model when
// one is configured, else the rule-based extractor.
func NewProcessor(endpoint Embedding, chat Chat) (commands.Processor, error) {
	if chat.Model == "" {
		return processing.NewRuleExtractor(), nil
	}
	c, err := llm.New(llm.Options{BaseURL: endpoint.OpenAIBaseURL, APIKey: endpoint.OpenAIAPIKey, Organization: endpoint.OpenAIOrg, Model: chat.Model, Timeout: chat.Timeout})
	if err != nil {
		return nil, fmt.Errorf("--chat-model: %w", err)
	}
	return c, nil
}
