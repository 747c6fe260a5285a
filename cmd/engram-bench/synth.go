package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// synth makes synthetic memories and queries whose vectors are not i.i.d.
// noise: words follow a Zipf law like real text, memories cluster around
// topics (a topic has its own words and its own service identifiers), and
// some carry identifiers like svc-123-deploy that keyword search must hit
// exactly. Deterministic for a seed.
type synth struct {
	rng    *rand.Rand
	vocab  []string // by frequency rank
	zipf   *rand.Zipf
	topics []topic
}

type topic struct {
	words []string
	ids   []string
}

const (
	vocabSize     = 5000
	topicCount    = 40
	wordsPerTopic = 25
	idsPerTopic   = 12
)

var (
	onsets = []string{"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "ch", "cl", "dr", "gr", "pl", "sh", "st", "tr"}
	nuclei = []string{"a", "e", "i", "o", "u", "ai", "ea", "io", "ou"}
	codas  = []string{"", "", "n", "r", "s", "t", "l", "m", "ck", "nd", "st"}
	idVerb = []string{"deploy", "rollback", "restart", "migrate", "scale", "alert", "backup", "hotfix"}
	idKind = []string{"svc", "api", "db", "job", "queue", "cache"}
)

func newSynth(seed uint64) *synth {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := &synth{rng: rng}
	seen := map[string]bool{}
	for len(s.vocab) < vocabSize {
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			b.WriteString(onsets[rng.IntN(len(onsets))] + nuclei[rng.IntN(len(nuclei))] + codas[rng.IntN(len(codas))])
		}
		if w := b.String(); len(w) > 2 && !seen[w] {
			seen[w] = true
			s.vocab = append(s.vocab, w)
		}
	}
	// s = 1.1 is close to English; the most frequent words play stop words.
	s.zipf = rand.NewZipf(rng, 1.1, 1, vocabSize-1)
	for t := range topicCount {
		var tp topic
		for range wordsPerTopic {
			// Topic words come from the middle of the frequency range:
			// distinctive, like real subject words.
			tp.words = append(tp.words, s.vocab[200+rng.IntN(vocabSize-200)])
		}
		for i := range idsPerTopic {
			tp.ids = append(tp.ids, fmt.Sprintf("%s-%d-%s", idKind[rng.IntN(len(idKind))], t*100+i, idVerb[rng.IntN(len(idVerb))]))
		}
		s.topics = append(s.topics, tp)
	}
	return s
}

// memory returns the text of one note (8-30 words) and its topic.
func (s *synth) memory() (string, int) {
	t := s.rng.IntN(topicCount)
	tp := s.topics[t]
	n := 8 + s.rng.IntN(23)
	words := make([]string, 0, n+1)
	for range n {
		if s.rng.Float64() < 0.4 {
			words = append(words, tp.words[s.rng.IntN(len(tp.words))])
		} else {
			words = append(words, s.vocab[s.zipf.Uint64()])
		}
	}
	if s.rng.Float64() < 0.25 {
		words[s.rng.IntN(len(words))] = tp.ids[s.rng.IntN(len(tp.ids))]
	}
	return strings.Join(words, " "), t
}

// query returns a search text: mostly topic words, sometimes an
// identifier with context, sometimes only common words.
func (s *synth) query() string {
	tp := s.topics[s.rng.IntN(topicCount)]
	var words []string
	switch r := s.rng.Float64(); {
	case r < 0.6:
		for range 2 + s.rng.IntN(4) {
			words = append(words, tp.words[s.rng.IntN(len(tp.words))])
		}
	case r < 0.85:
		words = append(words, tp.ids[s.rng.IntN(len(tp.ids))])
		for range 1 + s.rng.IntN(2) {
			words = append(words, tp.words[s.rng.IntN(len(tp.words))])
		}
	default:
		for range 2 + s.rng.IntN(3) {
			words = append(words, s.vocab[s.zipf.Uint64()])
		}
	}
	return strings.Join(words, " ")
}
