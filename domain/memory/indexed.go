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
	return joinParts(parts), nil
}

// joinParts joins the non-blank parts, trimmed, one per line.
func joinParts(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

// TextHash identifies an indexed text, so a vector can be matched to the
// text it was computed from.
func TextHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:16])
}

// IndexedMetadata is a memory's short searchable metadata: its tags and the
// short fields of its type that name who or what it is about (a note's
// speaker; a relationship's entity name, entity type and relationship
// type). The keyword index searches it as a field of its own with its own
// weight; it is not embedded. Enumerated categories (note_type, goal_type,
// a raw entry's source, ...) are left out: they are closed vocabularies for
// filtering, not words a question uses. content must be canonical (from NormalizeContent).
func IndexedMetadata(t Type, content json.RawMessage, tags []string) (string, error) {
	parts := append([]string(nil), tags...)
	switch t {
	case Note:
		var c NoteContent
		if err := json.Unmarshal(content, &c); err != nil {
			return "", fmt.Errorf("memory: indexed metadata: %w", err)
		}
		parts = append(parts, c.Speaker)
	case Relationship:
		var c RelationshipContent
		if err := json.Unmarshal(content, &c); err != nil {
			return "", fmt.Errorf("memory: indexed metadata: %w", err)
		}
		parts = append(parts, c.EntityName, c.EntityType, c.RelationshipType)
	case Drive:
		return "", nil
	}
	return joinParts(parts), nil
}
