package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/engram-memory/engram/domain"
)

// Limits on memory content, enforced by NormalizeContent.
const (
	MaxTextChars = 32000 // any single text field
	MaxListItems = 256   // lessons, steps, focus areas, ...
	MaxTags      = 32
	MaxTagChars  = 64
)

// Metadata fields every type accepts inside content. Defaults are filled by
// NormalizeContent.
type Metadata struct {
	Confidence  *float64 `json:"confidence,omitempty"`
	Strength    *float64 `json:"strength,omitempty"`
	IsProtected *bool    `json:"is_protected,omitempty"`
	SourceType  string   `json:"source_type,omitempty"`
}

type EpisodeContent struct {
	Objective        string   `json:"objective"`
	Outcome          string   `json:"outcome"`
	OutcomeType      string   `json:"outcome_type,omitempty"`
	Lessons          []string `json:"lessons"`
	EmotionalValence *float64 `json:"emotional_valence"`
	EmotionalArousal *float64 `json:"emotional_arousal"`
	Metadata
}

type BeliefContent struct {
	Statement  string `json:"statement"`
	BeliefType string `json:"belief_type"`
	Scope      string `json:"scope"`
	Metadata
}

type NoteContent struct {
	Content  string `json:"content"`
	NoteType string `json:"note_type"`
	Speaker  string `json:"speaker,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Metadata
}

type ValueContent struct {
	Name      string `json:"name"`
	Statement string `json:"statement"`
	Priority  *int   `json:"priority"`
	Metadata
}

type GoalContent struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	GoalType    string `json:"goal_type"`
	Priority    string `json:"priority"`
	Status      string `json:"status"`
	Metadata
}

type PlaybookStep struct {
	Action  string `json:"action"`
	Details string `json:"details,omitempty"`
}

type PlaybookContent struct {
	Name              string         `json:"name"`
	Description       string         `json:"description"`
	Steps             []PlaybookStep `json:"steps"`
	TriggerConditions []string       `json:"trigger_conditions"`
	FailureModes      []string       `json:"failure_modes"`
	Metadata
}

type RawEntryContent struct {
	Content   string `json:"content"`
	Source    string `json:"source"`
	Processed bool   `json:"processed"`
	Metadata
}

type RelationshipContent struct {
	EntityName       string   `json:"entity_name"`
	EntityType       string   `json:"entity_type,omitempty"`
	RelationshipType string   `json:"relationship_type"`
	Notes            string   `json:"notes,omitempty"`
	Sentiment        *float64 `json:"sentiment"`
	Metadata
}

type DriveContent struct {
	DriveType  string   `json:"drive_type"`
	Intensity  *float64 `json:"intensity"`
	FocusAreas []string `json:"focus_areas"`
	Metadata
}

// Allowed values of the enumerated content fields.
var (
	outcomeTypes      = []string{"success", "failure", "partial", "neutral", "mixed", "unknown"}
	beliefTypes       = []string{"assumption", "causal", "constraint", "evaluative", "fact", "factual", "hypothesis", "learned", "model", "observation", "opinion", "pattern", "preference", "principle", "procedural", "rule", "strategy"}
	beliefScopes      = []string{"self", "world", "relational"}
	noteTypes         = []string{"decision", "diagnostic", "fact", "insight", "note", "observation", "procedure", "quote", "reference"}
	goalTypes         = []string{"task", "aspiration", "commitment", "exploration"}
	goalPriorities    = []string{"low", "medium", "high", "critical"}
	goalStatuses      = []string{"active", "completed", "paused", "abandoned"}
	rawSources        = []string{"cli", "mcp", "sdk", "import"}
	sourceTypes       = []string{"direct_experience", "inference", "external", "consolidation", "processing", "seed", "observation", "unknown"}
	errContentMissing = errors.New("content is required")
)

// NormalizeContent validates raw content for type t, fills defaults, and
// returns the canonical JSON that events record. Errors name the field as
// "content.<name>".
func NormalizeContent(t Type, raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, domain.Invalid("content", "%v", errContentMissing)
	}
	c := newContent(t)
	if c == nil {
		return nil, domain.Invalid("type", "unknown memory type %q", t)
	}
	if err := decodeStrict(raw, c); err != nil {
		return nil, err
	}
	ck := &checker{}
	c.normalize(ck)
	if ck.err != nil {
		return nil, ck.err
	}
	out, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("memory: encode content: %w", err)
	}
	return out, nil
}

// newContent returns an empty content struct of type t, nil for a type
// that is not one.
func newContent(t Type) typedContent {
	switch t {
	case Episode:
		return &EpisodeContent{}
	case Belief:
		return &BeliefContent{}
	case Note:
		return &NoteContent{}
	case Value:
		return &ValueContent{}
	case Goal:
		return &GoalContent{}
	case Playbook:
		return &PlaybookContent{}
	case RawEntry:
		return &RawEntryContent{}
	case Relationship:
		return &RelationshipContent{}
	case Drive:
		return &DriveContent{}
	}
	return nil
}

// errNotOneObject is content of more than one JSON value.
var errNotOneObject = errors.New("more than one JSON value")

func decodeStrict(raw json.RawMessage, v any) error {
	err := domain.DecodeIntegral(raw, v, func(raw []byte, v any) error {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return err
		}
		if dec.Decode(&struct{}{}) != io.EOF {
			return errNotOneObject
		}
		return nil
	})
	if err == nil {
		// Most contents hold no null at all: only those are walked again.
		if bytes.Contains(raw, []byte("null")) {
			if list, index, ok := domain.NullItem(raw); ok {
				field := "content." + list
				return domain.Invalid(field, "%s[%d] is null: null stands for an absent field, not for an item of a list", field, index).WithDetail("index", index)
			}
		}
		return nil
	}
	if errors.Is(err, errNotOneObject) {
		return domain.Invalid("content", "content must be one JSON object")
	}
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typ) && typ.Field != "":
		// Fields of the embedded Metadata come back as "Metadata.<name>";
		// clients know them as plain content fields.
		f := strings.TrimPrefix(typ.Field, "Metadata.")
		return domain.Invalid("content."+f, "content.%s has the wrong type (got %s)", f, typ.Value)
	case errors.As(err, &typ):
		return domain.Invalid("content", "content must be a JSON object, not %s", typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return domain.Invalid("content."+f, "unknown content field %q for this memory type", f)
	}
	return domain.Invalid("content", "malformed content: %v", err)
}

func (c *Metadata) normalize(ck *checker, confidence float64, protected bool) {
	ck.rangeDefault("confidence", &c.Confidence, 0, 1, confidence)
	ck.rangeDefault("strength", &c.Strength, 0, 1, 1.0)
	if c.IsProtected == nil {
		c.IsProtected = &protected
	}
	ck.enum("source_type", &c.SourceType, sourceTypes, "direct_experience")
}

func (c *EpisodeContent) normalize(ck *checker) {
	ck.required("objective", c.Objective)
	ck.required("outcome", c.Outcome)
	ck.enum("outcome_type", &c.OutcomeType, outcomeTypes, "")
	ck.list("lessons", &c.Lessons)
	ck.rangeDefault("emotional_valence", &c.EmotionalValence, -1, 1, 0)
	ck.rangeDefault("emotional_arousal", &c.EmotionalArousal, 0, 1, 0)
	c.Metadata.normalize(ck, 0.8, false)
}

func (c *BeliefContent) normalize(ck *checker) {
	ck.required("statement", c.Statement)
	ck.enum("belief_type", &c.BeliefType, beliefTypes, "fact")
	ck.enum("scope", &c.Scope, beliefScopes, "world")
	c.Metadata.normalize(ck, 0.8, false)
}

func (c *NoteContent) normalize(ck *checker) {
	ck.required("content", c.Content)
	ck.enum("note_type", &c.NoteType, noteTypes, "note")
	ck.text("speaker", c.Speaker)
	ck.text("reason", c.Reason)
	c.Metadata.normalize(ck, 0.8, false)
}

func (c *ValueContent) normalize(ck *checker) {
	ck.required("name", c.Name)
	ck.required("statement", c.Statement)
	if c.Priority == nil {
		p := 50
		c.Priority = &p
	} else if *c.Priority < 1 || *c.Priority > 100 {
		ck.fail("priority", "content.priority must be between 1 and 100, got %d", *c.Priority)
	}
	c.Metadata.normalize(ck, 0.9, true)
}

func (c *GoalContent) normalize(ck *checker) {
	ck.required("title", c.Title)
	ck.text("description", c.Description)
	ck.enum("goal_type", &c.GoalType, goalTypes, "task")
	ck.enum("priority", &c.Priority, goalPriorities, "medium")
	ck.enum("status", &c.Status, goalStatuses, "active")
	c.Metadata.normalize(ck, 0.8, false)
}

func (c *PlaybookContent) normalize(ck *checker) {
	ck.required("name", c.Name)
	ck.required("description", c.Description)
	if c.Steps == nil {
		c.Steps = []PlaybookStep{}
	}
	if len(c.Steps) > MaxListItems {
		ck.fail("steps", "content.steps holds %d items; the limit is %d", len(c.Steps), MaxListItems)
	}
	for i, s := range c.Steps {
		ck.required(fmt.Sprintf("steps[%d].action", i), s.Action)
		ck.text(fmt.Sprintf("steps[%d].details", i), s.Details)
	}
	ck.list("trigger_conditions", &c.TriggerConditions)
	ck.list("failure_modes", &c.FailureModes)
	c.Metadata.normalize(ck, 0.8, false)
}

func (c *RawEntryContent) normalize(ck *checker) {
	ck.required("content", c.Content)
	ck.enum("source", &c.Source, rawSources, "sdk")
	c.Metadata.normalize(ck, 1.0, false)
}

func (c *RelationshipContent) normalize(ck *checker) {
	ck.required("entity_name", c.EntityName)
	ck.required("relationship_type", c.RelationshipType)
	ck.text("entity_type", c.EntityType)
	ck.text("notes", c.Notes)
	ck.rangeDefault("sentiment", &c.Sentiment, -1, 1, 0)
	c.Metadata.normalize(ck, 0.8, false)
}

func (c *DriveContent) normalize(ck *checker) {
	ck.required("drive_type", c.DriveType)
	ck.rangeDefault("intensity", &c.Intensity, 0, 1, 0.5)
	ck.list("focus_areas", &c.FocusAreas)
	c.Metadata.normalize(ck, 0.8, true)
}

// checker keeps the first validation error; later checks still fill
// defaults so the code reads straight.
type checker struct{ err error }

func (ck *checker) fail(field, format string, args ...any) {
	if ck.err == nil {
		ck.err = domain.Invalid("content."+field, format, args...)
	}
}

func (ck *checker) required(field, v string) {
	if strings.TrimSpace(v) == "" {
		ck.fail(field, "content.%s is required", field)
		return
	}
	ck.text(field, v)
}

func (ck *checker) text(field, v string) {
	if n := len([]rune(v)); n > MaxTextChars {
		ck.fail(field, "content.%s is %d characters long; the limit is %d", field, n, MaxTextChars)
	}
}

func (ck *checker) list(field string, v *[]string) {
	if *v == nil {
		*v = []string{}
	}
	if len(*v) > MaxListItems {
		ck.fail(field, "content.%s holds %d items; the limit is %d", field, len(*v), MaxListItems)
	}
	for i, s := range *v {
		ck.text(fmt.Sprintf("%s[%d]", field, i), s)
	}
}

func (ck *checker) enum(field string, v *string, allowed []string, def string) {
	if *v == "" {
		*v = def
		return
	}
	for _, a := range allowed {
		if *v == a {
			return
		}
	}
	ck.fail(field, "content.%s must be one of %s, got %q", field, strings.Join(allowed, ", "), *v)
}

func (ck *checker) rangeDefault(field string, v **float64, lo, hi, def float64) {
	if *v == nil {
		d := def
		*v = &d
		return
	}
	if **v < lo || **v > hi || **v != **v {
		ck.fail(field, "content.%s must be between %g and %g, got %g", field, lo, hi, **v)
	}
}
