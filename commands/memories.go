package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// MemoryReadModel is the memories read model as the memory commands use it
// (infra/sqlite.Memories implements it). Every query is scoped by user;
// missing rows are (zero, false, nil).
type MemoryReadModel interface {
	Agent(ctx context.Context, userID, agentID string) (memory.AgentView, bool, error)
	Agents(ctx context.Context, userID string) ([]memory.AgentView, error)
	Memory(ctx context.Context, userID, id string) (memory.View, bool, error)
	ListMemories(ctx context.Context, q memory.ListQuery) (memory.Page, error)
	// ExistingRefs returns the type of each of ids that is a memory of
	// the user's agent.
	ExistingRefs(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.Type, error)
}

// Embedder turns texts into vectors; domain.EmbeddingProvider (and so
// embed.Catalog) satisfies it.
type Embedder interface {
	Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error)
}

// Kicker is told when a write left memories waiting for their vectors;
// EmbedQueue implements it.
type Kicker interface {
	Kick()
}

// Defaults of MemoriesConfig.
const (
	// DefaultEmbedTimeout bounds one provider call made for a write, so a
	// hanging provider delays a write by at most this before it is
	// accepted with its embeddings pending.
	DefaultEmbedTimeout = 20 * time.Second
	// MaxFutureSkew is how far in the future a client's created_at may be.
	MaxFutureSkew = 5 * time.Minute
)

// MemoriesConfig holds the dependencies and settings of Memories.
type MemoriesConfig struct {
	Writer   *EventWriter    // required
	Reader   MemoryReadModel // required
	Embedder Embedder        // required
	// DefaultModel is the model (Name and Dimensions) an agent is bound
	// to when its first memory creates it. Required.
	DefaultModel domain.EmbeddingModel
	// Queue is kicked when a write leaves memories pending; nil means the
	// queue only finds them when it polls.
	Queue        Kicker
	Logger       *slog.Logger  // nil discards
	EmbedTimeout time.Duration // default DefaultEmbedTimeout
	Now          func() time.Time
}

// Memories handles the agent and memory commands, and answers the memory
// queries of the API from the read model.
//
// Every event of an agent goes to one stream (memory.AgentStream), so a
// batch is one atomic append. Appends use domain.ExpectAny: creating a
// memory decides nothing that concurrent writes could invalidate, and
// patch, forget and purge are validated against the read model, then
// settled in log order (the read model documents how). Two concurrent
// patches of one memory are last-writer-wins in log order: each records
// the whole merged content it computed.
type Memories struct {
	cfg    MemoriesConfig
	logger *slog.Logger
}

// NewMemories checks cfg and fills its defaults.
func NewMemories(cfg MemoriesConfig) (*Memories, error) {
	if cfg.Writer == nil || cfg.Reader == nil || cfg.Embedder == nil {
		return nil, errors.New("commands: memories need a writer, a reader and an embedder")
	}
	if cfg.DefaultModel.Name == "" || cfg.DefaultModel.Dimensions <= 0 {
		return nil, errors.New("commands: memories need the default embedding model and its dimensions")
	}
	if cfg.EmbedTimeout <= 0 {
		cfg.EmbedTimeout = DefaultEmbedTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Memories{cfg: cfg, logger: logger}, nil
}

func (m *Memories) now() time.Time { return m.cfg.Now().UTC() }

// kick tells the queue that something waits for a vector.
func (m *Memories) kick() {
	if m.cfg.Queue != nil {
		m.cfg.Queue.Kick()
	}
}

// userOf is the user a write acts for.
func userOf(meta domain.Metadata) (string, error) {
	if meta.Actor.UserID == "" {
		return "", fmt.Errorf("commands: memory write without a user (actor %s:%s)", meta.Actor.Kind, meta.Actor.ID)
	}
	return meta.Actor.UserID, nil
}

// Get returns one memory of the user, forgotten or not.
func (m *Memories) Get(ctx context.Context, userID, id string) (memory.View, error) {
	v, found, err := m.cfg.Reader.Memory(ctx, userID, id)
	if err != nil {
		return memory.View{}, err
	}
	if !found {
		return memory.View{}, domain.NotFound("memory")
	}
	return v, nil
}

// List returns one page of the user's memories, newest first. Forgotten
// memories are left out unless q.IncludeForgotten.
func (m *Memories) List(ctx context.Context, q memory.ListQuery) (memory.Page, error) {
	if q.AgentID != "" {
		if err := memory.ValidateAgentID(q.AgentID); err != nil {
			return memory.Page{}, err
		}
	}
	switch {
	case q.Limit == 0:
		q.Limit = memory.DefaultListLimit
	case q.Limit < 1 || q.Limit > memory.MaxListLimit:
		return memory.Page{}, domain.Invalid("limit", "limit must be between 1 and %d, got %d", memory.MaxListLimit, q.Limit).
			WithDetail("limit", memory.MaxListLimit)
	}
	return m.cfg.Reader.ListMemories(ctx, q)
}

// Agents lists the user's agents.
func (m *Memories) Agents(ctx context.Context, userID string) ([]memory.AgentView, error) {
	return m.cfg.Reader.Agents(ctx, userID)
}

// DeleteAgent removes the agent and everything in it from every
// projection. A later write to the same agent_id creates it again, empty.
func (m *Memories) DeleteAgent(ctx context.Context, meta domain.Metadata, agentID string) error {
	userID, err := userOf(meta)
	if err != nil {
		return err
	}
	if memory.ValidateAgentID(agentID) != nil {
		return domain.NotFound("agent") // no agent can have that id
	}
	_, found, err := m.cfg.Reader.Agent(ctx, userID, agentID)
	if err != nil {
		return err
	}
	if !found {
		return domain.NotFound("agent")
	}
	ref := memory.AgentRef{UserID: userID, AgentID: agentID}
	_, err = m.cfg.Writer.Append(ctx, memory.AgentStream(userID, agentID), domain.ExpectAny, meta, memory.AgentDeleted{AgentRef: ref})
	return err
}
