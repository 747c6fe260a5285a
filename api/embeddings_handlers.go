package api

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/projections/query"
)

// Embeddings is the embedding and re-embedding use-case surface the API
// needs; commands.Embeddings implements it.
type Embeddings interface {
	Generate(ctx context.Context, req commands.GenerateRequest) (domain.EmbedResult, error)
	Reembed(ctx context.Context, meta domain.Metadata, req commands.ReembedRequest) (commands.ReembedResult, error)
	BulkReembed(ctx context.Context, meta domain.Metadata, req commands.BulkReembedRequest) (commands.JobCreated, error)
	CancelJob(ctx context.Context, meta domain.Metadata, jobID string) (job.View, error)
}

// defaultSimilarLimit is /embeddings/similar's default limit; min_score
// defaults to 0 and types to every searchable type (docs/decisions.md#embeddings).
const defaultSimilarLimit = 10

// embeddingRoutes mounts /embeddings (Engram's envelope) and the
// OpenAI-compatible POST /embeddings (OpenAI's shapes). All need a bearer
// credential.
func (s *Server) embeddingRoutes(r chi.Router) {
	if s.cfg.Embeddings == nil {
		return
	}
	r.With(s.openAIAuth).Get("/models", s.openAIModels)
	r.With(s.openAIAuth).Get("/models/{model}", s.openAIModel)
	r.Route("/embeddings", func(r chi.Router) {
		r.With(s.openAIAuth).Post("/", s.openAIEmbeddings)
		r.Group(func(r chi.Router) {
			r.Use(s.withSource, s.requireAuth)
			r.Post("/generate", s.generateEmbedding)
			r.Post("/batch", s.batchEmbeddings)
			r.Post("/reembed", s.reembedMemory)
			r.Post("/bulk-reembed", s.bulkReembed)
			r.Get("/jobs/{job_id}", s.getJob)
			r.Post("/jobs/{job_id}/cancel", s.cancelJob)
			r.Post("/similar", s.similarByVector)
			r.Get("/models", s.listModels)
		})
	})
}

func (s *Server) generateEmbedding(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Text  *string `json:"text"`
		Model string  `json:"model"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	var texts []string
	if req.Text != nil {
		texts = []string{*req.Text}
	}
	res, err := s.cfg.Embeddings.Generate(r.Context(), commands.GenerateRequest{Texts: texts, Model: req.Model, Field: "text", Single: true})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{
		"embedding":   res.Vectors[0],
		"dimensions":  res.Dimensions,
		"model":       res.Model,
		"tokens_used": res.TokensUsed,
	})
}

func (s *Server) batchEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Texts []string `json:"texts"`
		Model string   `json:"model"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Embeddings.Generate(r.Context(), commands.GenerateRequest{Texts: req.Texts, Model: req.Model, Field: "texts"})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{
		"embeddings":        res.Vectors,
		"dimensions":        res.Dimensions,
		"model":             res.Model,
		"total_tokens_used": res.TokensUsed,
	})
}

func (s *Server) reembedMemory(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AgentID    string `json:"agent_id"`
		MemoryType string `json:"memory_type"`
		MemoryID   string `json:"memory_id"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Embeddings.Reembed(r.Context(), meta(r), commands.ReembedRequest(req))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var previous any
	if res.PreviousModel != "" {
		previous = res.PreviousModel
	}
	writeData(w, http.StatusOK, map[string]any{
		"memory_type":    res.MemoryType,
		"memory_id":      res.MemoryID,
		"previous_model": previous,
		"new_model":      res.NewModel,
		"dimensions":     res.Dimensions,
		"reembedded_at":  rfc3339UTC(res.ReembeddedAt),
	})
}

// bulkReembed answers 202 Accepted: the job is queued, not done.
func (s *Server) bulkReembed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AgentID string   `json:"agent_id"`
		Types   []string `json:"types"`
		Model   string   `json:"model"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Embeddings.BulkReembed(r.Context(), meta(r), commands.BulkReembedRequest(req))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/embeddings/jobs/"+res.JobID)
	writeData(w, http.StatusAccepted, map[string]any{
		"job_id":                 res.JobID,
		"status":                 res.Status,
		"agent_id":               res.AgentID,
		"model":                  res.Model,
		"estimated_memories":     res.EstimatedMemories,
		"estimated_time_seconds": res.EstimatedSeconds,
	})
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Queries.Job(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "job_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, jobBody(v))
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Embeddings.CancelJob(r.Context(), meta(r), chi.URLParam(r, "job_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, jobBody(v))
}

// jobBody is the job resource (docs/decisions.md#jobs): its fields plus agent_id, model,
// memories_total and errors, and the other times.
func jobBody(v job.View) map[string]any {
	errs := make([]map[string]any, len(v.Errors))
	for i, e := range v.Errors {
		entry := map[string]any{"at": rfc3339UTC(e.At), "message": e.Message}
		if e.MemoryID != "" {
			entry["memory_id"] = e.MemoryID
		}
		errs[i] = entry
	}
	var reason any
	if v.Reason != "" {
		reason = v.Reason
	}
	types := make([]string, len(v.Types))
	for i, t := range v.Types {
		types[i] = t.Plural()
	}
	return map[string]any{
		"job_id":             v.JobID,
		"status":             v.Status,
		"agent_id":           v.AgentID,
		"model":              v.Model,
		"dimensions":         v.Dimensions,
		"types":              types,
		"estimated_memories": v.EstimatedMemories,
		"memories_processed": v.MemoriesProcessed,
		"memories_total":     v.MemoriesTotal,
		"errors":             errs,
		"failure_reason":     reason,
		"queued_at":          rfc3339UTC(v.QueuedAt),
		"started_at":         nullTime(v.StartedAt),
		"completed_at":       nullTime(v.CompletedAt),
		"ended_at":           nullTime(v.EndedAt),
	}
}

// nullTime renders a time that may not be set yet: null until it is.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return rfc3339UTC(t)
}

func (s *Server) similarByVector(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AgentID   string    `json:"agent_id"`
		Embedding []float32 `json:"embedding"`
		Limit     *int      `json:"limit"`
		MinScore  *float64  `json:"min_score"`
		Types     []string  `json:"types"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	q := query.SimilarRequest{AgentID: req.AgentID, Embedding: req.Embedding, Limit: defaultSimilarLimit, Types: req.Types}
	if req.Limit != nil {
		q.Limit = *req.Limit
	}
	if req.MinScore != nil {
		q.MinScore = *req.MinScore
	}
	hits, err := s.cfg.Queries.Similar(r.Context(), actor(r.Context()).UserID, q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	results := make([]map[string]any, len(hits))
	for i, h := range hits {
		results[i] = map[string]any{"type": h.Type, "id": h.ID, "score": h.Score, "content": h.Content}
	}
	writeData(w, http.StatusOK, map[string]any{"results": results})
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	entries := s.cfg.Queries.Models(r.Context())
	models := make([]map[string]any, len(entries))
	var def any
	for i, m := range entries {
		models[i] = map[string]any{
			"name":                m.Name,
			"provider":            m.Provider,
			"dimensions":          m.Dimensions,
			"flexible_dimensions": m.FlexibleDimensions,
			"quality":             m.Quality,
			"speed":               m.Speed,
			"cost":                m.Cost,
			"description":         m.Description,
			"available":           m.Available,
			"default":             m.Default,
		}
		if m.Default {
			def = m.Name
		}
	}
	writeData(w, http.StatusOK, map[string]any{"models": models, "default_model": def})
}
