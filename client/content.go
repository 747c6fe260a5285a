package client

// Content objects of the most used memory types (decisions §4). Other
// types take any value that encodes to their fields, e.g. a map. Optional
// fields are omitted when zero so the server fills its defaults.

// RawEntryContent is the content of a raw_entries memory.
type RawEntryContent struct {
	Content   string `json:"content"`
	Source    string `json:"source,omitempty"` // cli, mcp, sdk or import
	Processed bool   `json:"processed,omitempty"`
}

// NoteContent is the content of a notes memory.
type NoteContent struct {
	Content  string `json:"content"`
	NoteType string `json:"note_type,omitempty"` // default "note"
	Speaker  string `json:"speaker,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// BeliefContent is the content of a beliefs memory.
type BeliefContent struct {
	Statement  string   `json:"statement"`
	BeliefType string   `json:"belief_type,omitempty"`
	Confidence *float64 `json:"confidence,omitempty"`
	Scope      string   `json:"scope,omitempty"`
}

// EpisodeContent is the content of an episodes memory.
type EpisodeContent struct {
	Objective        string   `json:"objective"`
	Outcome          string   `json:"outcome"`
	OutcomeType      string   `json:"outcome_type,omitempty"`
	Lessons          []string `json:"lessons,omitempty"`
	EmotionalValence *float64 `json:"emotional_valence,omitempty"`
	EmotionalArousal *float64 `json:"emotional_arousal,omitempty"`
	Confidence       *float64 `json:"confidence,omitempty"`
}
