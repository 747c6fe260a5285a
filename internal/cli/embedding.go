package cli

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/embed"
	"github.com/engram-memory/engram/infra/embed/openai"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/workers"
)

// embedding is the embedding part of the configuration, as the
// composition root (internal/app) takes it.
func (cfg serveConfig) embedding() (app.Embedding, error) {
	extra, err := parseModelList(cfg.OpenAIExtraModels)
	if err != nil {
		return app.Embedding{}, err
	}
	return app.Embedding{
		Provider: cfg.EmbedProvider, Model: cfg.EmbedModel, ModelDirs: splitList(cfg.EmbedModelDir),
		OpenAIBaseURL: cfg.OpenAIBaseURL, OpenAIAPIKey: cfg.OpenAIAPIKey, OpenAIOrg: cfg.OpenAIOrg, OpenAIExtraModels: extra,
	}, nil
}

// newEmbedCatalog builds the embedding providers from configuration
// (app.NewEmbedCatalog), for the commands that embed without a stack.
func newEmbedCatalog(cfg serveConfig) (*embed.Catalog, error) {
	e, err := cfg.embedding()
	if err != nil {
		return nil, err
	}
	return app.NewEmbedCatalog(e)
}

// settings is the application's configuration (internal/app) from the
// server's: every binary builds its application from one app.Settings.
func (cfg serveConfig) settings(logger *slog.Logger) (app.Settings, error) {
	durability, err := sqlite.ParseDurability(cfg.Durability)
	if err != nil {
		return app.Settings{}, fmt.Errorf("--durability: %w", err)
	}
	e, err := cfg.embedding()
	if err != nil {
		return app.Settings{}, err
	}
	return app.Settings{
		Config: app.Config{
			DataDir: cfg.DataDir, SQLite: sqlite.Options{Durability: durability}, EventStore: cfg.EventStore, ReadModels: cfg.ReadModels,
			Indexes: cfg.Indexes, NodeID: cfg.NodeID, Logger: logger,
		},
		Embedding: e,
		Chat:      app.Chat{Model: cfg.ChatModel, Timeout: cfg.ChatTimeout},
		SMTPURL:   cfg.SMTPURL, MailOutbox: cfg.MailOutbox,
		PublicURL: cfg.PublicURL, SessionTTL: cfg.SessionTTL, ResendInterval: cfg.ResendInterval, UsageFlush: cfg.UsageFlush, MaxActiveKeys: cfg.MaxKeysPerUser,
		Quotas: cfg.Quotas, SyncMaxPushBytes: cfg.SyncMaxPushBytes,
		Jobs: workers.RunnerConfig{ID: cfg.NodeID, LeaseTimeout: cfg.JobLeaseTimeout, BatchSize: cfg.JobBatchSize, BatchDelay: cfg.JobBatchDelay, MaxAttempts: cfg.JobMaxAttempts},
	}, nil
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
