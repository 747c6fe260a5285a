package api_test

import (
	"maps"
	"strconv"
	"strings"
	"testing"
)

// TestTheDocumentSaysNullAndEmptyMeanAbsent walks the document: every
// optional property of every JSON request body, at any depth, and every
// map's value, must admit null, and every optional query parameter must
// allow an empty value, since the server takes either as the field or
// parameter absent
// (docs/api.md#absent-values). A field added without it fails here;
// test/openapi/absent.py writes the rule into the document.
func TestTheDocumentSaysNullAndEmptyMeanAbsent(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	b := d.bodies
	seen := map[string]bool{}
	var optional []string // JSON pointers of optional properties and map values
	// inherited: the properties the enclosing schema requires, which its
	// anyOf/oneOf/allOf branches describe without requiring again.
	var walk func(ptr string, inherited map[string]bool)
	walk = func(ptr string, inherited map[string]bool) {
		node, ok := b.at(ptr).(map[string]any)
		if !ok {
			return
		}
		if ref, ok := node["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
			if !seen[ref] {
				seen[ref] = true
				walk(strings.TrimPrefix(ref, "#"), inherited)
			}
		}
		required := maps.Clone(inherited)
		if required == nil {
			required = map[string]bool{}
		}
		if list, ok := node["required"].([]any); ok {
			for _, name := range list {
				required[name.(string)] = true
			}
		}
		if props, ok := node["properties"].(map[string]any); ok {
			for name := range props {
				p := ptr + "/properties/" + escapeToken(name)
				if !required[name] {
					optional = append(optional, p)
				}
				walk(p, nil)
			}
		}
		walk(ptr+"/items", nil)
		// A map's entry is optional too: its value admits null (a layer
		// of the processing patch sent as null leaves the layer as it is).
		if values, ok := node["additionalProperties"].(map[string]any); ok && len(values) > 0 {
			optional = append(optional, ptr+"/additionalProperties")
			walk(ptr+"/additionalProperties", nil)
		}
		for _, key := range []string{"then", "else"} {
			walk(ptr+"/"+key, required)
		}
		for _, key := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
			branches, _ := node[key].([]any)
			for i := range branches {
				if key == "prefixItems" {
					walk(ptr+"/"+key+"/"+strconv.Itoa(i), nil)
				} else {
					walk(ptr+"/"+key+"/"+strconv.Itoa(i), required)
				}
			}
		}
	}
	paths, _ := b.doc["paths"].(map[string]any)
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for method := range ops {
			if ptr, ok := b.resolve("paths", path, method, "requestBody", "content", "application/json", "schema"); ok {
				walk(ptr, nil)
			}
		}
	}
	if len(optional) < 100 {
		t.Fatalf("found %d optional body properties; the walk lost its way", len(optional))
	}
	for _, ptr := range optional {
		if err := b.validate(ptr, []byte("null")); err != nil {
			t.Errorf("%s refuses null, which the server takes as absent (run test/openapi/absent.py): %v", ptr, err)
		}
	}

	for path, item := range d.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, ref := range op.Parameters {
				if p := ref.Value; p.In == "query" && !p.Required && !p.AllowEmptyValue {
					t.Errorf("%s %s: optional query parameter %s lacks allowEmptyValue: the server takes an empty value as absent (run test/openapi/absent.py)", method, path, p.Name)
				}
			}
		}
	}
}
