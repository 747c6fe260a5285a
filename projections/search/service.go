package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Service runs searches. It is safe for concurrent use.
type Service struct {
	keyword  domain.KeywordIndex
	vectors  domain.VectorIndex
	spaces   AgentSpaces
	embedder Embedder
	memories MemoryReader
	opts     Options
	logger   *slog.Logger
}

// New returns a search service over the two indexes, the agents' spaces,
// the query embedder and the memories read model.
func New(keyword domain.KeywordIndex, vectors domain.VectorIndex, spaces AgentSpaces, embedder Embedder, memories MemoryReader, logger *slog.Logger, opts Options) (*Service, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{keyword: keyword, vectors: vectors, spaces: spaces, embedder: embedder, memories: memories, opts: o, logger: logger}, nil
}

// Options returns the effective options (defaults filled in).
func (s *Service) Options() Options { return s.opts }

// Search runs req. Unknown agents (and other users' agents) are NotFound.
// In vector mode an embedding provider that cannot be reached is
// KindProviderUnavailable, one that refuses the query is KindInvalid
// (domain.CodeProviderRejectedInput), and a mode whose index is down is
// KindIndexUnavailable, as is a mode whose index is being rebuilt live
// (Options.Rebuilding); hybrid mode falls back to the side that answers
// and says so in Response.Degraded.
//
// Strength decays at read time, so no index knows which memories are weak
// now: they are left out while the page is hydrated from the read model.
// When that leaves the page short and an index may hold more matches (it
// returned all it was asked for), the search runs again asking each index
// for deepenFactor times as many candidates, until the page is full or
// the indexes run out, so hiding weak memories never shortens a page that
// could be filled.
func (s *Service) Search(ctx context.Context, req Request) (Response, error) {
	if err := validate(&req); err != nil {
		return Response{}, err
	}
	space, ok := s.spaces.AgentSpace(req.UserID, req.AgentID)
	if !ok {
		return Response{}, domain.NotFound("agent " + req.AgentID)
	}
	now := s.opts.Now()
	var query []float32 // embedded once, on the first round that needs it
	for k := s.candidates(req); ; k *= deepenFactor {
		resp, deeper, err := s.searchDepth(ctx, req, space, k, now, &query)
		if err != nil || !deeper {
			return resp, err
		}
	}
}

// deepenFactor is how much more a search that left weak memories out asks
// each index for on its next round.
const deepenFactor = 4

// searchDepth runs req asking each index for k candidates. deeper reports
// a short page that more candidates could fill: memories were left out
// (weak, or forgotten or purged since the index answered), and a side
// returned all k hits it was asked for.
func (s *Service) searchDepth(ctx context.Context, req Request, space domain.VectorSpace, k int, now time.Time, query *[]float32) (resp Response, deeper bool, err error) {
	var vecHits, kwHits []Hit
	switch req.Mode {
	case ModeKeyword:
		kwHits, err = s.searchKeyword(ctx, req, k)
	case ModeVector:
		vecHits, err = s.searchVectors(ctx, req, space, k, query)
	case ModeHybrid:
		vecHits, kwHits, resp.Degraded, err = s.searchBoth(ctx, req, space, k, query)
	}
	if err != nil {
		return Response{}, false, err
	}
	cands := s.opts.forModel(space.Model).fuse(req.Mode, k, vecHits, kwHits)
	rank(cands)
	// Scores are sorted, so min_score cuts a prefix: filtering after the
	// ranking loses nothing that should have been returned.
	n := 0
	for n < len(cands) && cands[n].score >= req.MinScore {
		n++
	}
	var hidden int
	resp.Results, hidden, err = s.hydrate(ctx, req, cands[:n], now)
	more := len(vecHits) == k || len(kwHits) == k
	return resp, err == nil && hidden > 0 && len(resp.Results) < req.Limit && n == len(cands) && more, err
}

func validate(req *Request) error {
	if strings.TrimSpace(req.Query) == "" {
		return domain.Invalid("query", "query is required and must not be blank")
	}
	if n := utf8.RuneCountInString(req.Query); n > MaxQueryRune {
		return domain.Invalid("query", "query is %d characters long; the limit is %d", n, MaxQueryRune)
	}
	if req.Mode == "" {
		req.Mode = ModeHybrid
	}
	switch req.Mode {
	case ModeHybrid, ModeVector, ModeKeyword:
	default:
		return domain.Invalid("mode", "mode must be hybrid, vector or keyword, not %q", req.Mode)
	}
	if req.Limit < 1 || req.Limit > MaxLimit {
		return domain.Invalid("limit", "limit must be between 1 and %d", MaxLimit)
	}
	if !(req.MinScore >= 0 && req.MinScore <= 1) {
		return domain.Invalid("min_score", "min_score must be between 0 and 1")
	}
	for _, t := range req.Filter.Types {
		if !t.Searchable() {
			return domain.Invalid("types", "memories of type %s are not searchable", t.Plural())
		}
	}
	f := req.Filter
	if !f.CreatedAfter.IsZero() && !f.CreatedBefore.IsZero() && !f.CreatedAfter.Before(f.CreatedBefore) {
		return domain.Invalid("created_before", "created_before must be later than created_after")
	}
	return nil
}

func (s *Service) searchKeyword(ctx context.Context, req Request, k int) ([]Hit, error) {
	if err := s.rebuilding(SideKeyword); err != nil {
		return nil, err
	}
	hits, err := s.keyword.SearchKeyword(ctx, domain.KeywordQuery{
		Scope: scope(req), Text: req.Query, Filter: req.Filter.indexFilter(req.IncludeForgotten), Limit: k,
	})
	if err != nil {
		return nil, indexError(ctx, SideKeyword, err)
	}
	return hitsOf(hits), nil
}

// searchVectors embeds the query with the agent's model and searches its
// space. An agent without searchable vectors yields no hits and no
// provider call (unless forgotten memories, which CountVectors leaves
// out, are searched too). *query caches the query's embedding between
// rounds.
func (s *Service) searchVectors(ctx context.Context, req Request, space domain.VectorSpace, k int, query *[]float32) ([]Hit, error) {
	if err := s.rebuilding(SideVector); err != nil {
		return nil, err
	}
	n, err := s.vectors.CountVectors(ctx, scope(req), space)
	if err != nil {
		return nil, indexError(ctx, SideVector, err)
	}
	if n == 0 && !req.IncludeForgotten {
		return nil, nil
	}
	if *query == nil {
		q, err := s.embedder.EmbedQuery(ctx, space.Model, space.Dimensions, req.Query)
		if err != nil {
			return nil, embedError(ctx, space.Model, err)
		}
		*query = q
	}
	hits, err := s.vectors.SearchVectors(ctx, domain.VectorQuery{
		Scope: scope(req), Space: space, Vector: *query, Filter: req.Filter.indexFilter(req.IncludeForgotten), Limit: k,
	})
	if err != nil {
		return nil, indexError(ctx, SideVector, err)
	}
	return hitsOf(hits), nil
}

func scope(req Request) domain.IndexScope {
	return domain.IndexScope{UserID: req.UserID, AgentID: req.AgentID}
}

// errIndexDown marks an index that could not answer, which hybrid mode
// survives on the other side.
var errIndexDown = errors.New("search index unavailable")

// indexError is err of the named index (SideKeyword or SideVector): an index
// that is down becomes KindIndexUnavailable with the code
// <side>_index_unavailable.
func indexError(ctx context.Context, side string, err error) error {
	if ctx.Err() != nil || !errors.Is(err, domain.ErrIndexUnavailable) {
		return fmt.Errorf("search: %s index: %w", side, err)
	}
	return fmt.Errorf("%w: %w", errIndexDown, &domain.Error{
		Kind: domain.KindIndexUnavailable, Code: side + "_index_unavailable",
		Message: fmt.Sprintf("the %s search index is unavailable; try again later", side), Err: err,
	})
}

// errIndexRebuilding marks, besides errIndexDown, an index that is being
// rebuilt live.
var errIndexRebuilding = errors.New("search index being rebuilt")

// rebuilding is the error of a side whose index is being rebuilt live
// (KindIndexUnavailable, code <side>_index_rebuilding), nil otherwise: a
// partial index would answer with some of the memories or none, and say
// nothing of it.
func (s *Service) rebuilding(side string) error {
	if s.opts.Rebuilding == nil || !s.opts.Rebuilding(side) {
		return nil
	}
	return fmt.Errorf("%w: %w: %w", errIndexDown, errIndexRebuilding, &domain.Error{
		Kind: domain.KindIndexUnavailable, Code: side + "_index_rebuilding",
		Message: fmt.Sprintf("the %s search index is being rebuilt and answers again once the rebuild ends; try again later", side),
		Err:     domain.ErrIndexUnavailable,
	})
}

// errEmbed marks embedding failures, which hybrid mode survives.
var errEmbed = errors.New("query embedding failed")

func embedError(ctx context.Context, model string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The provider's own answer: unreachable, or refusing this query (a
	// client's error that asking again would not fix, so not a 503; the
	// provider names its input "texts", the request names it "query").
	if de, ok := domain.AsError(err); ok && de.Code == domain.CodeProviderRejectedInput {
		return fmt.Errorf("%w: %w", errEmbed, de.WithDetail("field", "query"))
	}
	if de, ok := domain.AsError(err); ok && de.Kind == domain.KindProviderUnavailable {
		return fmt.Errorf("%w: %w", errEmbed, err)
	}
	// Any other failure (e.g. the agent's model is no longer configured)
	// means vector search cannot run now.
	return fmt.Errorf("%w: %w", errEmbed, &domain.Error{
		Kind: domain.KindProviderUnavailable, Code: string(domain.KindProviderUnavailable),
		Message: fmt.Sprintf("the embedding model %q of this agent cannot embed the query now", model), Err: err,
	})
}

// candidates is how many hits each side is asked for first.
func (s *Service) candidates(req Request) int {
	if req.Mode != ModeHybrid {
		return req.Limit
	}
	return max(s.opts.MinCandidates, s.opts.CandidateFactor*req.Limit)
}

// searchBoth queries both sides concurrently: the keyword index is queried
// while the query is embedded and the vectors are searched. A side that
// cannot answer (provider or index down) leaves the other alone.
func (s *Service) searchBoth(ctx context.Context, req Request, space domain.VectorSpace, k int, query *[]float32) (vec, kw []Hit, degraded string, err error) {
	type kwResult struct {
		hits []Hit
		err  error
	}
	kwc := make(chan kwResult, 1)
	go func() {
		hits, err := s.searchKeyword(ctx, req, k)
		kwc <- kwResult{hits, err}
	}()
	vec, verr := s.searchVectors(ctx, req, space, k, query)
	kr := <-kwc
	vecDown := verr != nil && (errors.Is(verr, errEmbed) || errors.Is(verr, errIndexDown))
	kwDown := kr.err != nil && errors.Is(kr.err, errIndexDown)
	switch {
	case kr.err != nil && !(kwDown && verr == nil):
		return nil, nil, "", kr.err
	case kwDown:
		s.logger.WarnContext(ctx, "hybrid search degraded to vectors only", "agent_id", req.AgentID, "error", kr.err)
		if errors.Is(kr.err, errIndexRebuilding) {
			return vec, nil, DegradedKeywordRebuilding, nil
		}
		return vec, nil, DegradedKeywordUnavailable, nil
	case vecDown:
		s.logger.WarnContext(ctx, "hybrid search degraded to keyword only", "agent_id", req.AgentID, "error", verr)
		if errors.Is(verr, errIndexRebuilding) {
			return nil, kr.hits, DegradedVectorRebuilding, nil
		}
		return nil, kr.hits, DegradedVectorUnavailable, nil
	case verr != nil:
		return nil, nil, "", verr
	}
	return vec, kr.hits, "", nil
}

// hydrate loads the page's memories from the ranked candidates, best
// first, until it has req.Limit of them. It leaves out (and counts in
// hidden) a memory that vanished or was forgotten between the index query
// and now, and, without req.IncludeWeak, one that is weak or dormant now.
// The first read asks for a page's worth; only when memories were left
// out does it read further down the candidates.
func (s *Service) hydrate(ctx context.Context, req Request, cands []candidate, now time.Time) (out []Result, hidden int, err error) {
	out = make([]Result, 0, min(req.Limit, len(cands)))
	for start := 0; start < len(cands) && len(out) < req.Limit; {
		need := req.Limit - len(out)
		if start > 0 {
			need = max(4*need, 32) // memories are being left out: read further ahead
		}
		chunk := cands[start:min(len(cands), start+need)]
		start += len(chunk)
		ids := make([]string, len(chunk))
		for i, c := range chunk {
			ids[i] = c.hit.ID
		}
		views, err := s.memories.ExcerptsByID(ctx, req.UserID, req.AgentID, ids, req.IncludeForgotten)
		if err != nil {
			return nil, 0, fmt.Errorf("search: hydrate: %w", err)
		}
		for i := range chunk {
			c := &chunk[i]
			v, ok := views[c.hit.ID] // absent if forgotten or gone meanwhile
			strength := v.StrengthAt(now)
			if !ok || (!req.IncludeWeak && !v.Vitality.Forgotten && strength < memory.FadingStrength) {
				hidden++
				continue
			}
			r := Result{Memory: v, Score: c.score, Strength: strength}
			if req.Explain {
				r.Explain = explain(c)
			}
			out = append(out, r)
			if len(out) == req.Limit {
				break
			}
		}
	}
	return out, hidden, nil
}

func explain(c *candidate) *Explain {
	e := &Explain{FusedScore: c.score}
	if c.vRank > 0 {
		v, r := c.vec, c.vRank
		e.VectorScore, e.VectorRank = &v, &r
	}
	if c.kRank > 0 {
		k, r := c.kw, c.kRank
		e.KeywordScore, e.KeywordRank = &k, &r
	}
	return e
}
