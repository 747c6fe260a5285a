package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// EmbeddingsDeps are what the embedding commands need. Runner may be nil
// (jobs then wait for the next poll of a runner elsewhere).
type EmbeddingsDeps struct {
	Catalog  ModelCatalog
	Memories MemoryReadModel
	Jobs     JobReadModel
	Writer   *EventWriter
	Runner   JobRunner
	Now      func() time.Time
}

// Embeddings is the embedding and re-embedding use-case surface: generate
// vectors, re-embed memories and run bulk re-embedding jobs. Every method that touches an agent is scoped by the caller's user.
type Embeddings struct {
	d EmbeddingsDeps
}

// NewEmbeddings returns the embedding commands over deps.
func NewEmbeddings(deps EmbeddingsDeps) *Embeddings {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &Embeddings{d: deps}
}

// GenerateRequest asks for vectors of texts.
type GenerateRequest struct {
	Texts      []string
	Model      string // "default" or "" for the server's default
	Dimensions int    // 0: the model's own size
	// Field names the request field that held the texts, for errors;
	// Single says it held one string rather than an array.
	Field  string
	Single bool
}

// Generate embeds texts in order with one model. The catalog enforces the
// text and batch limits; the result names the model that actually
// produced the vectors.
func (s *Embeddings) Generate(ctx context.Context, req GenerateRequest) (domain.EmbedResult, error) {
	if err := requireTexts(req); err != nil {
		return domain.EmbedResult{}, err
	}
	if req.Dimensions < 0 {
		return domain.EmbedResult{}, domain.Invalid("dimensions", "dimensions must be a positive integer")
	}
	res, err := s.d.Catalog.Embed(ctx, domain.EmbedRequest{Model: req.Model, Texts: req.Texts, Dimensions: req.Dimensions})
	if err != nil {
		return domain.EmbedResult{}, renameTextsField(err, req.Field)
	}
	if err := checkResult(res, len(req.Texts)); err != nil {
		return domain.EmbedResult{}, err
	}
	return res, nil
}

// requireTexts rejects a request without texts or with an empty one: an
// empty text has nothing to embed (OpenAI refuses it too).
func requireTexts(req GenerateRequest) error {
	if len(req.Texts) == 0 {
		if req.Single {
			return domain.Invalid(req.Field, "%s is required", req.Field)
		}
		return domain.Invalid(req.Field, "%s must hold at least one text", req.Field)
	}
	for i, t := range req.Texts {
		if t != "" {
			continue
		}
		if req.Single {
			return domain.Invalid(req.Field, "%s must not be empty", req.Field)
		}
		return domain.Invalid(req.Field, "%s[%d] must not be empty", req.Field, i).WithDetail("index", i)
	}
	return nil
}

// renameTextsField makes the catalog's limit errors, which name the field
// "texts", name the request's own field ("text", "input").
func renameTextsField(err error, field string) error {
	if e, ok := domain.AsError(err); ok && field != "" && e.Details["field"] == "texts" {
		return e.WithDetail("field", field)
	}
	return err
}

// checkResult guards against a provider that breaks its contract: one
// vector per text, each of the stated size. The model may differ from the
// one asked for ("default" names another), so domain.EmbedExactly does not fit here.
func checkResult(res domain.EmbedResult, texts int) error {
	if len(res.Vectors) != texts {
		return fmt.Errorf("commands: provider returned %d vectors for %d texts", len(res.Vectors), texts)
	}
	for i, v := range res.Vectors {
		if len(v) != res.Dimensions {
			return fmt.Errorf("commands: provider returned a vector of %d dimensions at %d; %s has %d", len(v), i, res.Model, res.Dimensions)
		}
	}
	return nil
}

// agent returns the caller's agent, 404 for a missing or foreign one.
func (s *Embeddings) agent(ctx context.Context, userID, agentID string) (memory.AgentView, error) {
	if err := memory.ValidateAgentID(agentID); err != nil {
		return memory.AgentView{}, err
	}
	a, ok, err := s.d.Memories.Agent(ctx, userID, agentID)
	if err != nil {
		return memory.AgentView{}, err
	}
	if !ok {
		return memory.AgentView{}, domain.NotFound("agent")
	}
	return a, nil
}
