package local

import "sync"

// stopwords are English function words (articles, pronouns, auxiliaries,
// prepositions, conjunctions, the fragments left by splitting contractions
// such as "don't") and interjections ("hey", "wow"). They carry almost no topical signal, and in
// a hashed vector they would only add collision noise to the content words.
// Built at first use.
var stopwords = sync.OnceValue(func() map[string]struct{} {
	return makeSet(`
a about above after again against all am an and any are aren as at be because
been before being below between both but by can cannot could couldn d did didn
do does doesn doing don down during each few for from further had hadn has hasn
have haven having he her here hers herself him himself his how i if in into is
isn it its itself just ll m me more most mustn my myself no nor not now o of off
on once only or other ought our ours ourselves out over own re s same shan she
should shouldn so some such t than that the their theirs them themselves then
there these they this those through to too under until up ve very was wasn we
were weren what when where which while who whom why will with won would wouldn
y you your yours yourself yourselves
hey hi hello oh wow yeah yes yep ok okay um uh hmm haha lol
`)
})

// makeSet builds a lookup set from whitespace-separated words.
func makeSet(words string) map[string]struct{} {
	set := make(map[string]struct{})
	start := -1
	for i := 0; i <= len(words); i++ {
		if i < len(words) && words[i] > ' ' {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			set[words[start:i]] = struct{}{}
			start = -1
		}
	}
	return set
}

func isStopword(w string) bool {
	_, ok := stopwords()[w]
	return ok
}
