package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// DefaultModel selects the server's configured default model.
const DefaultModel = "default"

// Embedding is the data of POST /embeddings/generate.
type Embedding struct {
	Embedding  []float32 `json:"embedding"`
	Dimensions int       `json:"dimensions"`
	Model      string    `json:"model"` // the model that actually produced it
	TokensUsed int       `json:"tokens_used"`
}

// EmbeddingBatch is the data of POST /embeddings/batch; Embeddings are in
// the order of the texts.
type EmbeddingBatch struct {
	Embeddings      [][]float32 `json:"embeddings"`
	Dimensions      int         `json:"dimensions"`
	Model           string      `json:"model"`
	TotalTokensUsed int         `json:"total_tokens_used"`
}

// Reembedded is the data of POST /embeddings/reembed. PreviousModel is
// empty when the memory had no vector before.
type Reembedded struct {
	MemoryType    string    `json:"memory_type"`
	MemoryID      string    `json:"memory_id"`
	PreviousModel string    `json:"previous_model"`
	NewModel      string    `json:"new_model"`
	Dimensions    int       `json:"dimensions"`
	ReembeddedAt  time.Time `json:"reembedded_at"`
}

// BulkReembedRequest is the body of POST /embeddings/bulk-reembed; empty
// Types means all, empty Model the default.
type BulkReembedRequest struct {
	AgentID string   `json:"agent_id"`
	Types   []string `json:"types,omitempty"`
	Model   string   `json:"model,omitempty"`
}

// JobCreated is the data of POST /embeddings/bulk-reembed.
type JobCreated struct {
	JobID                string `json:"job_id"`
	Status               string `json:"status"` // "queued"
	AgentID              string `json:"agent_id"`
	Model                string `json:"model"`
	EstimatedMemories    int    `json:"estimated_memories"`
	EstimatedTimeSeconds int    `json:"estimated_time_seconds"`
}

// Job is the data of GET /embeddings/jobs/{id}: the fields of docs/decisions.md#jobs
// plus the job's parameters, totals, errors and other times. Times that
// have not happened yet are nil.
type Job struct {
	JobID             string     `json:"job_id"`
	Status            string     `json:"status"` // queued, running, completed, failed, cancelled
	AgentID           string     `json:"agent_id"`
	Model             string     `json:"model"`
	Dimensions        int        `json:"dimensions"`
	Types             []string   `json:"types"`
	EstimatedMemories int        `json:"estimated_memories"`
	MemoriesProcessed int        `json:"memories_processed"`
	MemoriesTotal     int        `json:"memories_total"`
	Errors            []JobError `json:"errors"`
	FailureReason     string     `json:"failure_reason"`
	QueuedAt          time.Time  `json:"queued_at"`
	StartedAt         *time.Time `json:"started_at"`
	CompletedAt       *time.Time `json:"completed_at"`
	EndedAt           *time.Time `json:"ended_at"`
}

// JobError is one memory a job could not process.
type JobError struct {
	At       time.Time `json:"at"`
	Message  string    `json:"message"`
	MemoryID string    `json:"memory_id,omitempty"`
}

// Done reports whether the job has reached a final status.
func (j *Job) Done() bool {
	switch j.Status {
	case "completed", "failed", "cancelled":
		return true
	}
	return false
}

// SimilarRequest is the body of POST /embeddings/similar.
type SimilarRequest struct {
	AgentID   string    `json:"agent_id"`
	Embedding []float32 `json:"embedding"`
	Limit     int       `json:"limit,omitempty"`
	MinScore  float64   `json:"min_score,omitempty"`
	Types     []string  `json:"types,omitempty"`
}

// SimilarResult is one hit of POST /embeddings/similar.
type SimilarResult struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Score   float64         `json:"score"`
	Content json.RawMessage `json:"content"`
}

// EmbeddingModel is one entry of GET /embeddings/models.
type EmbeddingModel struct {
	Name               string `json:"name"`
	Provider           string `json:"provider"`
	Dimensions         int    `json:"dimensions"`
	FlexibleDimensions bool   `json:"flexible_dimensions"`
	Quality            string `json:"quality"`
	Speed              string `json:"speed"`
	Cost               string `json:"cost"`
	Description        string `json:"description"`
	Available          bool   `json:"available"` // served by a configured provider
	Default            bool   `json:"default"`
}

// ModelCatalog is the data of GET /embeddings/models.
type ModelCatalog struct {
	Models       []EmbeddingModel `json:"models"`
	DefaultModel string           `json:"default_model"`
}

// GenerateEmbedding embeds text with model ("" or DefaultModel: the
// server's default).
func (c *Client) GenerateEmbedding(ctx context.Context, text, model string) (*Embedding, error) {
	var out Embedding
	err := c.call(ctx, http.MethodPost, "/embeddings/generate", nil,
		map[string]string{"text": text, "model": orDefault(model)}, &out, bearer)
	return ret(&out, err)
}

// GenerateEmbeddings embeds texts in one call.
func (c *Client) GenerateEmbeddings(ctx context.Context, texts []string, model string) (*EmbeddingBatch, error) {
	var out EmbeddingBatch
	err := c.call(ctx, http.MethodPost, "/embeddings/batch", nil,
		map[string]any{"texts": texts, "model": orDefault(model)}, &out, bearer)
	return ret(&out, err)
}

// Reembed re-embeds one memory with its agent's current model.
// memoryType is the singular name, e.g. "episode".
func (c *Client) Reembed(ctx context.Context, agentID, memoryType, memoryID string) (*Reembedded, error) {
	var out Reembedded
	err := c.call(ctx, http.MethodPost, "/embeddings/reembed", nil,
		map[string]string{"agent_id": agentID, "memory_type": memoryType, "memory_id": memoryID}, &out, bearer)
	return ret(&out, err)
}

// BulkReembed starts an asynchronous job; follow it with GetJob.
func (c *Client) BulkReembed(ctx context.Context, req BulkReembedRequest) (*JobCreated, error) {
	var out JobCreated
	err := c.call(ctx, http.MethodPost, "/embeddings/bulk-reembed", nil, req, &out, bearer)
	return ret(&out, err)
}

// GetJob reads a job's progress.
func (c *Client) GetJob(ctx context.Context, jobID string) (*Job, error) {
	var out Job
	err := c.call(ctx, http.MethodGet, "/embeddings/jobs/"+pathID(jobID), nil, nil, &out, bearer)
	return ret(&out, err)
}

// CancelJob asks a queued or running job to stop.
func (c *Client) CancelJob(ctx context.Context, jobID string) (*Job, error) {
	var out Job
	err := c.call(ctx, http.MethodPost, "/embeddings/jobs/"+pathID(jobID)+"/cancel", nil, nil, &out, bearer)
	return ret(&out, err)
}

// Similar finds an agent's memories closest to a vector of the agent's
// model.
func (c *Client) Similar(ctx context.Context, req SimilarRequest) ([]SimilarResult, error) {
	var out struct {
		Results []SimilarResult `json:"results"`
	}
	if err := c.call(ctx, http.MethodPost, "/embeddings/similar", nil, req, &out, bearer); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// Models lists the embedding model catalogue and what this server serves.
func (c *Client) Models(ctx context.Context) (*ModelCatalog, error) {
	var out ModelCatalog
	err := c.call(ctx, http.MethodGet, "/embeddings/models", nil, nil, &out, bearer)
	return ret(&out, err)
}

func orDefault(model string) string {
	if model == "" {
		return DefaultModel
	}
	return model
}
