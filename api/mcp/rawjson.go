package mcp

import (
	"encoding/json"
	"unicode/utf8"
)

// The direct path and the search results' text read a few members of
// small JSON objects on every call. Decoding them into maps or structs
// costs a reflective decode per object, and allocations for every member
// (a third of the MCP layer's CPU per search); walking the bytes costs
// neither. The walk reads what it is given, not what it means: keys are
// compared as written (a key spelled with escapes is another key), and a
// caller that needs the input valid checks it first (json.Valid).

// objectMembers calls member with the key (as written between its quotes)
// and the value (as written) of each member of the JSON object obj, in
// order, and reports whether it walked them all: false when obj is not an
// object or member returned false.
func objectMembers(obj []byte, member func(key, value []byte) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return true
	}
	for i < len(obj) && obj[i] == '"' {
		keyEnd := valueEnd(obj, i)
		if keyEnd < 0 {
			return false
		}
		colon := skipSpace(obj, keyEnd)
		if colon >= len(obj) || obj[colon] != ':' {
			return false
		}
		start := skipSpace(obj, colon+1)
		end := valueEnd(obj, start)
		if end < 0 || !member(obj[i+1:keyEnd-1], obj[start:end]) {
			return false
		}
		i = skipSpace(obj, end)
		if i >= len(obj) {
			return false
		}
		switch obj[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(obj, i+1)
		default:
			return false
		}
	}
	return false
}

// valueEnd is the index just past the JSON value that starts at data[i],
// or -1 when data ends first.
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++ // the escaped byte, a quote included
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end := valueEnd(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default: // a number, true, false or null
		j := i
		for j < len(data) && !delimiter(data[j]) {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// delimiter reports whether c ends a number or a literal.
func delimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// jsonText is the Go string of the JSON string value raw, and false when
// raw is not a string. Text with neither escapes nor invalid UTF-8 (what
// an encoder writes for almost every text) is its own value; any other is
// decoded as json.Unmarshal decodes it.
func jsonText(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	plain := utf8.Valid(inner)
	for _, c := range inner {
		if c == '\\' || c < 0x20 {
			plain = false
			break
		}
	}
	if plain {
		return string(inner), true
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}
