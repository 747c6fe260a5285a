package meilitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode"
)

// maxQueryWords is how many query words Meilisearch considers.
const maxQueryWords = 10

type searchRequest struct {
	Q                     string          `json:"q"`
	Filter                json.RawMessage `json:"filter"`
	Limit                 *int            `json:"limit"`
	Offset                int             `json:"offset"`
	ShowRankingScore      bool            `json:"showRankingScore"`
	RankingScoreThreshold *float64        `json:"rankingScoreThreshold"`
	AttributesToRetrieve  []string        `json:"attributesToRetrieve"`
	MatchingStrategy      string          `json:"matchingStrategy"`
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	var req searchRequest
	if !decodeBody(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res, status, e := s.runSearch(r.PathValue("uid"), req)
	if e != nil {
		writeError(w, status, e)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// multiSearch answers POST /multi-search without federation: one result
// list per query, in order; the first failing query fails the request.
func (s *Server) multiSearch(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Federation json.RawMessage `json:"federation"`
		Queries    []struct {
			IndexUID string `json:"indexUid"`
			searchRequest
		} `json:"queries"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if len(body.Federation) > 0 && string(body.Federation) != "null" {
		writeError(w, http.StatusBadRequest, newAPIError("bad_request", "invalid_request", "federated search is not implemented by the test server"))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	results := make([]map[string]any, len(body.Queries))
	for i, q := range body.Queries {
		res, status, e := s.runSearch(q.IndexUID, q.searchRequest)
		if e != nil {
			e.Message = fmt.Sprintf("Inside `.queries[%d]`: %s", i, e.Message)
			writeError(w, status, e)
			return
		}
		res["indexUid"] = q.IndexUID
		results[i] = res
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results})
}

// runSearch runs one search with s.mu held.
func (s *Server) runSearch(uid string, req searchRequest) (map[string]any, int, *apiError) {
	limit := 20
	if req.Limit != nil {
		limit = *req.Limit
	}
	if limit < 0 || req.Offset < 0 {
		return nil, http.StatusBadRequest, newAPIError("invalid_search_limit", "invalid_request", "limit and offset must be non-negative")
	}
	if t := req.RankingScoreThreshold; t != nil && (*t < 0 || *t > 1) {
		return nil, http.StatusBadRequest, newAPIError("invalid_search_ranking_score_threshold", "invalid_request", "rankingScoreThreshold must be in [0, 1]")
	}
	switch req.MatchingStrategy {
	case "", "last", "all", "frequency":
	default:
		return nil, http.StatusBadRequest, newAPIError("invalid_search_matching_strategy", "invalid_request", "Unknown matching strategy `%s`: expected one of `last`, `all`, `frequency`.", req.MatchingStrategy)
	}
	filter, err := parseFilterJSON(req.Filter)
	if err != nil {
		return nil, http.StatusBadRequest, newAPIError("invalid_search_filter", "invalid_request", "%s", err.Error())
	}
	ix := s.indexes[uid]
	if ix == nil {
		return nil, http.StatusNotFound, newAPIError("index_not_found", "invalid_request", "Index `%s` not found.", uid)
	}
	if filter != nil {
		if e := checkFilterable(ix, filter, "invalid_search_filter"); e != nil {
			return nil, http.StatusBadRequest, e
		}
	}
	var docs []*doc
	for _, d := range ix.docs {
		if filter == nil || filter.match(d.values) {
			docs = append(docs, d)
		}
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].seq < docs[j].seq })
	ranked := rank(ix, docs, req.Q, req.MatchingStrategy)
	if t := req.RankingScoreThreshold; t != nil {
		kept := ranked[:0]
		for _, h := range ranked {
			if h.score >= *t {
				kept = append(kept, h)
			}
		}
		ranked = kept
	}
	total := len(ranked)
	// Meilisearch cuts every search to the index's pagination.maxTotalHits
	// (1000 by default), offset included, without an error
	// (crates/meilisearch/src/search/mod.rs, prepare_search: "Make sure
	// that a user can't get more documents than the hard limit").
	offset := min(req.Offset, ix.maxTotalHits)
	limit = min(limit, ix.maxTotalHits-offset)
	ranked = ranked[min(offset, len(ranked)):]
	ranked = ranked[:min(limit, len(ranked))]
	hits := make([]map[string]any, len(ranked))
	for i, h := range ranked {
		hit := map[string]any{}
		for k, v := range pick(h.doc.fields, req.AttributesToRetrieve) {
			hit[k] = v
		}
		if req.ShowRankingScore {
			hit["_rankingScore"] = h.score
		}
		hits[i] = hit
	}
	return map[string]any{
		"hits": hits, "query": req.Q, "limit": limit, "offset": req.Offset,
		"estimatedTotalHits": total, "processingTimeMs": 0,
	}, http.StatusOK, nil
}

type rankedDoc struct {
	doc   *doc
	score float64
}

// rank returns the documents that match the query, best first (see the
// package doc for how this differs from Meilisearch). An empty query is a
// placeholder search: every document, score 1, in insertion order.
func rank(ix *index, docs []*doc, q, strategy string) []rankedDoc {
	words, excluded := queryWords(q)
	if len(words) == 0 {
		var out []rankedDoc
		for _, d := range docs {
			if !containsAny(ix, d, excluded) {
				out = append(out, rankedDoc{doc: d, score: 1})
			}
		}
		return out
	}
	// A document's tokens per searchable attribute, in attribute order.
	tokens := make(map[*doc][]map[string]int, len(docs))
	freq := map[string]int{}
	for _, d := range docs {
		attrs := searchableTokens(ix, d)
		tokens[d] = attrs
		for _, w := range words {
			if attrIndex(attrs, w) >= 0 {
				freq[w]++
			}
		}
	}
	// required lists the word sets tried, all words first; a document
	// qualifies if it holds every word of one of them.
	required := [][]string{words}
	switch strategy {
	case "all":
	case "frequency": // drop the most frequent words first
		byFreq := append([]string(nil), words...)
		sort.SliceStable(byFreq, func(i, j int) bool { return freq[byFreq[i]] < freq[byFreq[j]] })
		for n := len(byFreq) - 1; n >= 1; n-- {
			required = append(required, byFreq[:n])
		}
	default: // "last": drop words from the end of the query
		for n := len(words) - 1; n >= 1; n-- {
			required = append(required, words[:n])
		}
	}
	var out []rankedDoc
	for _, d := range docs {
		attrs := tokens[d]
		if containsAny(ix, d, excluded) || !qualifies(attrs, required) {
			continue
		}
		matched, first, displaced := 0, len(attrs), 0
		for _, w := range words {
			if i := attrIndex(attrs, w); i >= 0 {
				// displaced: how far the matched words stand behind the
				// places they would have if the attribute began with them.
				displaced += max(0, attrs[i][w]-matched)
				matched++
				first = min(first, i)
			}
		}
		score := float64(matched) / float64(len(words)) / (1 + 0.01*float64(displaced))
		if len(attrs) > 1 {
			score *= 1 - 0.1*float64(first)/float64(len(attrs)-1)
		}
		out = append(out, rankedDoc{doc: d, score: score})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return ix.customLess(out[i].doc, out[j].doc)
	})
	return out
}

// customRule is a custom ranking rule "attr:asc" or "attr:desc".
type customRule struct {
	attr string
	desc bool
}

// builtinRules are Meilisearch's built-in ranking rule names (both
// spellings of the attribute rule).
var builtinRules = map[string]bool{"words": true, "typo": true, "proximity": true, "attribute": true, "attributeRank": true, "wordPosition": true, "sort": true, "exactness": true}

func parseRankingRules(rules []string) ([]customRule, *apiError) {
	var out []customRule
	for _, r := range rules {
		if builtinRules[r] {
			continue
		}
		attr, dir, ok := strings.Cut(r, ":")
		if !ok || attr == "" || (dir != "asc" && dir != "desc") {
			return nil, newAPIError("invalid_settings_ranking_rules", "invalid_request", "`%s` ranking rule is invalid. Valid ranking rules are words, typo, sort, proximity, attribute, exactness and custom ranking rules.", r)
		}
		out = append(out, customRule{attr: attr, desc: dir == "desc"})
	}
	return out, nil
}

// customLess orders two documents by the custom ranking rules: numbers
// numerically, strings lexicographically; equal (or incomparable) values
// fall through to the next rule, and last to insertion order.
func (ix *index) customLess(a, b *doc) bool {
	for _, r := range ix.customRules {
		c := compareValues(a.values[r.attr], b.values[r.attr])
		if c == 0 {
			continue
		}
		if r.desc {
			return c > 0
		}
		return c < 0
	}
	return a.seq < b.seq
}

func compareValues(a, b any) int {
	na, aNum := a.(json.Number)
	nb, bNum := b.(json.Number)
	if aNum && bNum {
		fa, err1 := na.Float64()
		fb, err2 := nb.Float64()
		switch {
		case err1 != nil || err2 != nil:
			return 0
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	}
	sa, aStr := a.(string)
	sb, bStr := b.(string)
	if aStr && bStr {
		return strings.Compare(sa, sb)
	}
	return 0
}

func qualifies(attrs []map[string]int, required [][]string) bool {
	for _, set := range required {
		all := true
		for _, w := range set {
			if attrIndex(attrs, w) < 0 {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// attrIndex is the first attribute holding word, or -1.
func attrIndex(attrs []map[string]int, word string) int {
	for i, a := range attrs {
		if _, ok := a[word]; ok {
			return i
		}
	}
	return -1
}

func containsAny(ix *index, d *doc, words []string) bool {
	if len(words) == 0 {
		return false
	}
	attrs := searchableTokens(ix, d)
	for _, w := range words {
		if attrIndex(attrs, w) >= 0 {
			return true
		}
	}
	return false
}

// queryWords splits the query into its first maxQueryWords distinct
// words and the words excluded with a leading '-'.
func queryWords(q string) (words, excluded []string) {
	seen := map[string]bool{}
	for _, field := range strings.Fields(q) {
		negative := strings.HasPrefix(field, "-") && len(field) > 1
		for _, w := range tokenize(strings.TrimPrefix(field, "-")) {
			if negative {
				excluded = append(excluded, w)
				continue
			}
			if !seen[w] && len(words) < maxQueryWords {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	return words, excluded
}

// searchableTokens maps each word of the document's searchable attributes
// to its first position, per attribute, in the order of the setting ("*":
// every string field, by name).
func searchableTokens(ix *index, d *doc) []map[string]int {
	names := ix.searchable
	if len(names) == 1 && names[0] == "*" {
		names = nil
		for k := range d.values {
			names = append(names, k)
		}
		sort.Strings(names)
	}
	out := make([]map[string]int, 0, len(names))
	for _, n := range names {
		set := map[string]int{}
		pos := 0
		for _, s := range stringValues(d.values[n]) {
			for _, w := range tokenize(s) {
				if _, seen := set[w]; !seen {
					set[w] = pos
				}
				pos++
			}
		}
		out = append(out, set)
	}
	return out
}

// stringValues is a field's string, or its array's strings.
func stringValues(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// tokenize lower-cases text and splits it into runs of letters and digits.
func tokenize(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}
