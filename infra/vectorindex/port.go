package vectorindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/forgotten"
)

// Port is the embedded domain.VectorIndex: a collection per agent and
// space in an Index, in process. A forgotten memory's points stay in
// their collections (unforgetting needs no vector) and are dropped from
// results: a search asks for as many more hits as the agent has forgotten
// memories, so pages are never short.
type Port struct {
	ix *Index

	forgotten forgotten.Sets

	// writes is read-locked by every write for its whole length and
	// locked by WriteSnapshot while it takes its image, so an image holds
	// each write entirely or not at all (see snapshot.go). Writers do not
	// exclude one another.
	writes sync.RWMutex
	// imageUnbuilt is how many vectors the graphs of the image the port
	// was read from did not cover (ReadSnapshot).
	imageUnbuilt int
	// imageOutdated: that image's body is of an older format, which
	// ReadSnapshot reads at a cost the current one avoids (format 1: every
	// collection's slot table rebuilt at every read).
	imageOutdated bool
}

var _ domain.VectorIndex = (*Port)(nil)

// NewPort returns the port over ix, which it owns from then on.
func NewPort(ix *Index) *Port {
	return &Port{ix: ix}
}

// Index is the underlying index (start-up waits on its graph builds).
func (p *Port) Index() *Index { return p.ix }

// Unbuilt is how many vectors of graph collections no graph covers yet:
// searches scan them exactly until the background build inserts them.
func (p *Port) Unbuilt() int {
	n := 0
	for _, c := range p.ix.Stats().PerCollection {
		if c.Mode == ModeBuilding {
			n += c.Vectors + c.Tombstones - c.Indexed
		}
	}
	return n
}

// ImageUnbuilt is Unbuilt of the image the port was read from, as it was
// read (0 for a port not read from an image): an image saved before its
// graphs were built makes every start from it build them again.
func (p *Port) ImageUnbuilt() int { return p.imageUnbuilt }

// ImageOutdated reports that the image the port was read from is of an
// older body format than WriteSnapshot writes: rewriting it spares every
// later read the older format's cost.
func (p *Port) ImageOutdated() bool { return p.imageOutdated }

// FinishBuilds finishes every graph build now (Index.FinishBuilds).
func (p *Port) FinishBuilds(ctx context.Context) error { return p.ix.FinishBuilds(ctx) }

// agentPrefix prefixes exactly the agent's collections: user and agent ids
// hold no "/" (agent ids are [A-Za-z0-9._-]), whatever the model is called.
func agentPrefix(s domain.IndexScope) string { return s.UserID + "/" + s.AgentID + "/" }

// collectionOf is "user/agent/model@dimensions".
func collectionOf(s domain.IndexScope, space domain.VectorSpace) string {
	return agentPrefix(s) + space.Model + "@" + strconv.Itoa(space.Dimensions)
}

// UpsertVectors implements domain.VectorIndex. Points are grouped by
// collection and stored a group at a time; a group the index refuses is
// retried point by point so only the refused points are left out.
func (p *Port) UpsertVectors(ctx context.Context, points ...domain.VectorPoint) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	groups := map[string][]Item{}
	var order []string
	var rejected []error
	for _, pt := range points {
		if len(pt.Vector) != pt.Space.Dimensions {
			rejected = append(rejected, fmt.Errorf("%w: memory %s: %d-dimensional vector in space %s@%d",
				domain.ErrIndexRejected, pt.MemoryID, len(pt.Vector), pt.Space.Model, pt.Space.Dimensions))
			continue
		}
		c := collectionOf(domain.IndexScope{UserID: pt.UserID, AgentID: pt.AgentID}, pt.Space)
		if _, ok := groups[c]; !ok {
			order = append(order, c)
		}
		groups[c] = append(groups[c], Item{ID: pt.MemoryID, Vector: pt.Vector, Type: pt.Type, Tags: pt.Tags, CreatedAt: pt.CreatedAt})
	}
	for _, c := range order {
		items := groups[c]
		if err := p.ix.Upsert(c, items...); err == nil {
			continue
		}
		for _, it := range items {
			if err := p.ix.Upsert(c, it); err != nil {
				rejected = append(rejected, fmt.Errorf("%w: memory %s in %s: %w", domain.ErrIndexRejected, it.ID, c, err))
			}
		}
	}
	for _, pt := range points {
		p.forgotten.Mark(domain.IndexScope{UserID: pt.UserID, AgentID: pt.AgentID}, pt.MemoryID, pt.Forgotten)
	}
	return errors.Join(rejected...)
}

// SetForgotten implements domain.VectorIndex.
func (p *Port) SetForgotten(ctx context.Context, scope domain.IndexScope, memoryID string, forgotten bool) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	p.forgotten.Mark(scope, memoryID, forgotten)
	return nil
}

// DeleteMemory implements domain.VectorIndex.
func (p *Port) DeleteMemory(ctx context.Context, scope domain.IndexScope, memoryID string) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, c := range p.ix.Collections(agentPrefix(scope)) {
		p.ix.Delete(c, memoryID)
	}
	p.forgotten.Mark(scope, memoryID, false)
	return nil
}

// DeleteAgent implements domain.VectorIndex.
func (p *Port) DeleteAgent(ctx context.Context, scope domain.IndexScope) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, c := range p.ix.Collections(agentPrefix(scope)) {
		p.ix.DropCollection(c)
	}
	p.forgotten.DropAgent(scope)
	return nil
}

// DeleteSpace implements domain.VectorIndex.
func (p *Port) DeleteSpace(ctx context.Context, scope domain.IndexScope, space domain.VectorSpace) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	p.ix.DropCollection(collectionOf(scope, space))
	return nil
}

// DropAll implements domain.VectorIndex.
func (p *Port) DropAll(ctx context.Context) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, c := range p.ix.Collections("") {
		p.ix.DropCollection(c)
	}
	p.forgotten.Clear()
	return nil
}

// SearchVectors implements domain.VectorIndex. Scores are
// max(0, cosine similarity); they fall with rank, so min_score cuts a
// prefix of the page.
func (p *Port) SearchVectors(ctx context.Context, q domain.VectorQuery) ([]domain.IndexHit, error) {
	if q.Limit <= 0 {
		return nil, ctx.Err()
	}
	var hidden map[string]struct{}
	if !q.Filter.IncludeForgotten {
		hidden = p.forgotten.Hidden(q.Scope)
	}
	f := Filter{Types: q.Filter.Types, Tags: q.Filter.Tags, CreatedAfter: q.Filter.CreatedAfter, CreatedBefore: q.Filter.CreatedBefore}
	hits, err := p.ix.Search(ctx, collectionOf(q.Scope, q.Space), q.Vector, q.Limit+len(hidden), f)
	if err != nil {
		if errors.Is(err, ErrDimensionMismatch) || errors.Is(err, ErrInvalidVector) {
			return nil, domain.Invalid("query", "query vector: %v", err)
		}
		return nil, err
	}
	out := make([]domain.IndexHit, 0, min(len(hits), q.Limit))
	for _, h := range hits {
		if len(out) == q.Limit {
			break
		}
		if _, ok := hidden[h.ID]; ok {
			continue
		}
		s := cosineScore(float64(h.Score))
		if s < q.MinScore {
			break
		}
		out = append(out, domain.IndexHit{MemoryID: h.ID, Score: s, CreatedAt: h.CreatedAt})
	}
	return out, nil
}

// cosineScore maps a cosine similarity onto [0, 1]: unrelated and
// opposite texts score 0, identical ones 1.
func cosineScore(cos float64) float64 {
	if math.IsNaN(cos) {
		return 0
	}
	return min(1, max(0, cos))
}

// CountVectors implements domain.VectorIndex.
func (p *Port) CountVectors(ctx context.Context, scope domain.IndexScope, space domain.VectorSpace) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c := collectionOf(scope, space)
	n := p.ix.Len(c)
	for id := range p.forgotten.Hidden(scope) {
		if p.ix.contains(c, id) {
			n--
		}
	}
	return n, nil
}

// Ready implements domain.VectorIndex: an in-process index is always
// ready.
func (p *Port) Ready(ctx context.Context) error { return ctx.Err() }

// Entries is the number of vectors the index holds, forgotten ones
// included, over every agent and space.
func (p *Port) Entries(ctx context.Context) (int, error) { return p.ix.Stats().Vectors, ctx.Err() }
