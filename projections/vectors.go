package projections

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/projections/search"
)

// VectorsProjectionName keys the vector projection's checkpoint.
const VectorsProjectionName = "vectors"

// VectorSpace is an embedding model at a size: vectors are comparable only
// within one space.
type VectorSpace struct {
	Model      string
	Dimensions int
}

// VectorAgent is an agent's active space.
type VectorAgent struct {
	UserID, AgentID string
	Model           string
	Dimensions      int
}

// Space is the agent's active space.
func (a VectorAgent) Space() VectorSpace { return VectorSpace{a.Model, a.Dimensions} }

// VectorMemory is what the vector projection keeps per memory: the
// metadata searches filter on and the hash of the current indexed text.
type VectorMemory struct {
	MemoryID        string
	UserID, AgentID string
	Type            memory.Type
	Tags            []string
	CreatedAt       time.Time
	TextHash        string
	Forgotten       bool
}

// StoredVector is one embedding of a memory's text in a space.
type StoredVector struct {
	VectorSpace
	Vector []float32
}

// VectorTx changes the durable vector state inside one transaction.
type VectorTx interface {
	Agent(ctx context.Context, userID, agentID string) (VectorAgent, bool, error)
	PutAgent(ctx context.Context, a VectorAgent) error
	// DeleteAgent removes the agent, its memories and their vectors.
	DeleteAgent(ctx context.Context, userID, agentID string) error
	Memory(ctx context.Context, memoryID string) (VectorMemory, bool, error)
	PutMemory(ctx context.Context, m VectorMemory) error
	// DeleteMemory removes the memory and its vectors.
	DeleteMemory(ctx context.Context, memoryID string) error
	PutVector(ctx context.Context, memoryID string, space VectorSpace, textHash string, v []float32) error
	// CurrentVectors returns the memory's vectors of its current text
	// hash, in every space.
	CurrentVectors(ctx context.Context, memoryID string) ([]StoredVector, error)
	// DeleteSpace removes the agent's vectors in space.
	DeleteSpace(ctx context.Context, userID, agentID string, space VectorSpace) error
}

// LoadedVector is one searchable vector as read at start. Vector is only
// valid during the callback that receives it.
type LoadedVector struct {
	Memory VectorMemory
	VectorSpace
	Vector []float32
}

// VectorStore is the vector projection's durable state (SQLite in the
// embedded server), with its own checkpoint.
type VectorStore interface {
	VectorsCheckpoint(ctx context.Context) (uint64, error)
	// ApplyVectors runs apply for each event after the checkpoint and
	// advances the checkpoint, all in one transaction.
	ApplyVectors(ctx context.Context, events []domain.Event, apply func(context.Context, VectorTx, domain.Event) error) error
	ResetVectors(ctx context.Context) error
	VectorAgents(ctx context.Context) ([]VectorAgent, error)
	// LoadVectors calls fn for every vector whose memory is not forgotten
	// and whose text hash is the memory's current one, in insertion order.
	LoadVectors(ctx context.Context, fn func(LoadedVector) error) error
}

// VectorIndex is the in-memory index the projection feeds and searches
// (infra/vectorindex.Index).
type VectorIndex interface {
	Upsert(collection string, items ...vectorindex.Item) error
	Delete(collection string, ids ...string)
	DropCollection(collection string)
	Collections(prefix string) []string
	Len(collection string) int
	Search(ctx context.Context, collection string, query []float32, k int, f vectorindex.Filter) ([]vectorindex.Hit, error)
}

// Vectors is the vector index projection. The durable store is the truth;
// the in-memory index holds, per user/agent/model collection, the vectors
// of not forgotten memories whose text they were computed from is the
// current one. It is loaded from the store when the projection starts
// (never re-embedded), changed after each committed batch, and serves
// search.VectorIndex.
type Vectors struct {
	store  VectorStore
	index  VectorIndex
	logger *slog.Logger

	loadMu sync.Mutex
	loaded bool

	mu     sync.RWMutex
	agents map[agentKey]VectorAgent
}

type agentKey struct{ user, agent string }

var _ search.VectorIndex = (*Vectors)(nil)

// NewVectors returns the projection; call Load (or let the engine call
// Position) before searching.
func NewVectors(store VectorStore, index VectorIndex, logger *slog.Logger) *Vectors {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Vectors{store: store, index: index, logger: logger, agents: map[agentKey]VectorAgent{}}
}

// Name implements Projection.
func (p *Vectors) Name() string { return VectorsProjectionName }

// Position implements Projection. The engine asks before feeding events,
// so this is where the index is loaded if Load was not called.
func (p *Vectors) Position(ctx context.Context) (uint64, error) {
	if err := p.Load(ctx); err != nil {
		return 0, err
	}
	return p.store.VectorsCheckpoint(ctx)
}

// Reset implements Projection: it empties the store and the index.
func (p *Vectors) Reset(ctx context.Context) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	if err := p.store.ResetVectors(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.index.Collections("") {
		p.index.DropCollection(c)
	}
	p.agents = map[agentKey]VectorAgent{}
	p.loaded = true
	return nil
}

// Apply implements Projection. Index changes are collected while the
// store transaction runs and made only after it commits, so the index never
// shows state the store does not have.
func (p *Vectors) Apply(ctx context.Context, events []domain.Event) error {
	if err := p.Load(ctx); err != nil {
		return err
	}
	var ops []func()
	err := p.store.ApplyVectors(ctx, events, func(ctx context.Context, tx VectorTx, e domain.Event) error {
		return p.apply(ctx, tx, e, &ops)
	})
	if err != nil {
		return err
	}
	for _, op := range ops {
		op()
	}
	return nil
}

// VectorSpace implements search.VectorIndex.
func (p *Vectors) VectorSpace(userID, agentID string) (search.Space, bool) {
	p.mu.RLock()
	a, ok := p.agents[agentKey{userID, agentID}]
	p.mu.RUnlock()
	if !ok {
		return search.Space{}, false
	}
	c := collectionName(userID, agentID, a.Space())
	return search.Space{Collection: c, Model: a.Model, Dimensions: a.Dimensions, Vectors: p.index.Len(c)}, true
}

// SearchVectors implements search.VectorIndex.
func (p *Vectors) SearchVectors(ctx context.Context, space search.Space, query []float32, k int, f search.Filter) ([]search.Hit, error) {
	vf := vectorindex.Filter{Tags: f.Tags, CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore}
	for _, t := range f.Types {
		vf.Types = append(vf.Types, string(t))
	}
	hits, err := p.index.Search(ctx, space.Collection, query, k, vf)
	if err != nil {
		return nil, fmt.Errorf("vectors: search: %w", err)
	}
	out := make([]search.Hit, len(hits))
	for i, h := range hits {
		out[i] = search.Hit{ID: h.ID, Score: float64(h.Score), CreatedAt: h.CreatedAt}
	}
	return out, nil
}

// collectionName is "user/agent/model@dimensions". User and agent ids hold
// no "/" (agent ids are [A-Za-z0-9._-]), so "user/agent/" is a prefix of
// exactly that agent's collections whatever the model is called.
func collectionName(userID, agentID string, space VectorSpace) string {
	return agentPrefix(userID, agentID) + space.Model + "@" + strconv.Itoa(space.Dimensions)
}

func agentPrefix(userID, agentID string) string { return userID + "/" + agentID + "/" }
