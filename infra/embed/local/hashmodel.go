package local

import (
	"math"
	"unicode/utf8"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/stem"
)

// BuiltinModelName names the built-in lexical model.
const BuiltinModelName = "engram-hash-384"

const builtinDimensions = 384

// builtinDescription says plainly what the model is, so nobody mistakes its
// scores for semantic similarity.
const builtinDescription = "Built-in lexical model, not a neural network: signed feature hashing " +
	"of lower-cased, accent-folded, Porter-stemmed words (stop words removed, irregular verb forms " +
	"and plurals mapped to their base form, e.g. went to go, longer words weighted higher as a " +
	"stand-in for rarity) and word bigrams, plus character 3/4-grams at a lower weight for fuzzy " +
	"matching and one shared feature for time words (when, yesterday, weekdays, months, years); " +
	"identifiers such as deploy-v2.4.7-hotfix or getUserName count as their parts and as a whole. " +
	"It matches shared words and spellings, not meaning. Needs no download."

// hashWeights are the per-occurrence weights of each feature kind before the
// sublinear term-frequency transform. They were tuned on the LoCoMo dev split
// (see quality_test.go here and in projections/search, which measures the
// model as the vector side of hybrid search); unigrams anchor the scale at 1.
// Changing any of them, or irregularBase or timeWords, changes stored
// vectors: once a release has stored any, that means a new model name.
type hashWeights struct {
	word, bigram, compound, charGram float64
	// timeClass weighs the one feature that every time word shares (see
	// isTimeWord): it lets "when did ...?" meet "... yesterday" or "... in
	// May 2023", which share no word. 0 turns it off.
	timeClass float64
	// lengthCap: a word's weight grows with its length up to lengthCap
	// letters (0 turns this off), see lengthFactor.
	lengthCap int
}

// hashModel is the built-in model. Dimension 0 is reserved: no feature hashes
// into it, and a text without any words embeds as the unit vector e0, which is
// orthogonal to every non-empty text. That keeps batches from failing on a
// blank text while guaranteeing a blank never matches real content.
type hashModel struct {
	name    string
	dims    int
	weights hashWeights
}

func newBuiltinModel() *hashModel {
	return &hashModel{
		name:    BuiltinModelName,
		dims:    builtinDimensions,
		weights: hashWeights{word: 1, bigram: 0.5, compound: 1, charGram: 0.1, lengthCap: 8, timeClass: 0.7},
	}
}

func (m *hashModel) info() domain.EmbeddingModel {
	return domain.EmbeddingModel{
		Name:        m.name,
		Provider:    ProviderName,
		Dimensions:  m.dims,
		Quality:     "Basic",
		Speed:       "Fastest",
		Cost:        "Free",
		Description: builtinDescription,
	}
}

// feature is one hashed feature occurrence and its weight.
type feature struct {
	hash   uint64
	weight float64
}

// embed returns the unit vector of text and its word count.
func (m *hashModel) embed(text string) ([]float32, int) {
	lw := splitWords(text)
	feats := m.features(lw)
	vec := make([]float32, m.dims)
	if len(feats) == 0 {
		vec[0] = 1
		return vec, len(lw.words)
	}
	acc := make([]float64, m.dims)
	for _, f := range combineSublinear(feats) {
		bucket := 1 + int(f.hash%uint64(m.dims-1))
		if f.hash>>63 == 1 {
			acc[bucket] -= f.weight
		} else {
			acc[bucket] += f.weight
		}
	}
	if !normaliseInto(vec, acc) {
		// Every feature cancelled out (possible only by hash collisions):
		// fall back to the blank-text vector rather than a zero vector.
		clear(vec)
		vec[0] = 1
	}
	return vec, len(lw.words)
}

// features lists every feature occurrence of a text. Irregular forms become
// their base form first (see irregularBase), then stop words are dropped
// unless the text has nothing else ("to be or not to be" still embeds).
func (m *hashModel) features(lw lexicalWords) []feature {
	content := make([]string, 0, len(lw.words))
	irregular := irregularBase()
	for _, w := range lw.words {
		if base, ok := irregular[w]; ok {
			w = base
		}
		if !isStopword(w) {
			content = append(content, w)
		}
	}
	if len(content) == 0 {
		content = lw.words
	}
	feats := make([]feature, 0, len(content)*12+len(lw.compounds))
	stems := make([]string, len(content))
	for i, w := range content {
		stems[i] = stem.Porter(w)
		feats = append(feats, feature{featureHash(kindWord, stems[i]), m.weights.word * m.lengthFactor(w)})
		feats = appendCharGrams(feats, w, m.weights.charGram)
	}
	for i := 1; i < len(stems); i++ {
		feats = append(feats, feature{featureHash(kindBigram, stems[i-1], stems[i]), m.weights.bigram})
	}
	for _, c := range lw.compounds {
		feats = append(feats, feature{featureHash(kindCompound, c), m.weights.compound})
	}
	if m.weights.timeClass > 0 {
		for _, w := range lw.words {
			if isTimeWord(w) {
				feats = append(feats, feature{timeFeature, m.weights.timeClass})
			}
		}
	}
	return feats
}

// lengthFactor stands in for inverse document frequency, which a model that
// sees one text at a time cannot know: long words are rarer than short ones
// (Zipf's law of abbreviation), so "photography" should outweigh "go". It is
// 1 for a word of lengthCap letters and shrinks linearly for shorter ones.
// It reads the surface word, not the stem: on LoCoMo that did better
// (R@10 0.37 vs 0.35), and combineSublinear averages the weights of a stem's
// different surface forms.
func (m *hashModel) lengthFactor(word string) float64 {
	if m.weights.lengthCap <= 0 {
		return 1
	}
	n := min(utf8.RuneCountInString(word), m.weights.lengthCap)
	return float64(n) / float64(m.weights.lengthCap)
}

// appendCharGrams adds the character 3- and 4-grams of "^word$" (the markers
// let prefixes and suffixes count as such), so "colour"/"color" or a typo
// still share most of their grams.
func appendCharGrams(feats []feature, word string, weight float64) []feature {
	if weight == 0 {
		return feats
	}
	bordered := "^" + word + "$"
	if isASCII(bordered) {
		for n := 3; n <= 4; n++ {
			for i := 0; i+n <= len(bordered); i++ {
				feats = append(feats, feature{featureHash(kindCharGram, bordered[i:i+n]), weight})
			}
		}
		return feats
	}
	// Byte offsets of rune starts, plus the end, so grams never split a rune.
	offsets := make([]int, 0, len(bordered)+1)
	for i := range bordered {
		offsets = append(offsets, i)
	}
	offsets = append(offsets, len(bordered))
	runes := len(offsets) - 1
	for n := 3; n <= 4; n++ {
		for i := 0; i+n <= runes; i++ {
			gram := bordered[offsets[i]:offsets[i+n]]
			feats = append(feats, feature{featureHash(kindCharGram, gram), weight})
		}
	}
	return feats
}

// combineSublinear merges repeated features, giving a feature seen n times
// the weight w·(1+ln n) instead of w·n (w being the mean weight of its
// occurrences): a word repeated five times is more
// important than one said once, but not five times as important. Repeats are
// counted in a small open-addressing table, which is several times faster
// than sorting for the few hundred features of a typical text.
func combineSublinear(feats []feature) []feature {
	size := 1
	for size < 2*len(feats) {
		size <<= 1
	}
	slots := make([]int32, size) // index+1 into out; 0 = empty
	counts := make([]int32, 0, len(feats))
	out := make([]feature, 0, len(feats)) // weights summed, then scaled
	for _, f := range feats {
		i := int(f.hash) & (size - 1)
		for slots[i] != 0 && out[slots[i]-1].hash != f.hash {
			i = (i + 1) & (size - 1)
		}
		if slots[i] == 0 {
			out = append(out, feature{hash: f.hash})
			counts = append(counts, 0)
			slots[i] = int32(len(out))
		}
		out[slots[i]-1].weight += f.weight
		counts[slots[i]-1]++
	}
	for i := range out {
		if n := float64(counts[i]); n > 1 {
			out[i].weight = out[i].weight / n * (1 + math.Log(n))
		}
	}
	return out
}

// normaliseInto writes acc/|acc| into vec; it reports false for a zero acc.
func normaliseInto(vec []float32, acc []float64) bool {
	var sum float64
	for _, x := range acc {
		sum += x * x
	}
	if sum == 0 {
		return false
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range acc {
		vec[i] = float32(x * inv)
	}
	return true
}
