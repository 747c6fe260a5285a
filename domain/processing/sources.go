package processing

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/engram-memory/engram/domain/memory"
)

// SourceWindow is how many of the latest memories of a source type a pass
// and the processing view look at.
const SourceWindow = memory.MaxListLimit

// SourcesOf is what a processor reads of each of views.
func SourcesOf(views []memory.View) []Source {
	out := make([]Source, 0, len(views))
	for _, v := range views {
		out = append(out, SourceOf(v))
	}
	return out
}

// SourceOf is what a processor reads of a memory.
func SourceOf(v memory.View) Source {
	var f struct {
		Content          string   `json:"content"`
		Objective        string   `json:"objective"`
		Outcome          string   `json:"outcome"`
		Statement        string   `json:"statement"`
		Name             string   `json:"name"`
		Title            string   `json:"title"`
		EntityName       string   `json:"entity_name"`
		RelationshipType string   `json:"relationship_type"`
		DriveType        string   `json:"drive_type"`
		Confidence       *float64 `json:"confidence"`
		Arousal          float64  `json:"emotional_arousal"`
		Processed        bool     `json:"processed"`
	}
	_ = json.Unmarshal(v.Content, &f) // read-model content is canonical JSON
	s := Source{ID: v.ID, Type: v.Type, CreatedAt: v.CreatedAt, Protected: v.Protected}
	switch v.Type {
	case memory.RawEntry:
		s.Text, s.ProcessedByClient = f.Content, f.Processed
	case memory.Note:
		s.Text = f.Content
	case memory.Episode:
		s.Text, s.Arousal = f.Objective+": "+f.Outcome, f.Arousal
	case memory.Belief:
		conf := 0.0
		if f.Confidence != nil {
			conf = *f.Confidence
		}
		s.Text, s.Confidence = fmt.Sprintf("%s (confidence: %.2f)", f.Statement, conf), conf
	case memory.Value:
		s.Text = f.Name + ": " + f.Statement
	case memory.Goal:
		s.Text = f.Title
	case memory.Relationship:
		s.Text = f.EntityName + " (" + f.RelationshipType + ")"
	case memory.Drive:
		s.Text = f.DriveType
	default:
		s.Text = strings.TrimSpace(f.Name + " " + f.Content)
	}
	return s
}

// Unconsumed are the sources t has still to process: neither consumed by
// one of its passes nor processed by the client.
func (s *State) Unconsumed(t Transition, all []Source) []Source {
	var out []Source
	for _, src := range all {
		if !src.ProcessedByClient && !s.Consumed(t, src.ID) {
			out = append(out, src)
		}
	}
	return out
}
