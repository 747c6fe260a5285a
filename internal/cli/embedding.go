package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/embed"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/embed/openai"
)

// newEmbedCatalog builds the embedding providers from configuration. The
// local provider is always there (it needs nothing); the openai provider
// is added when selected or configured, and comes first when selected.
func newEmbedCatalog(cfg serveConfig) (*embed.Catalog, error) {
	lp, err := local.New(local.Options{ModelDirs: splitList(cfg.EmbedModelDir)})
	if err != nil {
		return nil, fmt.Errorf("local embedding models: %w", err)
	}
	providers := []domain.EmbeddingProvider{lp}
	defaultModel := cfg.EmbedModel
	switch cfg.EmbedProvider {
	case "local":
		if defaultModel == "" {
			defaultModel = local.DefaultModelName
		}
	case "openai":
		if defaultModel == "" {
			defaultModel = openai.ModelTextEmbedding3Small
		}
	default:
		return nil, fmt.Errorf("--embed-provider must be local or openai, not %q", cfg.EmbedProvider)
	}
	if cfg.EmbedProvider == "openai" || cfg.OpenAIAPIKey != "" || cfg.OpenAIBaseURL != "" {
		extra, err := parseModelList(cfg.OpenAIExtraModels)
		if err != nil {
			return nil, err
		}
		op, err := openai.New(openai.Options{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, Organization: cfg.OpenAIOrg, ExtraModels: extra})
		if err != nil {
			return nil, fmt.Errorf("openai embedding provider: %w", err)
		}
		if cfg.EmbedProvider == "openai" {
			providers = append([]domain.EmbeddingProvider{op}, providers...)
		} else {
			providers = append(providers, op)
		}
	}
	return embed.NewCatalog(embed.CatalogOptions{Providers: providers, DefaultModel: defaultModel})
}

// parseModelList reads "name:dims,name:dims" (models of an OpenAI-compatible
// server, e.g. Ollama's nomic-embed-text:768).
func parseModelList(s string) ([]domain.EmbeddingModel, error) {
	var out []domain.EmbeddingModel
	for _, item := range splitList(s) {
		i := strings.LastIndex(item, ":")
		dims, err := strconv.Atoi(item[i+1:])
		if i <= 0 || err != nil || dims <= 0 {
			return nil, fmt.Errorf("--openai-extra-models: %q is not name:dimensions", item)
		}
		out = append(out, domain.EmbeddingModel{Name: item[:i], Provider: openai.ProviderName, Dimensions: dims})
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
