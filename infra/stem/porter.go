// Package stem is the English Porter stemmer shared by the keyword index
// and the built-in hashing embedding model, so both see the same word
// forms.
package stem

// Porter reduces an English word to its Porter stem ("connections" →
// "connect", "running" → "run"), so that inflected forms of a word land on
// the same feature. It follows Porter (1980) with the two usual revisions
// (BLI→BLE, LOGI→LOG). Words that are not lower-case ASCII letters, or are
// shorter than three letters, are returned unchanged: stemming rules for other
// scripts would do more harm than good.
func Porter(word string) string {
	if len(word) < 3 || !isLowerASCIIWord(word) {
		return word
	}
	s := stemmer{b: []byte(word)}
	s.step1a()
	s.step1b()
	s.step1c()
	s.step2()
	s.step3()
	s.step4()
	s.step5()
	return string(s.b)
}

func isLowerASCIIWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// stemmer holds the word being stemmed; b[:k] is the current stem while a
// suffix is tested.
type stemmer struct{ b []byte }

// isConsonant reports whether b[i] is a consonant in Porter's sense: y is a
// consonant at the start of a word or after a vowel.
func (s *stemmer) isConsonant(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !s.isConsonant(i-1)
	}
	return true
}

// measure is Porter's m: the number of vowel-consonant sequences in b[:k].
func (s *stemmer) measure(k int) int {
	m, i := 0, 0
	for i < k && s.isConsonant(i) {
		i++
	}
	for i < k {
		for i < k && !s.isConsonant(i) {
			i++
		}
		if i >= k {
			break
		}
		for i < k && s.isConsonant(i) {
			i++
		}
		m++
	}
	return m
}

func (s *stemmer) hasVowel(k int) bool {
	for i := 0; i < k; i++ {
		if !s.isConsonant(i) {
			return true
		}
	}
	return false
}

// endsDoubleConsonant reports *d for b[:k].
func (s *stemmer) endsDoubleConsonant(k int) bool {
	return k >= 2 && s.b[k-1] == s.b[k-2] && s.isConsonant(k-1)
}

// endsCVC reports *o for b[:k]: consonant-vowel-consonant where the last
// consonant is not w, x or y ("hop" but not "snow").
func (s *stemmer) endsCVC(k int) bool {
	if k < 3 || !s.isConsonant(k-1) || s.isConsonant(k-2) || !s.isConsonant(k-3) {
		return false
	}
	c := s.b[k-1]
	return c != 'w' && c != 'x' && c != 'y'
}

func (s *stemmer) hasSuffix(suffix string) bool {
	n := len(s.b)
	return n >= len(suffix) && string(s.b[n-len(suffix):]) == suffix
}

// replace swaps the suffix for repl when the remaining stem has measure > minM.
func (s *stemmer) replace(suffix, repl string, minM int) bool {
	if !s.hasSuffix(suffix) {
		return false
	}
	k := len(s.b) - len(suffix)
	if s.measure(k) > minM {
		s.b = append(s.b[:k], repl...)
	}
	return true
}

func (s *stemmer) step1a() {
	switch {
	case s.hasSuffix("sses"):
		s.b = s.b[:len(s.b)-2]
	case s.hasSuffix("ies"):
		s.b = s.b[:len(s.b)-2]
	case s.hasSuffix("ss"):
	case s.hasSuffix("s"):
		s.b = s.b[:len(s.b)-1]
	}
}

func (s *stemmer) step1b() {
	if s.hasSuffix("eed") {
		if s.measure(len(s.b)-3) > 0 {
			s.b = s.b[:len(s.b)-1]
		}
		return
	}
	var k int
	switch {
	case s.hasSuffix("ed") && s.hasVowel(len(s.b)-2):
		k = len(s.b) - 2
	case s.hasSuffix("ing") && s.hasVowel(len(s.b)-3):
		k = len(s.b) - 3
	default:
		return
	}
	s.b = s.b[:k]
	switch {
	case s.hasSuffix("at"), s.hasSuffix("bl"), s.hasSuffix("iz"):
		s.b = append(s.b, 'e')
	case s.endsDoubleConsonant(k):
		if c := s.b[k-1]; c != 'l' && c != 's' && c != 'z' {
			s.b = s.b[:k-1]
		}
	case s.measure(k) == 1 && s.endsCVC(k):
		s.b = append(s.b, 'e')
	}
}

// step1c uses Porter2's rule (y → i only after a consonant that is not the
// first letter) rather than Porter's (after any vowel in the stem), so that
// "deploy", "deploying" and "deployment" share the stem "deploy" while
// "happy"/"happiness" still meet at "happi".
func (s *stemmer) step1c() {
	n := len(s.b)
	if n > 2 && s.b[n-1] == 'y' && !isVowelLetter(s.b[n-2]) {
		s.b[n-1] = 'i'
	}
}

func isVowelLetter(c byte) bool {
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y'
}

// step2Rules and step3Rules map suffixes to replacements; the first matching
// suffix decides, as in Porter's paper.
var step2Rules = [...][2]string{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"},
	{"eli", "e"}, {"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"},
	{"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"},
	{"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
	{"logi", "log"},
}

var step3Rules = [...][2]string{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

var step4Suffixes = [...]string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
	"ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

func (s *stemmer) step2() {
	for _, r := range step2Rules {
		if s.replace(r[0], r[1], 0) {
			return
		}
	}
}

func (s *stemmer) step3() {
	for _, r := range step3Rules {
		if s.replace(r[0], r[1], 0) {
			return
		}
	}
}

func (s *stemmer) step4() {
	for _, suffix := range step4Suffixes {
		if !s.hasSuffix(suffix) {
			continue
		}
		k := len(s.b) - len(suffix)
		if suffix == "ion" && (k == 0 || (s.b[k-1] != 's' && s.b[k-1] != 't')) {
			return
		}
		if s.measure(k) > 1 {
			s.b = s.b[:k]
		}
		return
	}
}

func (s *stemmer) step5() {
	if s.hasSuffix("e") {
		k := len(s.b) - 1
		if m := s.measure(k); m > 1 || (m == 1 && !s.endsCVC(k)) {
			s.b = s.b[:k]
		}
	}
	if k := len(s.b); s.measure(k) > 1 && s.endsDoubleConsonant(k) && s.b[k-1] == 'l' {
		s.b = s.b[:k-1]
	}
}
