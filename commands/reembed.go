package commands

import (
	"context"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// ReembedRequest names one memory to embed again.
type ReembedRequest struct {
	AgentID    string
	MemoryType string // singular or plural name
	MemoryID   string
}

// ReembedResult tells what the re-embedding replaced. PreviousModel is
// empty when the memory's current text had no vector in the agent's model.
type ReembedResult struct {
	MemoryType    memory.Type
	MemoryID      string
	PreviousModel string
	NewModel      string
	Dimensions    int
	ReembeddedAt  time.Time
}

// Reembed embeds one memory's current indexed text again with its agent's
// active model, the one search uses: a vector in any other model would not
// be searched (switching models is what bulk re-embedding is for).
// PreviousModel is the model of the vector search used until now.
func (s *Embeddings) Reembed(ctx context.Context, meta domain.Metadata, req ReembedRequest) (ReembedResult, error) {
	userID := meta.Actor.UserID
	t, ok := memory.ParseType(req.MemoryType)
	if !ok {
		return ReembedResult{}, domain.Invalid("memory_type", "memory_type %q is not a memory type", req.MemoryType)
	}
	if !t.Searchable() {
		return ReembedResult{}, domain.Invalid("memory_type", "%s memories are not searchable and have no embeddings", t)
	}
	if req.MemoryID == "" {
		return ReembedResult{}, domain.Invalid("memory_id", "memory_id is required")
	}
	a, err := s.agent(ctx, userID, req.AgentID)
	if err != nil {
		return ReembedResult{}, err
	}
	m, ok, err := s.d.Memories.Memory(ctx, userID, req.MemoryID)
	if err != nil {
		return ReembedResult{}, err
	}
	// A memory of another agent or type is not this one: 404, as for a
	// memory of another user.
	if !ok || m.AgentID != a.AgentID || m.Type != t {
		return ReembedResult{}, domain.NotFound("memory")
	}
	if m.Forgotten {
		return ReembedResult{}, domain.Conflict("memory_forgotten", "memory %s is forgotten and never searched; it has nothing to re-embed", m.ID)
	}
	text, err := memory.IndexedText(m.Type, m.Content)
	if err != nil {
		return ReembedResult{}, err
	}
	vectors, err := domain.EmbedExactly(ctx, s.d.Catalog, DefaultEmbedTimeout, a.EmbeddingModel, a.Dimensions, []string{text})
	if de, ok := domain.AsError(err); ok && de.Code == domain.CodeProviderRejectedInput {
		// The provider names its input "texts", which this request does
		// not have: what it refused is the text of the memory named.
		return ReembedResult{}, de.WithDetail("field", "memory_id")
	}
	if err != nil {
		return ReembedResult{}, err
	}
	ev := memory.MemoryEmbedded{
		AgentRef: memory.AgentRef{UserID: userID, AgentID: a.AgentID},
		MemoryID: m.ID, Model: a.EmbeddingModel, Dimensions: a.Dimensions,
		TextHash: memory.TextHash(text), Vector: vectors[0],
	}
	if _, err := s.d.Writer.Append(ctx, memory.AgentStream(userID, a.AgentID), domain.ExpectAny, meta, ev); err != nil {
		return ReembedResult{}, err
	}
	out := ReembedResult{MemoryType: t, MemoryID: m.ID, NewModel: a.EmbeddingModel, Dimensions: a.Dimensions, ReembeddedAt: s.d.Now().UTC()}
	if m.Embedding.Status == memory.StatusEmbedded {
		out.PreviousModel = m.Embedding.Model
	}
	return out, nil
}
