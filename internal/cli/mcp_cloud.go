package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/engram-memory/engram/api/httpstatus"
	"github.com/engram-memory/engram/api/mcp"
	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/domain"
)

// cloudBackend is the MCP Backend of `engram mcp` in cloud mode: every tool
// is a call of the API, as the user whose API key the CLI holds, so the
// server applies its own validation, tenancy, limits and audit; this side
// only translates.
type cloudBackend struct {
	api *client.Client
}

var _ mcp.Backend = (*cloudBackend)(nil)

func newCloudBackend(c *client.Client) *cloudBackend { return &cloudBackend{api: c} }

// cloudMCPBackend is the Backend of `engram mcp` on the cloud agent: the
// client of the configured cloud with the CLI's stored API key.
func (c *cli) cloudMCPBackend(cl *cloud) (mcp.Backend, error) {
	if err := cl.requireLogin(); err != nil {
		return nil, err
	}
	return newCloudBackend(client.New(cl.settings.baseURL, cl.creds.APIKey,
		client.WithHTTPClient(&http.Client{Timeout: time.Minute}), client.WithUserAgent("engram-mcp"), client.WithSource(client.SourceMCP))), nil
}

// relayTokens returns ctx collecting the consistency tokens of the API's
// answers, and what hands the last one to the tool call (its result's
// _meta), as a local write's position is.
func relayTokens(ctx context.Context) (context.Context, func()) {
	tracked, tokens := client.TrackTokens(ctx)
	return tracked, func() { mcp.ReportConsistencyToken(ctx, tokens.Last()) }
}

func (b *cloudBackend) AddMemory(ctx context.Context, in mcp.NewMemory) (mcp.Created, error) {
	ctx, relay := relayTokens(ctx)
	defer relay()
	created, err := b.api.CreateMemory(ctx, client.CreateMemoryRequest{
		AgentID: in.AgentID, Type: in.Type, Content: in.Content, Tags: in.Tags, DerivedFrom: in.DerivedFrom,
	})
	if err != nil {
		return mcp.Created{}, cloudError(err)
	}
	return fromCreated(*created), nil
}

func (b *cloudBackend) Search(ctx context.Context, q mcp.SearchQuery) (mcp.SearchResults, error) {
	req := client.SearchRequest{AgentID: q.AgentID, Query: q.Query, Types: q.Types, Mode: q.Mode, Tags: q.Tags}
	if q.Limit != nil {
		req.Limit = *q.Limit
		if req.Limit == 0 {
			// The client leaves a zero limit out, which would get the API's
			// default; any other out-of-range limit gets the API's own
			// refusal of limit 0 (its message names no value).
			req.Limit = -1
		}
	}
	if q.MinScore != nil {
		req.MinScore = *q.MinScore
	}
	var err error
	if req.CreatedAfter, err = searchTime("created_after", q.CreatedAfter); err != nil {
		return mcp.SearchResults{}, err
	}
	if req.CreatedBefore, err = searchTime("created_before", q.CreatedBefore); err != nil {
		return mcp.SearchResults{}, err
	}
	resp, err := b.api.Search(ctx, req)
	if err != nil {
		return mcp.SearchResults{}, cloudError(err)
	}
	out := mcp.SearchResults{Results: make([]mcp.SearchResult, 0, len(resp.Results)), Degraded: resp.Degraded}
	for _, r := range resp.Results {
		content := r.Content
		if len(content) == 0 {
			content = json.RawMessage(`{}`)
		}
		out.Results = append(out.Results, mcp.SearchResult{Type: r.Type, ID: r.ID, Score: r.Score, Content: content, CreatedAt: r.CreatedAt, Strength: r.Strength})
	}
	// The server's time, in microseconds when it reports them.
	out.QueryTimeMS = int64(resp.QueryTimeMS)
	out.QueryTimeUS = out.QueryTimeMS * 1000
	if resp.QueryTimeUS != nil {
		out.QueryTimeUS = *resp.QueryTimeUS
	}
	return out, nil
}

// searchTime parses a time bound the client sends as a time; the message
// is the API's for the same mistake.
func searchTime(field string, v *string) (*time.Time, error) {
	if v == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *v)
	if err != nil {
		return nil, domain.Invalid(field, "%s must be an RFC 3339 timestamp such as 2024-05-01T12:00:00Z", field)
	}
	return &t, nil
}

func (b *cloudBackend) GetMemory(ctx context.Context, id string) (mcp.Memory, error) {
	m, err := b.api.GetMemory(ctx, id)
	if err != nil {
		return mcp.Memory{}, cloudError(err)
	}
	return fromMemory(*m)
}

func (b *cloudBackend) Provenance(ctx context.Context, id string) (mcp.Provenance, error) {
	p, err := b.api.Provenance(ctx, id, client.ProvenanceOptions{Direction: "both", Depth: 1})
	if err != nil {
		return mcp.Provenance{}, cloudError(err)
	}
	return mcp.Provenance{Sources: childRefs(p.Up), Derived: childRefs(p.Down)}, nil
}

// childRefs are the memories one level below the root of a provenance tree.
func childRefs(root *client.ProvenanceNode) []mcp.MemoryRef {
	refs := []mcp.MemoryRef{}
	if root == nil {
		return refs
	}
	for _, n := range root.Nodes {
		refs = append(refs, mcp.MemoryRef{Type: n.Type, ID: n.ID})
	}
	return refs
}

func (b *cloudBackend) ListMemories(ctx context.Context, q mcp.ListQuery) (mcp.MemoryPage, error) {
	page, err := b.api.ListMemories(ctx, client.ListMemoriesOptions{AgentID: q.AgentID, Type: q.Type, Limit: q.Limit, Cursor: q.Cursor})
	if err != nil {
		return mcp.MemoryPage{}, cloudError(err)
	}
	out := mcp.MemoryPage{Items: make([]mcp.Memory, 0, len(page.Memories)), NextCursor: page.NextCursor}
	for _, m := range page.Memories {
		mem, err := fromMemory(m)
		if err != nil {
			return mcp.MemoryPage{}, err
		}
		out.Items = append(out.Items, mem)
	}
	return out, nil
}

func (b *cloudBackend) UpdateMemory(ctx context.Context, id string, version int64, p mcp.Patch) (mcp.Memory, error) {
	ctx, relay := relayTokens(ctx)
	defer relay()
	req := client.UpdateMemoryRequest{Tags: p.Tags, IfMatch: etag(version)}
	if len(p.Content) > 0 {
		req.Content = p.Content
	}
	m, err := b.api.UpdateMemory(ctx, id, req)
	if err != nil {
		return mcp.Memory{}, cloudError(err)
	}
	return fromMemory(*m)
}

func (b *cloudBackend) ForgetMemory(ctx context.Context, id string, version int64) (mcp.Memory, error) {
	ctx, relay := relayTokens(ctx)
	defer relay()
	if _, err := b.api.ForgetMemory(ctx, id, client.ForgetOptions{IfMatch: etag(version)}); err != nil {
		return mcp.Memory{}, cloudError(err)
	}
	// The API answers a forget with its state only; the tool shows the
	// memory, which the API serves as forgotten from now on.
	return b.GetMemory(ctx, id)
}

// etag is the If-Match of a memory version; 0 is none.
func etag(version int64) string {
	if version == 0 {
		return ""
	}
	return `"` + strconv.FormatInt(version, 10) + `"`
}

func (b *cloudBackend) PendingSuggestions(ctx context.Context, agentID string, limit int) ([]mcp.Suggestion, error) {
	list, err := b.api.Suggestions(ctx, agentID, client.SuggestionsOptions{Status: "pending", Limit: limit})
	if err != nil {
		return nil, cloudError(err)
	}
	out := make([]mcp.Suggestion, 0, len(list))
	for _, s := range list {
		sug, err := fromSuggestion(s)
		if err != nil {
			return nil, err
		}
		out = append(out, sug)
	}
	return out, nil
}

func (b *cloudBackend) Suggestion(ctx context.Context, id string) (mcp.Suggestion, error) {
	s, err := b.api.Suggestion(ctx, id)
	if err != nil {
		return mcp.Suggestion{}, cloudError(err)
	}
	return fromSuggestion(*s)
}

func (b *cloudBackend) AcceptSuggestion(ctx context.Context, id string) (mcp.Accepted, error) {
	ctx, relay := relayTokens(ctx)
	defer relay()
	a, err := b.api.AcceptSuggestion(ctx, id, client.AcceptOptions{})
	if err != nil {
		return mcp.Accepted{}, cloudError(err)
	}
	s, err := fromSuggestion(a.Suggestion)
	if err != nil {
		return mcp.Accepted{}, err
	}
	return mcp.Accepted{Suggestion: s, Memory: fromCreated(a.Memory)}, nil
}

func (b *cloudBackend) RejectSuggestion(ctx context.Context, id, reason string) (mcp.Suggestion, error) {
	ctx, relay := relayTokens(ctx)
	defer relay()
	s, err := b.api.RejectSuggestion(ctx, id, reason)
	if err != nil {
		return mcp.Suggestion{}, cloudError(err)
	}
	return fromSuggestion(*s)
}

func (b *cloudBackend) Stats(ctx context.Context, agentID string) (mcp.Stats, error) {
	s, err := b.api.Stats(ctx, agentID)
	if err != nil {
		return mcp.Stats{}, cloudError(err)
	}
	return mcp.Stats{Total: s.Total, ByType: s.ByType, Forgotten: s.Forgotten, Weak: s.Weak, Unprocessed: s.Raw.Unprocessed, Suggestions: s.Suggestions}, nil
}

func (b *cloudBackend) Anxiety(ctx context.Context, agentID string) (mcp.Anxiety, error) {
	r, err := b.api.Anxiety(ctx, agentID)
	if err != nil {
		return mcp.Anxiety{}, cloudError(err)
	}
	out := mcp.Anxiety{Score: r.OverallScore, Level: r.OverallLevel, Recommendations: make([]mcp.Recommendation, 0, len(r.Recommendations))}
	for _, rec := range r.Recommendations {
		out.Recommendations = append(out.Recommendations, mcp.Recommendation{Priority: rec.Priority, Dimension: rec.Dimension, Description: rec.Description})
	}
	return out, nil
}

func (b *cloudBackend) Settings(ctx context.Context, agentID string) (json.RawMessage, error) {
	s, err := b.api.Settings(ctx, agentID)
	if err != nil {
		return nil, cloudError(err)
	}
	return json.Marshal(s)
}

func fromCreated(c client.CreatedMemory) mcp.Created {
	return mcp.Created{Type: c.Type, ID: c.ID, CreatedAt: c.CreatedAt, Embedding: c.Embedding.Status}
}

func fromMemory(m client.Memory) (mcp.Memory, error) {
	content, err := contentMap(m.Content)
	if err != nil {
		return mcp.Memory{}, err
	}
	return mcp.Memory{
		ID: m.ID, AgentID: m.AgentID, Type: m.Type, Content: content, Tags: m.Tags, DerivedFrom: m.DerivedFrom,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt, Forgotten: m.Forgotten, ForgottenAt: m.ForgottenAt,
		Strength: m.Strength, Tier: m.Tier, Protected: m.IsProtected, VerificationCount: m.VerificationCount, Version: m.Version,
	}, nil
}

func fromSuggestion(s client.Suggestion) (mcp.Suggestion, error) {
	content, err := contentMap(s.Content)
	if err != nil {
		return mcp.Suggestion{}, err
	}
	return mcp.Suggestion{
		ID: s.ID, AgentID: s.AgentID, Transition: s.Transition, MemoryType: s.MemoryType, Content: content,
		Confidence: s.Confidence, Sources: s.Sources, Status: s.Status, CreatedAt: s.CreatedAt,
	}, nil
}

// contentMap decodes a content object the API sent.
func contentMap(raw json.RawMessage) (map[string]any, error) {
	content := map[string]any{}
	if len(raw) == 0 {
		return content, nil
	}
	if err := json.Unmarshal(raw, &content); err != nil {
		return nil, fmt.Errorf("cloud: memory content: %w", err)
	}
	return content, nil
}

// cloudError turns the API's failure into the domain error it reported, so
// the tool shows the API's code, message and details unchanged; an API
// that could not be reached is provider_unavailable, code
// cloud_unreachable, as the CLI names it.
func cloudError(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		code := ce.Code
		if code == "" {
			code = "cloud_error"
		}
		return &domain.Error{Kind: kindOfStatus(ce.Status), Code: code, Message: ce.Message, Details: ce.Details, Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &domain.Error{Kind: domain.KindProviderUnavailable, Code: "cloud_unreachable", Message: "the Engram server could not be reached: " + rootCause(err).Error(), Err: err}
}

// kindOfStatus is the error kind the API maps to status (httpstatus.Of, the
// one table), so the error keeps its meaning on this side.
func kindOfStatus(status int) domain.Kind {
	for _, k := range []domain.Kind{
		domain.KindInvalid, domain.KindUnauthorized, domain.KindNotFound, domain.KindConflict,
		domain.KindQuotaExceeded, domain.KindPreconditionFailed, domain.KindGone, domain.KindTooLarge,
		domain.KindUnsupportedMedia, domain.KindRateLimited, domain.KindTimeout, domain.KindProviderUnavailable,
	} {
		if httpstatus.Of(k) == status {
			return k
		}
	}
	return domain.KindInternal
}
