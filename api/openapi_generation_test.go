package api_test

import (
	"fmt"
	"testing"
)

// TestOpenAPIBranchKeysHaveOnePattern: where an object's allOf holds a
// oneOf whose branches are told apart by a pattern on one of its
// properties (MemoryContentByType's `type`), the object's own schema of
// that property carries no pattern of its own. The branches' patterns
// already say which values are allowed; a second pattern on the same
// string leaves a generator (schemathesis 4.32) drawing from one pattern
// and filtering by the other, or joining matches of both, which no value
// survives: its fuzzing of POST /v1/memories/batch, a list of such
// objects, failed the filter_too_much health check at make fuzz-api's
// budget.
func TestOpenAPIBranchKeysHaveOnePattern(t *testing.T) {
	t.Parallel()
	d := rawOpenAPI(t)
	checked := 0
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			checked += d.branchKeyProblems(t, at, v)
			for _, k := range sortedKeys(v) {
				walk(at+"/"+k, v[k])
			}
		case []any:
			for i, item := range v {
				walk(fmt.Sprintf("%s/%d", at, i), item)
			}
		}
	}
	walk("#", map[string]any(d))
	if checked == 0 {
		t.Fatal("no object of the document has an allOf of branches keyed by a pattern: the test checks nothing")
	}
}

// branchKeyProblems reports each property of the object schema at that
// the branches of a oneOf in its allOf key by a pattern and that the
// object also gives a pattern; it returns how many such keys it saw.
func (d rawDoc) branchKeyProblems(t *testing.T, at string, schema map[string]any) int {
	t.Helper()
	own, _ := schema["properties"].(map[string]any)
	all, _ := schema["allOf"].([]any)
	if own == nil || all == nil {
		return 0
	}
	seen := 0
	for _, part := range all {
		branches, _ := d.resolve(asObject(part))["oneOf"].([]any)
		keyed := map[string]bool{}
		for _, branch := range branches {
			props, _ := d.resolve(asObject(branch))["properties"].(map[string]any)
			for name, prop := range props {
				if _, ok := d.resolve(asObject(prop))["pattern"]; ok {
					keyed[name] = true
				}
			}
		}
		for _, name := range sortedKeys(keyed) {
			seen++
			if _, ok := d.resolve(asObject(own[name]))["pattern"]; ok {
				t.Errorf("%s: property %q has a pattern of its own beside those of the oneOf branches it is keyed by: leave the branches' alone", at, name)
			}
		}
	}
	return seen
}
