package textindex

import (
	"context"
	"math"
	"sync"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/forgotten"
)

// DefaultSaturation is K in the port's score x/(x+K), x the BM25 relevance;
// see search.DefaultKeywordSaturation, which it equals.
const DefaultSaturation = 8

// Port is the embedded domain.KeywordIndex: one collection per agent in
// an Index, in process. A forgotten document stays in its collection (so
// unforgetting it needs no text) and is dropped from results: a search
// asks the collection for as many more hits as it holds forgotten
// documents, so pages are never short.
type Port struct {
	ix         *Index
	saturation float64

	forgotten forgotten.Sets

	// writes is read-locked by every write for its whole length and
	// locked by WriteSnapshot while it captures its image, so an image
	// holds each write entirely or not at all (see snapshot.go). Writers
	// do not exclude one another. snapshotMu makes images one at a time:
	// a collection's imaged and lent flags belong to the image in flight.
	writes     sync.RWMutex
	snapshotMu sync.Mutex
}

var _ domain.KeywordIndex = (*Port)(nil)

// NewPort returns an empty embedded keyword index. saturation is K in the
// score mapping (0 takes DefaultSaturation).
func NewPort(opts Options, saturation float64) *Port {
	if saturation <= 0 || math.IsNaN(saturation) {
		saturation = DefaultSaturation
	}
	return &Port{ix: New(opts), saturation: saturation}
}

// collectionOf names an agent's collection; user and agent ids hold no
// "/", so "user/agent" is unambiguous.
func collectionOf(s domain.IndexScope) string { return s.UserID + "/" + s.AgentID }

// UpsertDocuments implements domain.KeywordIndex.
func (p *Port) UpsertDocuments(ctx context.Context, docs ...domain.KeywordDocument) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, d := range docs {
		scope := domain.IndexScope{UserID: d.UserID, AgentID: d.AgentID}
		p.ix.Upsert(collectionOf(scope), Doc{ID: d.MemoryID, Text: d.Text, Meta: d.Meta, Type: d.Type, Tags: d.Tags, CreatedAt: d.CreatedAt})
		p.forgotten.Mark(scope, d.MemoryID, d.Forgotten)
	}
	return nil
}

// SetForgotten implements domain.KeywordIndex.
func (p *Port) SetForgotten(ctx context.Context, scope domain.IndexScope, memoryID string, forgotten bool) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if forgotten && !p.ix.contains(collectionOf(scope), memoryID) {
		return nil
	}
	p.forgotten.Mark(scope, memoryID, forgotten)
	return nil
}

// DeleteMemory implements domain.KeywordIndex.
func (p *Port) DeleteMemory(ctx context.Context, scope domain.IndexScope, memoryID string) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	p.ix.Delete(collectionOf(scope), memoryID)
	p.forgotten.Mark(scope, memoryID, false)
	return nil
}

// DeleteAgent implements domain.KeywordIndex.
func (p *Port) DeleteAgent(ctx context.Context, scope domain.IndexScope) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	p.forgotten.DropAgent(scope)
	p.ix.DropCollection(collectionOf(scope))
	return nil
}

// DropAll implements domain.KeywordIndex.
func (p *Port) DropAll(ctx context.Context) error {
	p.writes.RLock()
	defer p.writes.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	p.forgotten.Clear()
	for _, c := range p.ix.Collections("") {
		p.ix.DropCollection(c)
	}
	return nil
}

// SearchKeyword implements domain.KeywordIndex. The score is x/(x+K) of
// the BM25 relevance x: monotone, so min_score cuts a prefix of the page.
func (p *Port) SearchKeyword(ctx context.Context, q domain.KeywordQuery) ([]domain.IndexHit, error) {
	f := Filter{Types: q.Filter.Types, Tags: q.Filter.Tags, CreatedAfter: q.Filter.CreatedAfter, CreatedBefore: q.Filter.CreatedBefore}
	if q.Limit <= 0 {
		return nil, nil
	}
	var hidden map[string]struct{}
	if !q.Filter.IncludeForgotten {
		hidden = p.forgotten.Hidden(q.Scope)
	}
	hits, err := p.ix.Search(ctx, collectionOf(q.Scope), q.Text, q.Limit+len(hidden), f)
	out := make([]domain.IndexHit, 0, min(len(hits), q.Limit))
	for _, h := range hits {
		if len(out) == q.Limit {
			break
		}
		if _, ok := hidden[h.ID]; ok {
			continue
		}
		s := p.score(h.Score)
		if s < q.MinScore {
			break
		}
		out = append(out, domain.IndexHit{MemoryID: h.ID, Score: s, CreatedAt: h.CreatedAt})
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (p *Port) score(bm25 float64) float64 {
	switch {
	case bm25 <= 0 || math.IsNaN(bm25):
		return 0
	case math.IsInf(bm25, 1):
		return 1
	}
	return bm25 / (bm25 + p.saturation)
}

// Ready implements domain.KeywordIndex: an in-process index is always
// ready.
func (p *Port) Ready(ctx context.Context) error { return ctx.Err() }

// Len is the number of searchable (not forgotten) documents of the agent.
func (p *Port) Len(scope domain.IndexScope) int {
	return p.ix.Len(collectionOf(scope)) - p.forgotten.Count(scope)
}

// Entries is the number of documents the index holds, forgotten ones
// included, over every agent.
func (p *Port) Entries(ctx context.Context) (int, error) { return p.ix.Total(), ctx.Err() }
