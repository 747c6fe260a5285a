package local

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// foldCase lower-cases s and strips accents ("Café" → "cafe"), the way BERT's
// uncased normaliser does: decompose (NFD), then drop combining marks. ASCII
// input, by far the common case, takes a fast path without decomposition.
func foldCase(s string) string {
	if isASCII(s) {
		return asciiLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range norm.NFD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// lowerOnly lower-cases s without stripping accents (for cased BERT
// normalisers that keep accents).
func lowerOnly(s string) string {
	if isASCII(s) {
		return asciiLower(s)
	}
	return strings.ToLower(s)
}

// stripAccents removes combining marks after NFD decomposition.
func stripAccents(s string) string {
	if isASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range norm.NFD.String(s) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiLower lower-cases ASCII s, returning s itself when nothing changes so
// the common already-lower-case word costs no allocation.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
