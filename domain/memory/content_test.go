package memory

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
)

// minimal is the smallest valid content of each type.
var minimal = map[Type]string{
	Episode:      `{"objective":"ship v1","outcome":"shipped"}`,
	Belief:       `{"statement":"tests catch regressions"}`,
	Note:         `{"content":"remember the milk"}`,
	Value:        `{"name":"honesty","statement":"say what is true"}`,
	Goal:         `{"title":"learn Go"}`,
	Playbook:     `{"name":"deploy","description":"how to deploy"}`,
	RawEntry:     `{"content":"raw blob"}`,
	Relationship: `{"entity_name":"Ada","relationship_type":"colleague"}`,
	Drive:        `{"drive_type":"curiosity"}`,
}

func TestNormalizeContentFillsDefaults(t *testing.T) {
	tests := []struct {
		typ  Type
		want map[string]any
	}{
		{Episode, map[string]any{"lessons": []any{}, "emotional_valence": 0.0, "emotional_arousal": 0.0, "confidence": 0.8, "strength": 1.0, "is_protected": false, "source_type": "direct_experience"}},
		{Belief, map[string]any{"belief_type": "fact", "scope": "world", "confidence": 0.8, "strength": 1.0}},
		{Note, map[string]any{"note_type": "note", "confidence": 0.8}},
		{Value, map[string]any{"priority": 50.0, "confidence": 0.9, "is_protected": true}},
		{Goal, map[string]any{"description": "", "goal_type": "task", "priority": "medium", "status": "active"}},
		{Playbook, map[string]any{"steps": []any{}, "trigger_conditions": []any{}, "failure_modes": []any{}}},
		{RawEntry, map[string]any{"source": "sdk", "processed": false, "confidence": 1.0}},
		{Relationship, map[string]any{"sentiment": 0.0}},
		{Drive, map[string]any{"intensity": 0.5, "focus_areas": []any{}, "is_protected": true}},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			out, err := NormalizeContent(tt.typ, json.RawMessage(minimal[tt.typ]))
			if err != nil {
				t.Fatalf("NormalizeContent: %v", err)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.want {
				if !jsonEqual(got[k], want) {
					t.Errorf("%s = %#v, want %#v (content %s)", k, got[k], want, out)
				}
			}
			// Canonical content is a fixed point: normalizing it again
			// changes nothing.
			again, err := NormalizeContent(tt.typ, out)
			if err != nil || string(again) != string(out) {
				t.Errorf("normalizing canonical content: %s, %v; want %s", again, err, out)
			}
		})
	}
}

func TestNormalizeContentRejects(t *testing.T) {
	long := strings.Repeat("x", MaxTextChars+1)
	manyStrings := "[" + strings.TrimSuffix(strings.Repeat(`"l",`, MaxListItems+1), ",") + "]"
	manySteps := "[" + strings.TrimSuffix(strings.Repeat(`{"action":"a"},`, MaxListItems+1), ",") + "]"
	tests := []struct {
		name    string
		typ     Type
		content string
		field   string
	}{
		{"missing content", Note, ``, "content"},
		{"null content", Note, `null`, "content"},
		{"not an object", Note, `["a"]`, "content"},
		{"two objects", Note, `{"content":"a"} {}`, "content"},
		{"unknown type", Type("diary"), `{}`, "type"},

		{"episode objective missing", Episode, `{"outcome":"x"}`, "content.objective"},
		{"episode outcome blank", Episode, `{"objective":"x","outcome":"  "}`, "content.outcome"},
		{"episode valence range", Episode, `{"objective":"x","outcome":"y","emotional_valence":-1.5}`, "content.emotional_valence"},
		{"episode arousal range", Episode, `{"objective":"x","outcome":"y","emotional_arousal":2}`, "content.emotional_arousal"},
		{"episode outcome_type enum", Episode, `{"objective":"x","outcome":"y","outcome_type":"meh"}`, "content.outcome_type"},
		{"episode lessons type", Episode, `{"objective":"x","outcome":"y","lessons":"one"}`, "content.lessons"},
		{"episode lesson too long", Episode, `{"objective":"x","outcome":"y","lessons":["` + long + `"]}`, "content.lessons[0]"},
		{"episode unknown field", Episode, `{"objective":"x","outcome":"y","mood":"ok"}`, "content.mood"},
		{"episode too many lessons", Episode, `{"objective":"x","outcome":"y","lessons":` + manyStrings + `}`, "content.lessons"},
		{"playbook too many steps", Playbook, `{"name":"n","description":"d","steps":` + manySteps + `}`, "content.steps"},

		{"belief statement missing", Belief, `{}`, "content.statement"},
		{"belief type enum", Belief, `{"statement":"s","belief_type":"rumour"}`, "content.belief_type"},
		{"belief scope enum", Belief, `{"statement":"s","scope":"galaxy"}`, "content.scope"},
		{"belief confidence range", Belief, `{"statement":"s","confidence":1.01}`, "content.confidence"},

		{"note content missing", Note, `{"note_type":"fact"}`, "content.content"},
		{"note type enum", Note, `{"content":"c","note_type":"poem"}`, "content.note_type"},
		{"note text too long", Note, `{"content":"` + long + `"}`, "content.content"},

		{"value name missing", Value, `{"statement":"s"}`, "content.name"},
		{"value statement missing", Value, `{"name":"n"}`, "content.statement"},
		{"value priority low", Value, `{"name":"n","statement":"s","priority":0}`, "content.priority"},
		{"value priority high", Value, `{"name":"n","statement":"s","priority":101}`, "content.priority"},
		{"value priority type", Value, `{"name":"n","statement":"s","priority":"high"}`, "content.priority"},

		{"goal title missing", Goal, `{"description":"d"}`, "content.title"},
		{"goal type enum", Goal, `{"title":"t","goal_type":"dream"}`, "content.goal_type"},
		{"goal priority enum", Goal, `{"title":"t","priority":"urgent"}`, "content.priority"},
		{"goal status enum", Goal, `{"title":"t","status":"done"}`, "content.status"},

		{"playbook name missing", Playbook, `{"description":"d"}`, "content.name"},
		{"playbook description missing", Playbook, `{"name":"n"}`, "content.description"},
		{"playbook step action missing", Playbook, `{"name":"n","description":"d","steps":[{"details":"x"}]}`, "content.steps[0].action"},

		{"raw content missing", RawEntry, `{"source":"cli"}`, "content.content"},
		{"raw source enum", RawEntry, `{"content":"c","source":"email"}`, "content.source"},
		{"raw processed type", RawEntry, `{"content":"c","processed":"yes"}`, "content.processed"},

		{"relationship entity missing", Relationship, `{"relationship_type":"friend"}`, "content.entity_name"},
		{"relationship type missing", Relationship, `{"entity_name":"Ada"}`, "content.relationship_type"},
		{"relationship sentiment range", Relationship, `{"entity_name":"Ada","relationship_type":"friend","sentiment":-2}`, "content.sentiment"},

		{"drive type missing", Drive, `{"intensity":0.3}`, "content.drive_type"},
		{"drive intensity range", Drive, `{"drive_type":"d","intensity":1.5}`, "content.intensity"},

		{"metadata strength range", Note, `{"content":"c","strength":-0.1}`, "content.strength"},
		{"metadata source_type enum", Note, `{"content":"c","source_type":"dream"}`, "content.source_type"},
		{"metadata is_protected type", Note, `{"content":"c","is_protected":"no"}`, "content.is_protected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NormalizeContent(tt.typ, json.RawMessage(tt.content))
			assertInvalidField(t, err, tt.field)
		})
	}
}

func TestNormalizeContentKeepsValidValues(t *testing.T) {
	out, err := NormalizeContent(Episode, json.RawMessage(`{"objective":"o","outcome":"x","outcome_type":"success",
		"lessons":["a","b"],"emotional_valence":-1,"emotional_arousal":1,"confidence":0,"strength":0.5,"is_protected":true,"source_type":"inference"}`))
	if err != nil {
		t.Fatal(err)
	}
	var got EpisodeContent
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.OutcomeType != "success" || len(got.Lessons) != 2 || *got.EmotionalValence != -1 || *got.EmotionalArousal != 1 ||
		*got.Confidence != 0 || *got.Strength != 0.5 || !*got.IsProtected || got.SourceType != "inference" {
		t.Errorf("values changed: %s", out)
	}
}

func assertInvalidField(t *testing.T, err error, field string) {
	t.Helper()
	de, ok := domain.AsError(err)
	if !ok || de.Kind != domain.KindInvalid {
		t.Fatalf("err = %v, want a KindInvalid error naming %s", err, field)
	}
	if got, _ := de.Details["field"].(string); got != field {
		t.Errorf("field = %q, want %q (message %q)", got, field, de.Message)
	}
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
