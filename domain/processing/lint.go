package processing

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/engram-memory/engram/domain/memory"
)

// LintRules bound the text of beliefs and values a pass would write
// (the stack settings' lint_rules).
type LintRules struct {
	Enabled              bool
	MinLength, MaxLength int
	CheckFragments       bool
	CheckPrefixArtifacts bool
	CheckTemplatedNoise  bool
}

// The lint patterns are compiled at first use, not at every process start (every command of the command line is one).
var (
	lintPrefix = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^\s*(belief|value|statement|note|episode|goal|insight)\s*:`)
	})
	lintTemplate = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(\{\{|\}\}|<[a-z_ ]+>|\[insert|lorem ipsum|\bTODO\b|\bTBD\b)`)
	})
	lintFragment = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(the|a|an|and|or|of|to|in|for|with|but|because|that)\s*[.,;:]?\s*$`)
	})
)

// Lint checks the statement of a belief or a value against r and returns
// "" or why it fails. Other types are not linted (as in the original).
func Lint(t memory.Type, content json.RawMessage, r LintRules) string {
	if !r.Enabled || (t != memory.Belief && t != memory.Value) {
		return ""
	}
	var c struct {
		Statement string `json:"statement"`
	}
	_ = json.Unmarshal(content, &c) // canonical content of a belief or a value
	text := strings.TrimSpace(c.Statement)
	n := utf8.RuneCountInString(text)
	switch {
	case n < r.MinLength:
		return fmt.Sprintf("statement has %d characters, fewer than %d", n, r.MinLength)
	case r.MaxLength > 0 && n > r.MaxLength:
		return fmt.Sprintf("statement has %d characters, more than %d", n, r.MaxLength)
	case r.CheckPrefixArtifacts && lintPrefix().MatchString(text):
		return "statement starts with a label such as \"Belief:\""
	case r.CheckTemplatedNoise && lintTemplate().MatchString(text):
		return "statement holds template noise"
	case r.CheckFragments && lintFragment().MatchString(text):
		return "statement ends mid-sentence"
	}
	return ""
}
