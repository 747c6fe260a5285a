package commands

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
)

// MemoryReadModel is the memories read model as the commands decide on it
// (infra/sqlite.Memories implements it). Every query is scoped by user;
// missing rows are (zero, false, nil).
type MemoryReadModel interface {
	Agent(ctx context.Context, userID, agentID string) (memory.AgentView, bool, error)
	Memory(ctx context.Context, userID, id string) (memory.View, bool, error)
	ListMemories(ctx context.Context, q memory.ListQuery) (memory.Page, error)
	// ExistingRefs returns the type of each of ids that is a memory of
	// the user's agent.
	ExistingRefs(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.Type, error)
	// Usage is what the user stores, as the quotas count it.
	Usage(ctx context.Context, userID string) (memory.Usage, error)
	// StreamVersion is the version of the agent stream the read model
	// shows (domain.ExpectNoStream for none).
	StreamVersion(ctx context.Context, stream string) (int64, error)
	// Settings is the agent's stack settings (defaults until changed);
	// found is false when the user has no such agent.
	Settings(ctx context.Context, userID, agentID string) (agentsettings.View, bool, error)
	// CountMemories counts the agent's searchable, unforgotten memories of
	// types (nil: every searchable type).
	CountMemories(ctx context.Context, userID, agentID string, types []memory.Type) (int, error)
}

// Kicker is told when a write left memories waiting for their vectors;
// workers.EmbedQueue implements it.
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
	// DefaultAgentAttempts bounds how often a write decides again because
	// other writes reached its agent stream first (409 concurrent_writes).
	DefaultAgentAttempts = 100
)

// MemoriesConfig holds the dependencies and settings of Memories.
type MemoriesConfig struct {
	Writer   *EventWriter    // required
	Reader   MemoryReadModel // required
	Embedder domain.Embedder // required
	// DefaultModel is the model (Name and Dimensions) an agent is bound
	// to when its first memory creates it. Required.
	DefaultModel domain.EmbeddingModel
	// Queue is kicked when a write leaves memories pending; nil means the
	// queue only finds them when it polls.
	Queue        Kicker
	Logger       *slog.Logger  // nil discards
	EmbedTimeout time.Duration // default DefaultEmbedTimeout
	// Quotas bound what each user stores; the zero value is no limit.
	Quotas memory.Quotas
	Now    func() time.Time
	// DecidesOn names the projections that Reader reads. A create holds
	// its user's lock only until they have applied its events, so the
	// user's next create decides and appends while the other projections
	// (indexes, audit) still apply this one; it answers once all have.
	// Empty: the lock is held until every projection has applied it.
	DecidesOn []string
	// AgentAttempts bounds how often a write, and a sync push or import,
	// decides again because other writes reached its agent stream first
	// before it answers 409 concurrent_writes (0: DefaultAgentAttempts).
	AgentAttempts int
}

// Memories handles the agent and memory commands; their queries are
// projections/query's.
//
// Every event of an agent goes to one stream (memory.AgentStream), so a
// batch is one atomic append. A command decides on the read model and
// appends at the agent stream version that read model shows
// (appendToAgent): if anything reached the stream in between, it decides
// again on the new state. So a check (If-Match, quotas, derived_from, the
// agent's existence) holds for exactly the state its events follow.
// Patches record only the fields they change (memory.MemoryPatched).
//
// Quotas per user span several agent streams; writes that can grow them
// (create, patch) also take a per-user lock, so on one server concurrent
// writes never overshoot a quota. Several servers over one log can each
// admit one write at the limit (docs/api.md#quotas).
type Memories struct {
	cfg       MemoriesConfig
	logger    *slog.Logger
	userLocks [userLockStripes]sync.Mutex
}

// userLockStripes is how many per-user locks exist; users share one by
// hash, which bounds the memory the locks take.
const userLockStripes = 64

// lockUser serializes the quota-bound writes of one user and returns the
// unlock.
func (m *Memories) lockUser(userID string) func() {
	h := fnv.New32a()
	h.Write([]byte(userID))
	mu := &m.userLocks[h.Sum32()%userLockStripes]
	mu.Lock()
	return mu.Unlock
}

// appendToAgent decides and appends at the agent stream's version: it
// reads the version the read model shows, runs decide (which reads its
// state from the same read model and returns the events to record; none
// means nothing changes) and appends expecting that version. When another
// write came first it waits until the read model has applied the log and
// decides again.
func (m *Memories) appendToAgent(ctx context.Context, meta domain.Metadata, userID, agentID string, decide func() ([]domain.Payload, error)) error {
	position, err := m.appendToAgentSeenBy(ctx, meta, userID, agentID, nil, decide)
	if err != nil || position == 0 {
		return err
	}
	return m.cfg.Writer.Await(ctx, position)
}

// appendToAgentSeenBy is appendToAgent returning once the named
// projections (all when none are named) have applied the events; it
// returns their last position (0 if decide recorded nothing), which the
// caller must Await before answering.
func (m *Memories) appendToAgentSeenBy(ctx context.Context, meta domain.Metadata, userID, agentID string, names []string, decide func() ([]domain.Payload, error)) (uint64, error) {
	stream := memory.AgentStream(userID, agentID)
	for attempt := 1; ; attempt++ {
		version, err := m.cfg.Reader.StreamVersion(ctx, stream)
		if err != nil {
			return 0, err
		}
		payloads, err := decide()
		if err != nil || len(payloads) == 0 {
			return 0, err
		}
		res, err := m.cfg.Writer.AppendSeenBy(ctx, stream, version, meta, names, payloads...)
		if !errors.Is(err, domain.ErrWrongExpectedVersion) {
			return res.LastPosition, err
		}
		if attempt == m.cfg.AgentAttempts {
			return 0, domain.Conflict("concurrent_writes", "agent %s changed %d times while this write was being decided; retry the request", agentID, attempt)
		}
		m.logger.DebugContext(ctx, "agent stream moved on; deciding again", "agent_id", agentID, "attempt", attempt)
		// Nothing of this request is stored yet: the wait neither names the
		// head as this request's position nor, when it gives up, claims a
		// write (CatchUp fails with domain.KindNotStored).
		if err := m.cfg.Writer.CatchUp(ctx, names...); err != nil {
			return 0, err
		}
	}
}

// NewMemories checks cfg and fills its defaults.
func NewMemories(cfg MemoriesConfig) (*Memories, error) {
	if cfg.Writer == nil || cfg.Reader == nil || cfg.Embedder == nil {
		return nil, errors.New("commands: memories need a writer, a reader and an embedder")
	}
	if cfg.DefaultModel.Name == "" || cfg.DefaultModel.Dimensions <= 0 {
		return nil, errors.New("commands: memories need the default embedding model and its dimensions")
	}
	if q := cfg.Quotas; q.MemoriesPerAgent < 0 || q.AgentsPerUser < 0 || q.TextBytesPerUser < 0 {
		return nil, fmt.Errorf("commands: quotas must be 0 (no limit) or more, got %+v", q)
	}
	if cfg.EmbedTimeout <= 0 {
		cfg.EmbedTimeout = DefaultEmbedTimeout
	}
	if cfg.AgentAttempts <= 0 {
		cfg.AgentAttempts = DefaultAgentAttempts
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

// get returns one memory of the user, forgotten or not, with its strength
// now: the state a command decides on.
func (m *Memories) get(ctx context.Context, userID, id string) (memory.View, error) {
	v, found, err := m.cfg.Reader.Memory(ctx, userID, id)
	if err != nil {
		return memory.View{}, err
	}
	if !found {
		return memory.View{}, domain.NotFound("memory")
	}
	v.ApplyStrength(m.now())
	return v, nil
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
	ref := memory.AgentRef{UserID: userID, AgentID: agentID}
	return m.appendToAgent(ctx, meta, userID, agentID, func() ([]domain.Payload, error) {
		_, found, err := m.cfg.Reader.Agent(ctx, userID, agentID)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, domain.NotFound("agent")
		}
		return []domain.Payload{memory.AgentDeleted{AgentRef: ref}}, nil
	})
}
