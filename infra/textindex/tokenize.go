package textindex

import (
	"strings"
	"sync"
	"unicode"

	"github.com/engram-memory/engram/infra/stem"
)

// tokenize splits text into terms: lower-cased runs of letters and digits
// (so "deploy-v2.4.7-hotfix" yields deploy, v2, 4, 7, hotfix), Porter
// stemmed (so "deployed" and "deploying" meet). A whitespace-separated
// chunk made of two or more words of two or more characters joined by
// punctuation is also an identifier and yields one more term, the words
// joined by "_" unstemmed: "deploy_v2_4_7_hotfix". It is rare, so an exact
// identifier match ranks first, while its parts still match alone.
// Possessives and contractions ("caroline's", "don't") are not
// identifiers. English stop words are skipped, in documents and queries
// alike (as the bench's BM25 baseline does). emit is called for every term
// in text order.
func tokenize(text string, emit func(term string)) {
	stop := stopWords()
	var words []string
	for _, chunk := range strings.Fields(text) {
		words = words[:0]
		long := 0
		for _, w := range strings.FieldsFunc(chunk, notWordRune) {
			w = strings.ToLower(w)
			words = append(words, w)
			if len([]rune(w)) > 1 {
				long++
			}
		}
		for _, w := range words {
			if _, isStop := stop[w]; !isStop {
				emit(stem.Porter(w))
			}
		}
		if long >= 2 {
			emit(strings.Join(words, "_"))
		}
	}
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }

// stopWords is a conventional English list, the same as the bench's BM25
// baseline. Besides carrying little meaning they are what makes a question
// match most of an agent's memories, which is what ranking costs time on.
// Built at first use, not at every engram process's start.
var stopWords = sync.OnceValue(func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are aren as at
be because been before being below between both but by can cannot could couldn d did didn do does
doesn doing don down during each few for from further had hadn has hasn have haven having he her
here hers herself him himself his how i if in into is isn it its itself just ll m me more most
mustn my myself no nor not now o of off on once only or other ought our ours ourselves out over own
re s same shan she should shouldn so some such t than that the their theirs them themselves then
there these they this those through to too under until up ve very was wasn we were weren what when
where which while who whom why will with won would wouldn y you your yours yourself yourselves`) {
		m[w] = struct{}{}
	}
	return m
})
