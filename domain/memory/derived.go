package memory

import (
	"fmt"
	"strings"

	"github.com/engram-memory/engram/domain"
)

// Ref is a "type:id" provenance reference.
type Ref struct {
	Type Type
	ID   string
}

func (r Ref) String() string { return string(r.Type) + ":" + r.ID }

// ParseRefs parses derived_from entries ("episode:<id>", any spelling
// ParseType accepts, e.g. "raw:<id>") into canonical refs; existence is checked by the
// command that records them.
func ParseRefs(field string, refs []string) ([]Ref, error) {
	out := make([]Ref, 0, len(refs))
	for i, s := range refs {
		typ, id, ok := strings.Cut(s, ":")
		typ, id = strings.TrimSpace(typ), strings.TrimSpace(id)
		t, known := ParseType(typ)
		if !ok || !known || id == "" {
			return nil, domain.Invalid(field, "%s[%d] must look like \"type:id\" (e.g. \"episode:0193…\"), got %q", field, i, s).WithDetail("index", i)
		}
		out = append(out, Ref{Type: t, ID: id})
	}
	return out, nil
}

// RefStrings renders refs canonically.
func RefStrings(refs []Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.String()
	}
	return out
}

// ErrRefNotFound builds the error for a derived_from target missing from
// the agent.
func ErrRefNotFound(field string, index int, r Ref) error {
	return domain.Invalid(field, "%s[%d]: %s does not exist in this agent", field, index, r).WithDetail("index", index).WithDetail("ref", fmt.Sprint(r))
}
