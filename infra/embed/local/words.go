package local

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// lexicalWords is what the built-in model reads from a text: its words in
// order, and the compound identifiers they were split from.
type lexicalWords struct {
	// words are lower-cased, accent-free word parts in text order, stop words
	// included ("deploy-v2.4.7-hotfix" gives deploy, v2, 4, 7, hotfix).
	words []string
	// compounds are whole identifiers that were split into several words
	// ("deploy-v2.4.7-hotfix", "getusername"), kept so an exact identifier
	// still matches as one unit.
	compounds []string
}

// splitWords breaks text at white space into chunks, trims punctuation from
// each chunk's ends, and splits the rest into runs of letters and digits,
// also at camelCase boundaries. A chunk that split into several parts only at
// identifier separators or camelCase boundaries is also kept whole as a
// compound; prose punctuation (apostrophes, commas, ...) splits without one,
// so "Caroline's" is just "caroline" + "s".
func splitWords(text string) lexicalWords {
	var out lexicalWords
	for _, chunk := range strings.Fields(text) {
		chunk = strings.TrimFunc(chunk, isNotWordRune)
		if chunk == "" {
			continue
		}
		parts, joinable := splitChunk(chunk)
		for _, p := range parts {
			out.words = append(out.words, foldCase(p))
		}
		if len(parts) > 1 && joinable {
			out.compounds = append(out.compounds, foldCase(chunk))
		}
	}
	return out
}

func isWordRune(r rune) bool    { return unicode.IsLetter(r) || unicode.IsDigit(r) }
func isNotWordRune(r rune) bool { return !isWordRune(r) }

// isIdentifierSeparator lists the characters that join parts of an
// identifier, path, version number, URL or e-mail address.
func isIdentifierSeparator(r rune) bool {
	return strings.ContainsRune("-_./:@#+~=&\\", r)
}

// splitChunk returns the letter/digit runs of chunk, split further at
// camelCase boundaries ("getUserName" → get, User, Name; "HTTPServer" → HTTP,
// Server), and whether every split point was an identifier separator or a
// case boundary.
func splitChunk(chunk string) (parts []string, joinable bool) {
	joinable = true
	start := -1
	var prev rune
	for i, r := range chunk {
		if !isWordRune(r) {
			if start >= 0 {
				parts = append(parts, chunk[start:i])
				start = -1
			}
			if !isIdentifierSeparator(r) {
				joinable = false
			}
			prev = r
			continue
		}
		if start < 0 {
			start = i
		} else if isCamelBoundary(chunk, prev, r, i) {
			parts = append(parts, chunk[start:i])
			start = i
		}
		prev = r
	}
	if start >= 0 {
		parts = append(parts, chunk[start:])
	}
	return parts, joinable
}

// isCamelBoundary reports whether a new word starts at byte i (rune r,
// preceded by prev): lower→Upper ("userName"), or the last capital of an
// acronym that is followed by a lower-case letter ("HTTPServer").
func isCamelBoundary(chunk string, prev, r rune, i int) bool {
	if !unicode.IsUpper(r) {
		return false
	}
	if unicode.IsLower(prev) {
		return true
	}
	if unicode.IsUpper(prev) {
		next, _ := utf8.DecodeRuneInString(chunk[i+utf8.RuneLen(r):])
		return unicode.IsLower(next)
	}
	return false
}
