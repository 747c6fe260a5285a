package local

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// wordPiece is a BERT-style tokenizer: normalise, pre-tokenise into words,
// then split each word greedily into the longest vocabulary pieces, marking
// pieces after the first with the continuation prefix ("playing" →
// "play", "##ing"). A word that cannot be covered, or is longer than
// maxChars, becomes the unknown token as a whole, as in HuggingFace's
// WordPiece.
type wordPiece struct {
	normalize   func(string) string
	preTokenize func(s string, dst []string) []string
	// words holds word-initial pieces, continuation the pieces that follow,
	// keyed without their prefix so lookups need no string building.
	words, continuation map[string]int32
	unkID               int32
	maxChars            int
	vocabSize, maxID    int
	// special marks ids that carry no content: [CLS], [SEP], [PAD], [MASK],
	// special added tokens, and the unknown token.
	special map[int32]bool
}

// tokenize appends the token ids of text to dst.
func (wp *wordPiece) tokenize(text string, dst []int32) []int32 {
	words := wp.preTokenize(wp.normalize(text), nil)
	for _, w := range words {
		dst = wp.appendWord(dst, w)
	}
	return dst
}

func (wp *wordPiece) appendWord(dst []int32, word string) []int32 {
	if utf8.RuneCountInString(word) > wp.maxChars {
		return append(dst, wp.unkID)
	}
	mark := len(dst)
	for start := 0; start < len(word); {
		end := len(word)
		id, found := int32(0), false
		for end > start {
			pieces := wp.continuation
			if start == 0 {
				pieces = wp.words
			}
			if id, found = pieces[word[start:end]]; found {
				break
			}
			_, size := utf8.DecodeLastRuneInString(word[start:end])
			end -= size
		}
		if !found {
			return append(dst[:mark], wp.unkID)
		}
		dst = append(dst, id)
		start = end
	}
	return dst
}

// bertNormalizer mirrors HuggingFace's BertNormalizer: drop control
// characters and map white space to ' ' (clean_text), isolate CJK ideographs
// so each becomes a word, strip accents, lower-case.
type bertNormalizer struct {
	cleanText, chineseChars, stripAccents, lowercase bool
}

func (n bertNormalizer) normalize(s string) string {
	if n.cleanText || n.chineseChars {
		var b strings.Builder
		b.Grow(len(s))
		for _, r := range s {
			switch {
			case n.cleanText && (r == 0 || r == utf8.RuneError || isBertControl(r)):
				continue
			case n.cleanText && unicode.IsSpace(r):
				b.WriteByte(' ')
			case n.chineseChars && isCJKIdeograph(r):
				b.WriteByte(' ')
				b.WriteRune(r)
				b.WriteByte(' ')
			default:
				b.WriteRune(r)
			}
		}
		s = b.String()
	}
	if n.stripAccents {
		s = stripAccents(s)
	}
	if n.lowercase {
		s = lowerOnly(s)
	}
	return s
}

// isBertControl is BERT's "control": any Unicode C category except the
// white space characters tab, newline and carriage return.
func isBertControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.C)
}

func isCJKIdeograph(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

// isBertPunctuation is BERT's punctuation: ASCII punctuation and symbols
// ("$", "+", "^", ...) and every Unicode P category character.
func isBertPunctuation(r rune) bool {
	if r < utf8.RuneSelf {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsPunct(r)
}

// splitBert splits at white space and makes every punctuation character a
// word of its own ("don't!" → "don", "'", "t", "!").
func splitBert(s string, dst []string) []string {
	start := -1
	for i, r := range s {
		switch {
		case unicode.IsSpace(r):
			if start >= 0 {
				dst = append(dst, s[start:i])
				start = -1
			}
		case isBertPunctuation(r):
			if start >= 0 {
				dst = append(dst, s[start:i])
				start = -1
			}
			dst = append(dst, s[i:i+utf8.RuneLen(r)])
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		dst = append(dst, s[start:])
	}
	return dst
}

// splitWhitespace splits at white space only.
func splitWhitespace(s string, dst []string) []string {
	return append(dst, strings.Fields(s)...)
}

// splitWordsAndPunctuation is HuggingFace's Whitespace pre-tokenizer,
// `\w+|[^\w\s]+`: runs of word characters and runs of other non-space
// characters.
func splitWordsAndPunctuation(s string, dst []string) []string {
	start, startWord := -1, false
	for i, r := range s {
		if unicode.IsSpace(r) {
			if start >= 0 {
				dst = append(dst, s[start:i])
				start = -1
			}
			continue
		}
		isWord := isWordRune(r) || r == '_' || unicode.Is(unicode.M, r)
		if start >= 0 && isWord != startWord {
			dst = append(dst, s[start:i])
			start = -1
		}
		if start < 0 {
			start, startWord = i, isWord
		}
	}
	if start >= 0 {
		dst = append(dst, s[start:])
	}
	return dst
}

func unicodeForm(name string) func(string) string {
	forms := map[string]norm.Form{"NFC": norm.NFC, "NFD": norm.NFD, "NFKC": norm.NFKC, "NFKD": norm.NFKD}
	form := forms[name]
	return form.String
}
