// Package memory defines agents' typed memories: their types, content
// fields, defaults and validation, the text that is indexed for search,
// and the events that record every change.
package memory

import (
	"slices"
	"sort"
	"strings"

	"github.com/engram-memory/engram/domain"
)

// Type is a memory type by its singular name, as results show it.
type Type string

const (
	Episode      Type = "episode"
	Belief       Type = "belief"
	Note         Type = "note"
	Value        Type = "value"
	Goal         Type = "goal"
	Playbook     Type = "playbook"
	RawEntry     Type = "raw_entry"
	Relationship Type = "relationship"
	Drive        Type = "drive"
)

// typeInfo is the immutable table of types: plural (filter) name, the
// other spellings accepted for it (short forms) and whether the type is
// indexed for search. Every route parses type names with ParseType, so
// each spelling is accepted alike everywhere.
var typeInfo = []struct {
	t          Type
	plural     string
	short      []string
	searchable bool
}{
	{Episode, "episodes", nil, true},
	{Belief, "beliefs", nil, true},
	{Note, "notes", nil, true},
	{Value, "agent_values", []string{"values", "agent_value"}, true},
	{Goal, "goals", nil, true},
	{Playbook, "playbooks", nil, true},
	{RawEntry, "raw_entries", []string{"raw"}, true},
	{Relationship, "relationships", nil, true},
	{Drive, "drives", nil, false},
}

// Types lists every memory type.
func Types() []Type {
	out := make([]Type, len(typeInfo))
	for i, ti := range typeInfo {
		out[i] = ti.t
	}
	return out
}

// SearchableTypes lists the types that search and similarity can return.
func SearchableTypes() []Type {
	var out []Type
	for _, ti := range typeInfo {
		if ti.searchable {
			out = append(out, ti.t)
		}
	}
	return out
}

// Plural is the type's filter name (e.g. "agent_values").
func (t Type) Plural() string {
	for _, ti := range typeInfo {
		if ti.t == t {
			return ti.plural
		}
	}
	return string(t)
}

// Searchable tells whether memories of this type are indexed for search.
func (t Type) Searchable() bool {
	for _, ti := range typeInfo {
		if ti.t == t {
			return ti.searchable
		}
	}
	return false
}

// ParseType accepts a type's plural, singular or short name ("episodes",
// "episode"; "agent_values", "value", "values"; "raw_entries",
// "raw_entry", "raw"), in any case.
func ParseType(name string) (Type, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, ti := range typeInfo {
		if n == string(ti.t) || n == ti.plural || slices.Contains(ti.short, n) {
			return ti.t, true
		}
	}
	return "", false
}

// ParseTypeFilter turns a list of type names into a sorted, de-duplicated
// set; field names the request field for errors. An empty list is nil (all).
func ParseTypeFilter(field string, names []string) ([]Type, error) {
	if len(names) == 0 {
		return nil, nil
	}
	seen := map[Type]bool{}
	var out []Type
	for i, n := range names {
		t, ok := ParseType(n)
		if !ok {
			return nil, domain.Invalid(field, "%s[%d]: unknown memory type %q; use one of %s", field, i, n, strings.Join(pluralNames(), ", ")).
				WithDetail("index", i)
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// ParseSearchableTypes parses a type filter (plural or singular names)
// that may only name searchable types; empty means every searchable type.
func ParseSearchableTypes(field string, names []string) ([]Type, error) {
	types, err := ParseTypeFilter(field, names)
	if err != nil {
		return nil, err
	}
	if types == nil {
		return SearchableTypes(), nil
	}
	for _, t := range types {
		if !t.Searchable() {
			return nil, domain.Invalid(field, "%s: %s memories are not searchable and have no embeddings", field, t.Plural())
		}
	}
	return types, nil
}

func pluralNames() []string {
	out := make([]string, len(typeInfo))
	for i, ti := range typeInfo {
		out[i] = ti.plural
	}
	return out
}
