package meilisearch

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/engram-memory/engram/domain"
	ms "github.com/meilisearch/meilisearch-go"
)

// SearchKeyword implements domain.KeywordIndex. The scope, the filter and
// MinScore (rankingScoreThreshold) all go inside Meilisearch's query, so a
// page is never short; scores are Meilisearch's _rankingScore, already in
// [0, 1]. A query with no letter or digit matches nothing (Meilisearch
// would answer it with every document).
func (ix *Index) SearchKeyword(ctx context.Context, q domain.KeywordQuery) ([]domain.IndexHit, error) {
	text := plainQuery(q.Text)
	if q.Limit <= 0 || text == "" {
		return nil, nil
	}
	if err := ix.setup(ctx); err != nil {
		return nil, err
	}
	resp, err := ix.index.SearchWithContext(ctx, text, &ms.SearchRequest{
		Filter:                searchFilter(q.Scope, q.Filter),
		Limit:                 int64(q.Limit),
		ShowRankingScore:      true,
		RankingScoreThreshold: q.MinScore,
		AttributesToRetrieve:  []string{attrID, attrCreatedAt},
		// Drop the most frequent query words first when too few documents
		// match them all: the rare words carry the meaning (BM25's idf).
		MatchingStrategy: ms.Frequency,
	})
	if err != nil {
		return nil, classify(ctx, "search", err)
	}
	hits := make([]domain.IndexHit, 0, len(resp.Hits))
	for _, h := range resp.Hits {
		var d struct {
			ID           string  `json:"id"`
			CreatedAt    int64   `json:"created_at"`
			RankingScore float64 `json:"_rankingScore"`
		}
		if err := h.DecodeInto(&d); err != nil {
			return nil, fmt.Errorf("meilisearch: search: decode hit: %w", err)
		}
		hits = append(hits, domain.IndexHit{MemoryID: d.ID, Score: d.RankingScore, CreatedAt: unixNanos(d.CreatedAt)})
	}
	// Meilisearch orders equal scores by its own internal ids; the port
	// wants newer first, then by id.
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.MemoryID < b.MemoryID
	})
	return hits, nil
}

// plainQuery makes any text a plain word query: Meilisearch reads `"…"` as
// a phrase and a leading '-' as "must not contain", and the port says text
// is never query syntax. Words without a letter or digit are dropped.
func plainQuery(text string) string {
	words := strings.FieldsFunc(text, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
	kept := words[:0]
	for _, w := range words {
		w = strings.TrimLeft(w, "-")
		if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) >= 0 {
			kept = append(kept, w)
		}
	}
	return strings.Join(kept, " ")
}

// scopeFilter confines a query or a deletion to one agent.
func scopeFilter(s domain.IndexScope) string {
	return attrUser + " = " + quote(s.UserID) + " AND " + attrAgent + " = " + quote(s.AgentID)
}

// searchFilter is the scope, "not forgotten", and f, all ANDed.
func searchFilter(s domain.IndexScope, f domain.IndexFilter) string {
	parts := []string{scopeFilter(s), attrForgotten + " = false"}
	if len(f.Types) > 0 {
		quoted := make([]string, len(f.Types))
		for i, t := range f.Types {
			quoted[i] = quote(t)
		}
		parts = append(parts, attrType+" IN ["+strings.Join(quoted, ", ")+"]")
	}
	for _, t := range f.Tags {
		parts = append(parts, attrTags+" = "+quote(t))
	}
	if !f.CreatedAfter.IsZero() {
		parts = append(parts, attrCreatedAt+" >= "+strconv.FormatInt(f.CreatedAfter.UnixNano(), 10))
	}
	if !f.CreatedBefore.IsZero() {
		parts = append(parts, attrCreatedAt+" < "+strconv.FormatInt(f.CreatedBefore.UnixNano(), 10))
	}
	return strings.Join(parts, " AND ")
}

// quote is a filter string literal: Meilisearch's filter syntax escapes
// '"' and '\' with a backslash inside double quotes.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
