package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// IndexedText is the text of a memory that is embedded and keyword-indexed
// (docs/decisions.md#indexed-text). Drives are not searchable: "".
// content must be canonical (from NormalizeContent).
func IndexedText(t Type, content json.RawMessage) (string, error) {
	if t == Drive {
		return "", nil
	}
	c, err := decodeTyped(t, content)
	if err != nil {
		return "", fmt.Errorf("memory: indexed text: %w", err)
	}
	return joinParts(c.textParts()), nil
}

// typedContent is a memory's content decoded as its type's struct, with
// what each derived value takes from it.
type typedContent interface {
	// textParts are the parts IndexedText joins.
	textParts() []string
	// metadataParts are the type's own parts of IndexedMetadata: none
	// (Metadata's method, promoted) but for the note and the relationship,
	// whose own methods shadow it.
	metadataParts() []string
	// meta is the content's common metadata (strength, is_protected).
	meta() Metadata
	// normalize checks the content and fills its defaults
	// (NormalizeContent).
	normalize(*checker)
}

// decodeTyped decodes content as the struct of type t.
func decodeTyped(t Type, content json.RawMessage) (typedContent, error) {
	c := newContent(t)
	if c == nil {
		return nil, fmt.Errorf("unknown type %q", t)
	}
	if err := json.Unmarshal(content, c); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *EpisodeContent) textParts() []string {
	return append([]string{c.Objective, c.Outcome}, c.Lessons...)
}
func (c *BeliefContent) textParts() []string { return []string{c.Statement} }
func (c *NoteContent) textParts() []string   { return []string{c.Content} }
func (c *ValueContent) textParts() []string  { return []string{c.Name, c.Statement} }
func (c *GoalContent) textParts() []string   { return []string{c.Title, c.Description} }
func (c *PlaybookContent) textParts() []string {
	parts := []string{c.Name, c.Description}
	for _, s := range c.Steps {
		parts = append(parts, s.Action, s.Details)
	}
	return parts
}
func (c *RawEntryContent) textParts() []string     { return []string{c.Content} }
func (c *RelationshipContent) textParts() []string { return []string{c.EntityName, c.Notes} }
func (c *DriveContent) textParts() []string        { return nil }

func (m Metadata) metadataParts() []string { return nil }
func (c *NoteContent) metadataParts() []string {
	return []string{c.Speaker}
}
func (c *RelationshipContent) metadataParts() []string {
	return []string{c.EntityName, c.EntityType, c.RelationshipType}
}

func (m Metadata) meta() Metadata { return m }

// Derived is what the read models derive from a created memory's content:
// its indexed text and metadata (the keyword index) and its initial
// vitality (the memories read model).
type Derived struct {
	Text, Metadata string
	Vitality       Vitality
}

// Derive is the Derived of a memory created at `at` with canonical
// content and tags, from one parse of the content where IndexedText,
// IndexedMetadata and InitialVitality parse it once each (a replay
// derives them once for all its projections). ok is false when the
// content does not decode as its type: the three functions then tell
// each value or error apart.
func Derive(t Type, content json.RawMessage, tags []string, at time.Time) (d Derived, ok bool) {
	c, err := decodeTyped(t, content)
	if err != nil {
		return Derived{}, false
	}
	goalType := ""
	if g, isGoal := c.(*GoalContent); isGoal {
		goalType = g.GoalType
	}
	d.Vitality = initialVitality(t, goalType, c.meta(), at)
	if t != Drive {
		d.Text = joinParts(c.textParts())
		d.Metadata = joinParts(append(append([]string(nil), tags...), c.metadataParts()...))
	}
	return d, true
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
	case Note, Relationship:
		c, err := decodeTyped(t, content)
		if err != nil {
			return "", fmt.Errorf("memory: indexed metadata: %w", err)
		}
		parts = append(parts, c.metadataParts()...)
	case Drive:
		return "", nil
	}
	return joinParts(parts), nil
}
