package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// fieldKind says how a content flag's text becomes JSON.
type fieldKind int

const (
	kindText  fieldKind = iota // a string; the last occurrence wins
	kindList                   // a list of strings; the flag repeats
	kindFloat                  // a number
	kindInt                    // an integer
	kindBool                   // true/false; the bare flag means true
	kindSteps                  // playbook steps: "ACTION" or "ACTION :: DETAILS"; repeats
)

// contentField is one field of a type's content and the flag that sets it:
// the field name with '-' for '_' (docs/decisions.md#memory-content).
type contentField struct {
	name     string
	kind     fieldKind
	required bool
	help     string
}

func (f contentField) flagName() string { return strings.ReplaceAll(f.name, "_", "-") }

// metadataFields are accepted by every type.
func metadataFields() []contentField {
	return []contentField{
		{"confidence", kindFloat, false, "confidence 0..1"},
		{"strength", kindFloat, false, "strength 0..1 (default 1.0)"},
		{"is_protected", kindBool, false, "protect from forgetting"},
		{"source_type", kindText, false, "direct_experience, inference, external, consolidation, processing, seed, observation or unknown"},
	}
}

// captureType is one capture command.
type captureType struct {
	command string
	typ     memory.Type
	article string
	// fields lists the content fields; the first is the main text, the
	// one the positional argument fills (it leads the memory's indexed
	// text and its summary in listings). A drive has no text: its first
	// field is its type.
	fields []contentField
	// stdin: with neither the argument nor the flag, the main text is read
	// from stdin (raw entries, so that a pipe can capture).
	stdin bool
}

// textField is the field the positional argument fills.
func (t captureType) textField() contentField { return t.fields[0] }

// args is the usage line after the command name: the main text as the
// argument (or its flag), then the other required flags.
func (t captureType) args() string {
	text := t.textField()
	arg := strings.ToUpper(text.flagName())
	if t.stdin {
		arg += " | stdin"
	}
	parts := []string{"[" + arg + "]"}
	if text.required && !t.stdin {
		parts[0] = arg
	}
	for _, f := range t.fields[1:] {
		if f.required {
			parts = append(parts, "--"+f.flagName()+" …")
		}
	}
	return strings.Join(append(parts, "[flags]"), " ")
}

// captureTypes lists the capture commands, one per memory type, with a
// flag per content field. Every field can be given as a flag; the first can
// also be the argument: `engram belief "the sky is blue"`.
func captureTypes() []captureType {
	return []captureType{
		{"episode", memory.Episode, "an", []contentField{
			{"objective", kindText, true, "what was attempted"},
			{"outcome", kindText, true, "what happened"},
			{"outcome_type", kindText, false, "success, failure, partial, neutral, mixed or unknown"},
			{"lessons", kindList, false, "a lesson learned (repeat for more)"},
			{"emotional_valence", kindFloat, false, "-1..1"},
			{"emotional_arousal", kindFloat, false, "0..1"},
		}, false},
		{"belief", memory.Belief, "a", []contentField{
			{"statement", kindText, true, "what is believed"},
			{"belief_type", kindText, false, "fact (default), assumption, hypothesis, opinion, rule, …"},
			{"scope", kindText, false, "world (default), self or relational"},
		}, false},
		{"note", memory.Note, "a", []contentField{
			{"content", kindText, true, "the note"},
			{"note_type", kindText, false, "note (default), decision, diagnostic, fact, insight, observation, procedure, quote or reference"},
			{"speaker", kindText, false, "who said it"},
			{"reason", kindText, false, "why it matters"},
		}, false},
		{"value", memory.Value, "a", []contentField{
			{"name", kindText, true, "short name"},
			{"statement", kindText, true, "what is valued"},
			{"priority", kindInt, false, "1..100 (default 50)"},
		}, false},
		{"goal", memory.Goal, "a", []contentField{
			{"title", kindText, true, "the goal"},
			{"description", kindText, false, "more detail"},
			{"goal_type", kindText, false, "task (default), aspiration, commitment or exploration"},
			{"priority", kindText, false, "low, medium (default), high or critical"},
			{"status", kindText, false, "active (default), completed, paused or abandoned"},
		}, false},
		{"playbook", memory.Playbook, "a", []contentField{
			{"name", kindText, true, "short name"},
			{"description", kindText, true, "what it is for"},
			{"steps", kindSteps, false, "a step, \"ACTION\" or \"ACTION :: DETAILS\" (repeat for more)"},
			{"trigger_conditions", kindList, false, "when to use it (repeat for more)"},
			{"failure_modes", kindList, false, "how it fails (repeat for more)"},
		}, false},
		{"raw", memory.RawEntry, "a", []contentField{
			{"content", kindText, true, "the text (or give it on stdin)"},
			{"source", kindText, false, "cli (default here), mcp, sdk or import"},
			{"processed", kindBool, false, "mark as processed"},
		}, true},
		{"relationship", memory.Relationship, "a", []contentField{
			{"entity_name", kindText, true, "who or what"},
			{"relationship_type", kindText, true, "e.g. colleague, tool, friend"},
			{"entity_type", kindText, false, "e.g. person, organisation"},
			{"notes", kindText, false, "notes"},
			{"sentiment", kindFloat, false, "-1..1"},
		}, false},
		{"drive", memory.Drive, "a", []contentField{
			{"drive_type", kindText, true, "e.g. curiosity, growth"},
			{"intensity", kindFloat, false, "0..1"},
			{"focus_areas", kindList, false, "a focus area (repeat for more)"},
		}, false},
	}
}

// captureTypeOf returns the capture description of a memory type.
func captureTypeOf(t memory.Type) captureType {
	for _, ct := range captureTypes() {
		if ct.typ == t {
			return ct
		}
	}
	return captureType{typ: t}
}

// fieldFlags collects the content flags given on a command line; values
// are converted once the memory type is known (edit learns it from the
// stored memory).
type fieldFlags struct {
	values map[string][]string // flag name → occurrences in order
	kinds  map[string]fieldKind
}

// occurrence records one occurrence of a content flag.
type occurrence struct {
	ff   *fieldFlags
	name string
	bool bool
}

func (o occurrence) String() string { return "" }
func (o occurrence) Set(s string) error {
	o.ff.values[o.name] = append(o.ff.values[o.name], s)
	return nil
}
func (o occurrence) IsBoolFlag() bool { return o.bool }

// registerFields adds a flag for each field to fs; a field name seen twice
// (priority is an integer for values and a word for goals) is registered
// once. The help of the field named positional says that the argument
// can give it instead.
func registerFields(fs *flag.FlagSet, fields []contentField, positional string) *fieldFlags {
	ff := &fieldFlags{values: map[string][]string{}, kinds: map[string]fieldKind{}}
	for _, f := range fields {
		name := f.flagName()
		if fs.Lookup(name) != nil {
			continue
		}
		help := f.help
		switch {
		case f.name == positional && f.required:
			help += " (required; or give it as the argument)"
		case f.name == positional:
			help += " (or give it as the argument)"
		case f.required:
			help += " (required)"
		}
		fs.Var(occurrence{ff: ff, name: name, bool: f.kind == kindBool}, name, help)
	}
	return ff
}

// content builds the JSON content object of the given flags for fields;
// a flag that is not one of fields is an error naming the allowed flags.
func (ff *fieldFlags) content(t memory.Type, fields []contentField) (map[string]any, error) {
	byFlag := map[string]contentField{}
	for _, f := range fields {
		byFlag[f.flagName()] = f
	}
	out := map[string]any{}
	names := make([]string, 0, len(ff.values))
	for name := range ff.values {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		vals := ff.values[name]
		f, ok := byFlag[name]
		if !ok {
			return nil, domain.Invalid("content."+strings.ReplaceAll(name, "-", "_"), "--%s is not a field of a %s; its fields are %s", name, t, flagList(fields))
		}
		v, err := f.value(vals)
		if err != nil {
			return nil, err
		}
		out[f.name] = v
	}
	return out, nil
}

func flagList(fields []contentField) string {
	var names []string
	for _, f := range fields {
		names = append(names, "--"+f.flagName())
	}
	return strings.Join(names, ", ")
}

// value converts a flag's occurrences to the field's JSON value.
func (f contentField) value(vals []string) (any, error) {
	last := vals[len(vals)-1]
	bad := func(what string) error {
		return domain.Invalid("content."+f.name, "--%s must be %s, got %q", f.flagName(), what, last)
	}
	switch f.kind {
	case kindList:
		return vals, nil
	case kindSteps:
		steps := make([]map[string]string, len(vals))
		for i, v := range vals {
			action, details, _ := strings.Cut(v, "::")
			steps[i] = map[string]string{"action": strings.TrimSpace(action)}
			if d := strings.TrimSpace(details); d != "" {
				steps[i]["details"] = d
			}
		}
		return steps, nil
	case kindFloat:
		n, err := strconv.ParseFloat(last, 64)
		if err != nil {
			return nil, bad("a number")
		}
		return n, nil
	case kindInt:
		n, err := strconv.Atoi(last)
		if err != nil {
			return nil, bad("an integer")
		}
		return n, nil
	case kindBool:
		b, err := strconv.ParseBool(last)
		if err != nil {
			return nil, bad("true or false")
		}
		return b, nil
	}
	return last, nil
}

// commonFlags are the fields every memory has besides its content.
type commonFlags struct {
	tags        stringList
	derivedFrom stringList
	createdAt   string
}

func registerCommon(fs *flag.FlagSet) *commonFlags {
	cf := &commonFlags{}
	fs.Var(&cf.tags, "tag", "a tag (repeat for more)")
	fs.Var(&cf.derivedFrom, "derived-from", "TYPE:ID of a memory this one derives from (repeat for more)")
	fs.StringVar(&cf.createdAt, "created-at", "", "RFC 3339 creation time, for imports (default now)")
	return cf
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// contentJSON encodes a content map.
func contentJSON(content map[string]any) (json.RawMessage, error) {
	raw, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("encode content: %w", err)
	}
	return raw, nil
}
