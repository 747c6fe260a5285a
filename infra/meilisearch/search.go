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

// maxQueryWords is how many words of a query Meilisearch considers.
const maxQueryWords = 10

// SearchKeyword implements domain.KeywordIndex.
//
// A Meilisearch query matches a document only if it holds the query's
// first word (matchingStrategy "last" drops words from the end, never the
// first), but the port promises what BM25 gives: any document holding any
// query word. So a query of words w1..wn is sent as n queries in one
// /multi-search request, query i being "wi … wn -w1 … -w(i-1)": the
// documents whose first query word present is wi. Each document is in one
// list; its score is its _rankingScore (in [0, 1]) times the share of the
// query's words that query i could match, (n-i+1)/n, so a document
// matching every word outranks one matching fewer. The scope, the filter
// and MinScore (divided by that share, as rankingScoreThreshold) go inside
// every query, so the merged page is never short.
func (ix *Index) SearchKeyword(ctx context.Context, q domain.KeywordQuery) ([]domain.IndexHit, error) {
	words := queryWords(q.Text)
	if q.Limit <= 0 || len(words) == 0 {
		return nil, nil
	}
	filter := searchFilter(q.Scope, q.Filter)
	n := float64(len(words))
	var queries []*ms.SearchRequest
	var shares []float64
	for i := range words {
		share := float64(len(words)-i) / n
		threshold := q.MinScore / share
		if threshold > 1 {
			break // no hit of this query or a later one can reach MinScore
		}
		text := strings.Join(words[i:], " ")
		for _, w := range words[:i] {
			text += " -" + w
		}
		queries = append(queries, &ms.SearchRequest{
			IndexUID:              ix.cfg.IndexName,
			Query:                 text,
			Filter:                filter,
			Limit:                 int64(q.Limit),
			ShowRankingScore:      true,
			RankingScoreThreshold: threshold,
			AttributesToRetrieve:  []string{attrID, attrCreatedAt},
			MatchingStrategy:      ms.Last,
		})
		shares = append(shares, share)
	}
	if len(queries) == 0 {
		return nil, nil
	}
	resp, err := ix.multiSearch(ctx, queries)
	if err != nil {
		return nil, err
	}
	if len(resp.Results) != len(queries) {
		return nil, fmt.Errorf("meilisearch: search: %d results for %d queries", len(resp.Results), len(queries))
	}
	best := map[string]domain.IndexHit{}
	for i, res := range resp.Results {
		for _, h := range res.Hits {
			var d struct {
				ID           string  `json:"id"`
				CreatedAt    int64   `json:"created_at"`
				RankingScore float64 `json:"_rankingScore"`
			}
			if err := h.DecodeInto(&d); err != nil {
				return nil, fmt.Errorf("meilisearch: search: decode hit: %w", err)
			}
			// Typo tolerance can put a document in two lists; keep its best.
			hit := domain.IndexHit{MemoryID: d.ID, Score: d.RankingScore * shares[i], CreatedAt: unixNanos(d.CreatedAt)}
			if cur, ok := best[d.ID]; !ok || hit.Score > cur.Score {
				best[d.ID] = hit
			}
		}
	}
	hits := make([]domain.IndexHit, 0, len(best))
	for _, h := range best {
		hits = append(hits, h)
	}
	sort.Slice(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.MemoryID < b.MemoryID
	})
	return hits[:min(len(hits), q.Limit)], nil
}

// multiSearch runs the queries once the index is set up. An index that
// lost its settings (see settingsLost) has them re-applied and the search
// runs once more, so it does not fail until the next restart.
func (ix *Index) multiSearch(ctx context.Context, queries []*ms.SearchRequest) (*ms.MultiSearchResponse, error) {
	for attempt := 0; ; attempt++ {
		if err := ix.setup(ctx); err != nil {
			return nil, err
		}
		resp, err := ix.client.MultiSearchWithContext(ctx, &ms.MultiSearchRequest{Queries: queries})
		if err == nil {
			return resp, nil
		}
		if !settingsLost(err) || attempt > 0 {
			return nil, ix.failed(ctx, "search", err)
		}
		_ = ix.failed(ctx, "search", err) // marks the index for setup
	}
}

// queryWords is the query's first maxQueryWords distinct words, lower
// case: runs of letters and digits. Splitting the text into words is also
// what keeps it from being read as query syntax (Meilisearch reads `"…"`
// as a phrase and a leading '-' as "must not contain").
func queryWords(text string) []string {
	var words []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		if !seen[w] && len(words) < maxQueryWords {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

// scopeFilter confines a query or a deletion to one agent.
func scopeFilter(s domain.IndexScope) string {
	return attrUser + " = " + quote(s.UserID) + " AND " + attrAgent + " = " + quote(s.AgentID)
}

// searchFilter is the scope, "not forgotten" (unless f includes
// forgotten memories), and f, all ANDed.
func searchFilter(s domain.IndexScope, f domain.IndexFilter) string {
	parts := []string{scopeFilter(s)}
	if !f.IncludeForgotten {
		parts = append(parts, attrForgotten+" = false")
	}
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
