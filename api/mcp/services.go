package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/projections/query"
	"github.com/engram-memory/engram/projections/search"
)

// Services are the in-process use cases the REST handlers call, through the
// API's own ports; the Backend over them calls exactly what the matching
// REST handler calls.
type Services struct {
	Memories  api.Memories
	Search    api.Searcher
	Cognition api.Cognition
	Pipeline  api.Pipeline
	// Queries is the read side the REST handlers read (projections/query).
	Queries api.Queries
}

// serviceBackend is the Backend over Services, acting for the caller in
// the context (the HTTP transport's) or else for local (stdio).
type serviceBackend struct {
	svc   Services
	local Caller
	now   func() time.Time
}

// NewServiceBackend returns the Backend over svc. local is the caller when
// the transport authenticates none (stdio): the local stack's user.
func NewServiceBackend(svc Services, local Caller) Backend {
	return &serviceBackend{svc: svc, local: local, now: time.Now}
}

func (b *serviceBackend) caller(ctx context.Context) Caller {
	if c, ok := CallerFrom(ctx); ok {
		return c
	}
	return b.local
}

func (b *serviceBackend) meta(ctx context.Context) domain.Metadata {
	c := b.caller(ctx)
	return domain.Metadata{Actor: c.Actor, RequestID: c.RequestID, Source: domain.SourceMCP}
}

func (b *serviceBackend) user(ctx context.Context) string { return b.caller(ctx).Actor.UserID }

func (b *serviceBackend) AddMemory(ctx context.Context, in NewMemory) (Created, error) {
	c, err := b.svc.Memories.Create(ctx, b.meta(ctx), in.AgentID, commands.MemoryInput{Type: in.Type, Content: in.Content, Tags: in.Tags, DerivedFrom: in.DerivedFrom})
	if err != nil {
		return Created{}, err
	}
	return created(c), nil
}

func created(c commands.CreatedMemory) Created {
	return Created{Type: string(c.Type), ID: c.ID, CreatedAt: c.CreatedAt.UTC(), Embedding: c.Embedding.Status}
}

// Search times the search as POST /v1/search does: from the request's
// validation to its results.
func (b *serviceBackend) Search(ctx context.Context, q SearchQuery) (SearchResults, error) {
	start := time.Now()
	req, err := api.SearchRequest(b.user(ctx), api.SearchBody{
		AgentID: q.AgentID, Query: &q.Query, Limit: q.Limit, Types: q.Types, MinScore: q.MinScore, Mode: q.Mode,
		CreatedAfter: q.CreatedAfter, CreatedBefore: q.CreatedBefore, Tags: q.Tags,
	})
	if err != nil {
		return SearchResults{}, err
	}
	resp, err := b.svc.Search.Search(ctx, req)
	if err != nil {
		return SearchResults{}, err
	}
	out := searchResults(resp)
	took := time.Since(start)
	out.QueryTimeMS, out.QueryTimeUS = took.Milliseconds(), took.Microseconds()
	return out, nil
}

func searchResults(resp search.Response) SearchResults {
	out := SearchResults{Results: make([]SearchResult, len(resp.Results)), Degraded: resp.Degraded}
	for i, r := range resp.Results {
		out.Results[i] = SearchResult{
			Type: string(r.Memory.Type), ID: r.Memory.ID, Score: r.Score, Content: rawContent(r.Memory.Content),
			CreatedAt: r.Memory.CreatedAt.UTC(), Strength: r.Strength,
		}
	}
	return out
}

// rawContent is a stored content object, {} when there is none.
func rawContent(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(`{}`)
	}
	return raw
}

func (b *serviceBackend) GetMemory(ctx context.Context, id string) (Memory, error) {
	v, err := b.svc.Queries.Get(ctx, b.user(ctx), id)
	if err != nil {
		return Memory{}, err
	}
	return memoryOf(v)
}

func (b *serviceBackend) Provenance(ctx context.Context, id string) (Provenance, error) {
	t, err := b.svc.Queries.Provenance(ctx, b.user(ctx), id, query.DirectionBoth, 1)
	if err != nil {
		return Provenance{}, err
	}
	return Provenance{Sources: refs(t.Up), Derived: refs(t.Down)}, nil
}

// refs are the memories one step from a provenance tree's root.
func refs(root *memory.ProvenanceNode) []MemoryRef {
	out := []MemoryRef{}
	if root == nil {
		return out
	}
	for _, n := range root.Nodes {
		out = append(out, MemoryRef{Type: string(n.Type), ID: n.ID})
	}
	return out
}

func (b *serviceBackend) ListMemories(ctx context.Context, q ListQuery) (MemoryPage, error) {
	lq := memory.ListQuery{UserID: b.user(ctx), AgentID: q.AgentID, Limit: q.Limit, Cursor: q.Cursor}
	if q.Type != "" {
		types, err := memory.ParseTypeFilter("type", []string{q.Type})
		if err != nil {
			return MemoryPage{}, err
		}
		lq.Types = types
	}
	page, err := b.svc.Queries.List(ctx, lq)
	if err != nil {
		return MemoryPage{}, err
	}
	out := MemoryPage{Items: make([]Memory, len(page.Memories)), NextCursor: page.NextCursor}
	for i, v := range page.Memories {
		if out.Items[i], err = memoryOf(v); err != nil {
			return MemoryPage{}, err
		}
	}
	return out, nil
}

func (b *serviceBackend) UpdateMemory(ctx context.Context, id string, version int64, p Patch) (Memory, error) {
	v, err := b.svc.Memories.Patch(ctx, b.meta(ctx), id, commands.MemoryPatch{Content: p.Content, Tags: p.Tags, IfMatch: ifMatch(version)})
	if err != nil {
		return Memory{}, err
	}
	return memoryOf(v)
}

func (b *serviceBackend) ForgetMemory(ctx context.Context, id string, version int64) (Memory, error) {
	v, err := b.svc.Memories.Forget(ctx, b.meta(ctx), id, ifMatch(version))
	if err != nil {
		return Memory{}, err
	}
	return memoryOf(v)
}

// ifMatch is the If-Match condition of a version; 0 is none.
func ifMatch(version int64) commands.IfMatch {
	if version == 0 {
		return nil
	}
	return commands.IfMatch{`"` + strconv.FormatInt(version, 10) + `"`}
}

func (b *serviceBackend) PendingSuggestions(ctx context.Context, agentID string, limit int) ([]Suggestion, error) {
	list, err := b.svc.Queries.Suggestions(ctx, b.user(ctx), agentID, processing.Pending, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Suggestion, len(list))
	for i, s := range list {
		if out[i], err = suggestionOf(s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (b *serviceBackend) Suggestion(ctx context.Context, id string) (Suggestion, error) {
	s, err := b.svc.Queries.Suggestion(ctx, b.user(ctx), id)
	if err != nil {
		return Suggestion{}, err
	}
	return suggestionOf(s)
}

func (b *serviceBackend) AcceptSuggestion(ctx context.Context, id string) (Accepted, error) {
	a, err := b.svc.Pipeline.Accept(ctx, b.meta(ctx), id, commands.AcceptOverrides{})
	if err != nil {
		return Accepted{}, err
	}
	s, err := suggestionOf(a.Suggestion)
	return Accepted{Suggestion: s, Memory: created(a.Memory)}, err
}

func (b *serviceBackend) RejectSuggestion(ctx context.Context, id, reason string) (Suggestion, error) {
	s, err := b.svc.Pipeline.Resolve(ctx, b.meta(ctx), id, processing.Rejected, reason)
	if err != nil {
		return Suggestion{}, err
	}
	return suggestionOf(s)
}

func (b *serviceBackend) Stats(ctx context.Context, agentID string) (Stats, error) {
	st, err := b.svc.Queries.Stats(ctx, b.user(ctx), agentID)
	if err != nil {
		return Stats{}, err
	}
	out := Stats{Total: st.Total, ByType: map[string]int{}, Forgotten: st.Forgotten, Weak: st.Weak, Unprocessed: st.Raw.Unprocessed, Suggestions: st.Suggestions}
	for t, n := range st.ByType {
		out.ByType[string(t)] = n
	}
	if out.Suggestions == nil {
		out.Suggestions = map[string]int{}
	}
	return out, nil
}

func (b *serviceBackend) Anxiety(ctx context.Context, agentID string) (Anxiety, error) {
	r, err := b.svc.Queries.Anxiety(ctx, b.user(ctx), agentID)
	if err != nil {
		return Anxiety{}, err
	}
	out := Anxiety{Score: r.OverallScore, Level: r.OverallLevel, Recommendations: make([]Recommendation, len(r.Recommendations))}
	for i, rec := range r.Recommendations {
		out.Recommendations[i] = Recommendation{Priority: rec.Priority, Dimension: rec.Dimension, Description: rec.Description}
	}
	return out, nil
}

func (b *serviceBackend) Settings(ctx context.Context, agentID string) (json.RawMessage, error) {
	v, err := b.svc.Queries.Settings(ctx, b.user(ctx), agentID)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// memoryOf is a memory as the API represents it.
func memoryOf(v memory.View) (Memory, error) {
	content, err := object(v.Content)
	if err != nil {
		return Memory{}, err
	}
	tags, derived := v.Tags, v.DerivedFrom
	if tags == nil {
		tags = []string{}
	}
	if derived == nil {
		derived = []string{}
	}
	return Memory{
		ID: v.ID, AgentID: v.AgentID, Type: string(v.Type), Content: content, Tags: tags, DerivedFrom: derived,
		CreatedAt: v.CreatedAt.UTC(), UpdatedAt: v.UpdatedAt.UTC(), Forgotten: v.Forgotten, ForgottenAt: v.ForgottenAt,
		Strength: v.Strength, Tier: string(v.Tier), Protected: v.Protected, VerificationCount: v.VerificationCount, Version: v.Version,
	}, nil
}

func suggestionOf(s processing.Suggestion) (Suggestion, error) {
	content, err := object(s.Content)
	if err != nil {
		return Suggestion{}, err
	}
	sources := s.Sources
	if sources == nil {
		sources = []string{}
	}
	return Suggestion{
		ID: s.ID, AgentID: s.AgentID, Transition: string(s.Transition), MemoryType: s.MemoryType, Content: content,
		Confidence: s.Confidence, Sources: sources, Status: string(s.Status), CreatedAt: s.CreatedAt.UTC(),
	}, nil
}

// object decodes stored content, a JSON object.
func object(raw json.RawMessage) (map[string]any, error) {
	out := map[string]any{}
	if len(raw) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}
