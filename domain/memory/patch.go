package memory

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/engram-memory/engram/domain"
)

// ParseContentPatch reads a client's content patch: a JSON object of the
// top-level fields to change, where null removes a field so its default
// applies again (RFC 7396 at the first level; nested values are replaced
// whole).
func ParseContentPatch(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var changes map[string]json.RawMessage
	if err := json.Unmarshal(raw, &changes); err != nil || changes == nil {
		return nil, domain.Invalid("content", "content must be a JSON object of the fields to change")
	}
	return changes, nil
}

// ApplyContentChanges merges changes into the canonical content stored
// (a null value removes the field) and returns the result in canonical
// form, validated as a whole. Commands use it to decide a patch and
// projections to apply a MemoryPatched, so both reach the same bytes.
func ApplyContentChanges(t Type, stored json.RawMessage, changes map[string]json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(stored, &fields); err != nil {
		return nil, fmt.Errorf("memory: stored content: %w", err)
	}
	for k, v := range changes {
		if isNull(v) {
			delete(fields, k)
		} else {
			fields[k] = v
		}
	}
	merged, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("memory: merge content: %w", err)
	}
	return NormalizeContent(t, merged)
}

// ContentChanges lists the top-level fields that differ between two
// canonical contents: the new value of each changed or added field, and
// null for each removed one. It is what a MemoryPatched records; nil when
// nothing changed.
func ContentChanges(before, after json.RawMessage) (map[string]json.RawMessage, error) {
	var old, cur map[string]json.RawMessage
	if err := json.Unmarshal(before, &old); err != nil {
		return nil, fmt.Errorf("memory: content changes: %w", err)
	}
	if err := json.Unmarshal(after, &cur); err != nil {
		return nil, fmt.Errorf("memory: content changes: %w", err)
	}
	var changes map[string]json.RawMessage
	set := func(k string, v json.RawMessage) {
		if changes == nil {
			changes = map[string]json.RawMessage{}
		}
		changes[k] = v
	}
	for k, v := range cur {
		if was, ok := old[k]; !ok || !bytes.Equal(was, v) {
			set(k, v)
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			set(k, json.RawMessage("null"))
		}
	}
	return changes, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }
