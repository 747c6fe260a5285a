package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// IndexedText is the text of a memory that is embedded and keyword-indexed
// (interface.md "Indexed for search"). Drives are not searchable: "".
// content must be canonical (from NormalizeContent).
func IndexedText(t Type, content json.RawMessage) (string, error) {
	var parts []string
	switch t {
	case Episode:
		var c EpisodeContent
		if err := json.Unmarshal(content, &c); err != nil {
			return "", fmt.Errorf("memory: indexed text: %w", err)
		}
		parts = append([]string{c.Objective, c.Outcome}, c.Lessons...)
	case Belief:
		var c BeliefContent
		if err := json.Unmarshal(content, &c); err != nil {
			return "", fmt.Errorf("memory: indexed text: %w", err)
		}
		parts = []string{c.Statement}
	case Note:
		var c NoteContent
		if err := json.Unmarshal(content, &c); err != nil {
			return "", fmt.Errorf("memory: indexed text: %w", err)
		}
		parts = []string{c.Content}
	case Value:
		var c ValueContent
		if err := json.Unmarshal(content, &c); err != nil {
			return "", fmt.Errorf("memory: indexed text: %w", err)
		}
		parts = []string{c.Name, c.Statement}
	case Goal:
		var c GoalContent
		if err := json.Unmarshal(content, &c); err != nil {
			return "", fmt.Errorf("memory: indexed text: %w", err)
		}
		parts = []string{c.Title, c.Description}
	case Playbook:
		var c PlaybookContent
		if err := json.Unmarshal(content, &c); err != nil {
			return "", fmt.Errorf("memory: indexed text: %w", err)
		}
		parts = []string{c.Name, c.Description}
		for _, s := range c.Steps {
			parts = append(parts, s.Action, s.Details)
		}
	case RawEntry:
		var c RawEntryContent
		if err := json.Unmarshal(content, &c); err != nil {
			return "", fmt.Errorf("memory: indexed text: %w", err)
		}
		parts = []string{c.Content}
	case Relationship:
		var c RelationshipContent
		if err := json.Unmarshal(content, &c); err != nil {
			return "", fmt.Errorf("memory: indexed text: %w", err)
		}
		parts = []string{c.EntityName, c.Notes}
	case Drive:
		return "", nil
	default:
		return "", fmt.Errorf("memory: indexed text: unknown type %q", t)
	}
	var b strings.Builder
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p)
		}
	}
	return b.String(), nil
}

// TextHash identifies an indexed text, so a vector can be matched to the
// text it was computed from.
func TextHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:16])
}
