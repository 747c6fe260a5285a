package commands

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// DefaultMaxSimilarLimit is the largest /embeddings/similar limit.
const DefaultMaxSimilarLimit = 100

// EmbeddingsDeps are what the embedding commands need. Similar may be nil
// until a vector search is wired (similar then fails as internal); Runner
// may be nil (jobs then wait for the next poll of a runner elsewhere).
type EmbeddingsDeps struct {
	Catalog  ModelCatalog
	Memories MemoryReader
	Jobs     JobReader
	Similar  SimilarFinder
	Writer   *EventWriter
	Runner   *JobRunner
	// MaxSimilarLimit bounds the similar limit (default 100).
	MaxSimilarLimit int
	Now             func() time.Time
}

// Embeddings is the embedding and re-embedding use-case surface: generate
// vectors, re-embed memories, run bulk re-embedding jobs, and search by
// vector. Every method that touches an agent is scoped by the caller's user.
type Embeddings struct {
	d EmbeddingsDeps
}

// NewEmbeddings returns the embedding commands over deps.
func NewEmbeddings(deps EmbeddingsDeps) *Embeddings {
	if deps.MaxSimilarLimit <= 0 {
		deps.MaxSimilarLimit = DefaultMaxSimilarLimit
	}
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
// one asked for ("default" names another), so embedTexts does not fit here.
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

// Models lists the catalogue: every model, whether it is available here and
// which one "default" selects.
func (s *Embeddings) Models(ctx context.Context) []domain.CatalogEntry {
	return s.d.Catalog.Catalogue()
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

// SimilarRequest finds an agent's memories nearest to a raw vector. The API
// fills in the defaults (limit 10, min_score 0, every searchable type).
type SimilarRequest struct {
	AgentID   string
	Embedding []float32
	Limit     int
	MinScore  float64
	Types     []string
}

// Similar searches the agent's vectors in its active model. The vector must
// have that model's dimensions.
func (s *Embeddings) Similar(ctx context.Context, userID string, req SimilarRequest) ([]SimilarHit, error) {
	if req.Limit < 1 || req.Limit > s.d.MaxSimilarLimit {
		return nil, domain.Invalid("limit", "limit must be between 1 and %d", s.d.MaxSimilarLimit).WithDetail("limit", s.d.MaxSimilarLimit)
	}
	if math.IsNaN(req.MinScore) || req.MinScore < 0 || req.MinScore > 1 {
		return nil, domain.Invalid("min_score", "min_score must be between 0 and 1")
	}
	types, err := searchableTypes("types", req.Types)
	if err != nil {
		return nil, err
	}
	if len(req.Embedding) == 0 {
		return nil, domain.Invalid("embedding", "embedding is required: an array of numbers")
	}
	a, err := s.agent(ctx, userID, req.AgentID)
	if err != nil {
		return nil, err
	}
	if len(req.Embedding) != a.Dimensions {
		return nil, domain.Invalid("embedding", "embedding has %d dimensions, but agent %s is searched with %s, which has %d",
			len(req.Embedding), a.AgentID, a.EmbeddingModel, a.Dimensions).
			WithDetail("dimensions", len(req.Embedding)).WithDetail("expected_dimensions", a.Dimensions).WithDetail("model", a.EmbeddingModel)
	}
	if err := checkVector("embedding", req.Embedding); err != nil {
		return nil, err
	}
	if s.d.Similar == nil {
		return nil, fmt.Errorf("commands: no vector search is configured")
	}
	return s.d.Similar.Similar(ctx, userID, a.AgentID, req.Embedding, req.Limit, req.MinScore, types)
}

// checkVector refuses a vector that no similarity can be computed with:
// one holding NaN or an infinity, or all zeros.
func checkVector(field string, v []float32) error {
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 || math.IsInf(norm, 0) || math.IsNaN(norm) {
		return domain.Invalid(field, "%s must be a finite, non-zero vector", field)
	}
	return nil
}

// searchableTypes parses a type filter (plural or singular names) that may
// only name searchable types; empty means every searchable type.
func searchableTypes(field string, names []string) ([]memory.Type, error) {
	types, err := memory.ParseTypeFilter(field, names)
	if err != nil {
		return nil, err
	}
	if types == nil {
		return memory.SearchableTypes(), nil
	}
	for _, t := range types {
		if !t.Searchable() {
			return nil, domain.Invalid(field, "%s: %s memories are not searchable and have no embeddings", field, t.Plural())
		}
	}
	return types, nil
}
