package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/internal/pause"
)

// Defaults of EmbedQueueConfig.
const (
	DefaultEmbedBatch       = 256
	DefaultEmbedPoll        = 30 * time.Second
	DefaultEmbedMinBackoff  = time.Second
	DefaultEmbedMaxBackoff  = 2 * time.Minute
	DefaultEmbedCallTimeout = time.Minute
)

// EmbedQueueConfig holds the dependencies and settings of EmbedQueue.
type EmbedQueueConfig struct {
	Writer   Writer          // required
	Reader   PendingReader   // required
	Embedder domain.Embedder // required
	Logger   *slog.Logger    // nil discards
	// Batch is how many memories one pass reads and one provider call
	// embeds at most.
	Batch int
	// Poll is how often the queue looks for work nobody kicked it for:
	// agents switched to a new model, writes of another node.
	Poll time.Duration
	// MinBackoff and MaxBackoff bound the exponential wait after a
	// provider failure.
	MinBackoff, MaxBackoff time.Duration
	CallTimeout            time.Duration // per provider call
}

// EmbedQueue embeds the memories that writes could not embed (provider
// down) or that need a vector in their agent's new model, and records each
// vector as MemoryEmbedded on the agent's stream. The work list is the
// read model itself, so nothing is lost on restart; several nodes running
// a queue may embed a memory twice, which is harmless (the second event
// records the same fact).
type EmbedQueue struct {
	cfg    EmbedQueueConfig
	logger *slog.Logger
	kick   chan struct{}
}

// NewEmbedQueue checks cfg and fills its defaults.
func NewEmbedQueue(cfg EmbedQueueConfig) (*EmbedQueue, error) {
	if cfg.Writer == nil || cfg.Reader == nil || cfg.Embedder == nil {
		return nil, errors.New("workers: the embedding queue needs a writer, a reader and an embedder")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultEmbedBatch
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultEmbedPoll
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultEmbedMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultEmbedMaxBackoff, cfg.MinBackoff)
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultEmbedCallTimeout
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &EmbedQueue{cfg: cfg, logger: logger.With("component", "embed-queue"), kick: make(chan struct{}, 1)}, nil
}

// Kick wakes the queue to look for work now. It never blocks; while the
// queue waits out a provider failure, the kick takes effect after the wait.
func (q *EmbedQueue) Kick() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// Run works the queue until ctx ends: after every kick, every Poll, and
// with exponential backoff while the provider fails.
func (q *EmbedQueue) Run(ctx context.Context) error {
	var backoff time.Duration
	for {
		n, err := q.Drain(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			backoff = min(max(2*backoff, q.cfg.MinBackoff), q.cfg.MaxBackoff)
			q.logger.WarnContext(ctx, "embedding queue paused", "retry_in", backoff.String(), "embedded", n, "error", err)
			if !pause.For(ctx, backoff) {
				return ctx.Err()
			}
			continue
		}
		if backoff > 0 {
			q.logger.InfoContext(ctx, "embedding queue resumed", "embedded", n)
		}
		backoff = 0
		timer := time.NewTimer(q.cfg.Poll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-q.kick:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Drain embeds pending memories until none is left, and returns how many
// it embedded. It stops at the first provider failure.
func (q *EmbedQueue) Drain(ctx context.Context) (int, error) {
	done := 0
	// seen guards against a memory that stays pending after its vector
	// was recorded: embedding it again could only loop.
	seen := map[string]bool{}
	for {
		pending, err := q.cfg.Reader.PendingEmbeddings(ctx, q.cfg.Batch)
		if err != nil || len(pending) == 0 {
			return done, err
		}
		for _, g := range groupPending(pending) {
			for _, p := range g {
				if key := p.MemoryID + "/" + p.Model + "/" + p.TextHash; seen[key] {
					return done, fmt.Errorf("workers: memory %s is still pending after its vector was recorded", p.MemoryID)
				} else {
					seen[key] = true
				}
			}
			n, err := q.embedGroup(ctx, g)
			done += n
			if err != nil {
				return done, err
			}
		}
	}
}

// groupPending splits pending memories by agent and model, keeping order:
// one provider call and one append per group (in parts if the event store
// refuses it as too large).
func groupPending(pending []memory.PendingEmbedding) [][]memory.PendingEmbedding {
	type key struct {
		user, agent, model string
		dims               int
	}
	index := map[key]int{}
	var groups [][]memory.PendingEmbedding
	for _, p := range pending {
		k := key{p.UserID, p.AgentID, p.Model, p.Dimensions}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return groups
}

// embedGroup embeds the group's memories that still wait for their
// vector and records the vectors; it returns how many it embedded.
func (q *EmbedQueue) embedGroup(ctx context.Context, g []memory.PendingEmbedding) (int, error) {
	first := g[0]
	g, err := q.stillPending(ctx, g)
	if err != nil || len(g) == 0 {
		return 0, err
	}
	texts := make([]string, len(g))
	for i, p := range g {
		text, err := memory.IndexedText(p.Type, p.Content)
		if err != nil {
			return 0, err
		}
		texts[i] = text
	}
	vecs, err := domain.EmbedExactly(ctx, q.cfg.Embedder, q.cfg.CallTimeout, first.Model, first.Dimensions, texts)
	if err != nil {
		return 0, fmt.Errorf("embed %d memories of agent %s with %s: %w", len(g), first.AgentID, first.Model, err)
	}
	payloads := make([]domain.Payload, len(g))
	for i, p := range g {
		payloads[i] = memory.MemoryEmbedded{AgentRef: p.AgentRef, MemoryID: p.MemoryID, Model: p.Model, Dimensions: p.Dimensions,
			TextHash: p.TextHash, Vector: memory.Vector(vecs[i])}
	}
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "embed-queue", UserID: first.UserID}, Source: domain.SourceSystem}
	if err := appendInParts(ctx, q.cfg.Writer, memory.AgentStream(first.UserID, first.AgentID), meta, payloads); err != nil {
		return 0, err
	}
	return len(g), nil
}

// stillPending is the part of a group read earlier that still waits for
// its vector, read again just before the provider call: a batch's later
// groups wait for the earlier groups' calls, and a memory purged,
// forgotten or given a new text in the meantime must not have its text
// sent (a purge acknowledged before this read is never sent; one that
// lands between this read and the call can still be, once, and its
// vector is then dropped by the projections, which ignore a vector of a
// memory they no longer hold).
func (q *EmbedQueue) stillPending(ctx context.Context, g []memory.PendingEmbedding) ([]memory.PendingEmbedding, error) {
	ids := make([]string, len(g))
	for i, p := range g {
		ids[i] = p.MemoryID
	}
	current, err := q.cfg.Reader.MemoriesByID(ctx, g[0].UserID, g[0].AgentID, ids)
	if err != nil {
		return nil, err
	}
	kept := g[:0:0]
	for _, p := range g {
		if v, ok := current[p.MemoryID]; ok && v.TextHash == p.TextHash {
			kept = append(kept, p)
		}
	}
	return kept, nil
}
