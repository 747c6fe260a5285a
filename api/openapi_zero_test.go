package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestTheServerTakesGoZeroValuesAsTheDocumentSays walks the document for
// every request field whose documented range holds Go's zero value of its
// type (a date-time, an integer whose range holds 0), sends that value,
// and expects the server to answer as the document does: a Go zero value
// the server took as the field absent, while the document allows it
// explicitly, is the mismatch this finds (docs/api.md#absent-values). A
// time before 1970, Go's zero time 0001-01-01T00:00:00Z among them, is
// refused by both (a pushed event's time was refused as missing, a
// memory's created_at taken as now, a search's created_before as no
// bound); 1970-01-01T00:00:00Z is taken by both, and an integer's 0 too.
// A field the walk finds without a request below fails the test, so a
// field added to the document is swept too.
func TestTheServerTakesGoZeroValuesAsTheDocumentSays(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	s := newStack(t, stackOptions{fixedAuth: true})
	const agent = "zero-values"
	now := time.Now().UTC().Format(time.RFC3339)
	note := map[string]any{"content": "zero"}
	type request struct {
		method, path string
		body         any
	}
	// push is a push of one event of typ (at the time now, unless set),
	// its payload the fields given; a change names a memory the agent does
	// not have, whose times are checked all the same.
	push := func(typ string, payload map[string]any, at any) request {
		if at == nil {
			at = now
		}
		return request{"POST", "/v1/sync/events", map[string]any{"agent_id": agent, "events": []any{
			map[string]any{"id": uuid.NewString(), "type": typ, "time": at, "payload": payload}}}}
	}
	change := func(typ, field string) func(v any) request {
		return func(v any) request {
			payload := map[string]any{"memory_id": uuid.NewString(), field: v}
			if typ == "MemoryWeakened" {
				payload["by"] = 0.1
			}
			return push(typ, payload, nil)
		}
	}
	// settings are whole settings, with section's field set to v when
	// section is not empty; the stack stays initializing, which takes
	// memories without provenance, whichever request runs first.
	settings := func(section, field string, v any) map[string]any {
		out := map[string]any{"stack_state": "initializing", "enforce_provenance": true, "lazy_decay": true,
			"lint_rules":      map[string]any{"enabled": true, "min_length": 10, "max_length": 2000, "check_fragments": true, "check_prefix_artifacts": true, "check_templated_noise": true},
			"promotion_gates": map[string]any{"belief_min_evidence": 3, "belief_min_confidence": 0.6, "value_min_evidence": 5, "value_requires_protection": true}}
		if section != "" {
			out[section].(map[string]any)[field] = v
		}
		return out
	}
	pushedSettings := func(section, field string) func(v any) request {
		return func(v any) request {
			return push("StackSettingsChanged", map[string]any{"settings": settings(section, field, v)}, nil)
		}
	}
	patchedSetting := func(section, field string) func(v any) request {
		return func(v any) request {
			return request{"PATCH", "/v1/agents/" + agent + "/settings", map[string]any{section: map[string]any{field: v}}}
		}
	}
	requests := map[string]func(v any) request{
		"GET /v1/sync/events ?after": func(v any) request {
			return request{"GET", fmt.Sprintf("/v1/sync/events?agent_id=%s&after=%v", agent, v), nil}
		},
		"PATCH /v1/agents/{agent_id}/processing layers.*.max_passes_per_day": func(v any) request {
			return request{"PATCH", "/v1/agents/" + agent + "/processing", map[string]any{"layers": map[string]any{"raw_to_note": map[string]any{"max_passes_per_day": v}}}}
		},
		"PATCH /v1/agents/{agent_id}/settings lint_rules.min_length":               patchedSetting("lint_rules", "min_length"),
		"PATCH /v1/agents/{agent_id}/settings promotion_gates.belief_min_evidence": patchedSetting("promotion_gates", "belief_min_evidence"),
		"PATCH /v1/agents/{agent_id}/settings promotion_gates.value_min_evidence":  patchedSetting("promotion_gates", "value_min_evidence"),
		"POST /v1/memories created_at": func(v any) request {
			return request{"POST", "/v1/memories", map[string]any{"agent_id": agent, "type": "note", "content": note, "created_at": v}}
		},
		"POST /v1/memories/batch memories[].created_at": func(v any) request {
			return request{"POST", "/v1/memories/batch", map[string]any{"agent_id": agent, "memories": []any{map[string]any{"type": "note", "content": note, "created_at": v}}}}
		},
		"POST /v1/search created_after": func(v any) request {
			return request{"POST", "/v1/search", map[string]any{"agent_id": agent, "query": "zero", "created_after": v}}
		},
		"POST /v1/search created_before": func(v any) request {
			return request{"POST", "/v1/search", map[string]any{"agent_id": agent, "query": "zero", "created_before": v}}
		},
		"POST /v1/sync/events events[].time": func(v any) request {
			return push("MemoryForgotten", map[string]any{"memory_id": uuid.NewString()}, v)
		},
		"POST /v1/sync/events events[](AgentCreated).payload.created_at": func(v any) request {
			return push("AgentCreated", map[string]any{"created_at": v}, nil)
		},
		"POST /v1/sync/events events[](AgentCreated).payload.dimensions": func(v any) request {
			return push("AgentCreated", map[string]any{"dimensions": v}, nil)
		},
		"POST /v1/sync/events events[](AgentModelSwitched).payload.dimensions": func(v any) request {
			return push("AgentModelSwitched", map[string]any{"dimensions": v}, nil)
		},
		"POST /v1/sync/events events[](AgentImported).payload.events": func(v any) request {
			return push("AgentImported", map[string]any{"events": v}, nil)
		},
		"POST /v1/sync/events events[](AgentImported).payload.exported_at": func(v any) request {
			return push("AgentImported", map[string]any{"exported_at": v}, nil)
		},
		"POST /v1/sync/events events[](AgentImported).payload.imported_at": func(v any) request {
			return push("AgentImported", map[string]any{"imported_at": v}, nil)
		},
		"POST /v1/sync/events events[](MemoryCreated).payload.created_at": func(v any) request {
			return push("MemoryCreated", map[string]any{"memory_id": uuid.NewString(), "type": "note", "content": note, "created_at": v}, nil)
		},
		"POST /v1/sync/events events[](MemoryForgotten).payload.forgotten_at": change("MemoryForgotten", "forgotten_at"),
		"POST /v1/sync/events events[](MemoryPatched).payload.updated_at":     change("MemoryPatched", "updated_at"),
		"POST /v1/sync/events events[](MemoryUpdated).payload.updated_at":     change("MemoryUpdated", "updated_at"),
		"POST /v1/sync/events events[](MemoryProtected).payload.at":           change("MemoryProtected", "at"),
		"POST /v1/sync/events events[](MemoryUnprotected).payload.at":         change("MemoryUnprotected", "at"),
		"POST /v1/sync/events events[](MemoryWeakened).payload.at":            change("MemoryWeakened", "at"),
		"POST /v1/sync/events events[](MemoryVerified).payload.verified_at":   change("MemoryVerified", "verified_at"),
		"POST /v1/sync/events events[](MemoryRecovered).payload.created_at":   change("MemoryRecovered", "created_at"),
		"POST /v1/sync/events events[](MemoryRecovered).payload.recovered_at": change("MemoryRecovered", "recovered_at"),
		"POST /v1/sync/events events[](StackSettingsChanged).payload.changed_at": func(v any) request {
			return push("StackSettingsChanged", map[string]any{"settings": settings("", "", nil), "changed_at": v}, nil)
		},
		"POST /v1/sync/events events[](StackSettingsChanged).payload.settings.lint_rules.min_length":               pushedSettings("lint_rules", "min_length"),
		"POST /v1/sync/events events[](StackSettingsChanged).payload.settings.promotion_gates.belief_min_evidence": pushedSettings("promotion_gates", "belief_min_evidence"),
		"POST /v1/sync/events events[](StackSettingsChanged).payload.settings.promotion_gates.value_min_evidence":  pushedSettings("promotion_gates", "value_min_evidence"),
	}
	// The values sent for each kind, and whether both sides take them.
	values := map[string][]struct {
		v    any
		take bool
	}{
		"time":    {{"0001-01-01T00:00:00Z", false}, {"1969-12-31T23:59:59.999Z", false}, {"1970-01-01T00:00:00Z", true}},
		"integer": {{0, true}},
	}
	s.create(t, aliceKey, agent, "note", note)
	fields := zeroFields(t, d)
	if len(fields) < 30 {
		t.Fatalf("found %d fields; the walk lost its way", len(fields))
	}
	for _, f := range fields {
		key := f.op + " " + f.field
		build, ok := requests[key]
		if !ok {
			t.Errorf("%s (%s): no request sends it; add one", key, f.kind)
			continue
		}
		delete(requests, key)
		for _, c := range values[f.kind] {
			t.Run(fmt.Sprintf("%s=%v", key, c.v), func(t *testing.T) {
				t.Parallel()
				req := build(c.v)
				body := ""
				if req.body != nil {
					raw, err := json.Marshal(req.body)
					if err != nil {
						t.Fatal(err)
					}
					body = string(raw)
				}
				docTakes := documentAllows(t, d, req.method, req.path, body) == nil
				r := s.request(t, req.method, req.path, aliceKey, req.body)
				serverTakes := r.status < http.StatusBadRequest
				switch {
				case docTakes != c.take:
					t.Errorf("the document takes it: %v, want %v", docTakes, c.take)
				case serverTakes != docTakes:
					t.Errorf("the document takes it: %v; the server answers %d: %s", docTakes, r.status, r.raw)
				case !serverTakes && (r.status != http.StatusBadRequest || r.errorCode() != "invalid_request"):
					t.Errorf("refused with %d %s, want 400 invalid_request: %s", r.status, r.errorCode(), r.raw)
				}
			})
		}
	}
	for key := range requests {
		t.Errorf("%s: the document has no such field any more", key)
	}
}

// zeroField is a field of a request whose documented range holds Go's
// zero value of its type: a date-time (0001-01-01T00:00:00Z) or an
// integer whose range holds 0.
type zeroField struct {
	op    string // "POST /v1/search"
	field string // its path in the body ("events[](MemoryCreated).payload.created_at"), or "?name" for a query parameter
	kind  string // "time" or "integer"
}

// zeroFields walks every operation's JSON request body, through $ref,
// properties, items, map values and the anyOf/oneOf/allOf/then/else
// branches (a branch of one event type named by its type's const), and
// its query parameters, for the fields whose documented range holds Go's
// zero value.
func zeroFields(t *testing.T, d *openAPIDoc) []zeroField {
	t.Helper()
	b := d.bodies
	var out []zeroField
	found := map[zeroField]bool{}
	record := func(f zeroField) {
		if !found[f] {
			found[f] = true
			out = append(out, f)
		}
	}
	var walk func(op, name string, node any, seen map[string]bool)
	walk = func(op, name string, node any, seen map[string]bool) {
		m, ok := node.(map[string]any)
		if !ok {
			return
		}
		if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
			if seen[ref] {
				return
			}
			seen[ref] = true
			defer delete(seen, ref)
			walk(op, name, b.at(strings.TrimPrefix(ref, "#")), seen)
		}
		if m["format"] == "date-time" {
			record(zeroField{op, name, "time"})
		}
		if holdsZeroInteger(m) {
			record(zeroField{op, name, "integer"})
		}
		join := func(child string) string {
			if name == "" {
				return child
			}
			return name + "." + child
		}
		props, _ := m["properties"].(map[string]any)
		for k, v := range props {
			walk(op, join(k), v, seen)
		}
		walk(op, name+"[]", m["items"], seen)
		if values, ok := m["additionalProperties"].(map[string]any); ok {
			walk(op, join("*"), values, seen)
		}
		for _, key := range []string{"then", "else"} {
			walk(op, name, m[key], seen)
		}
		for _, key := range []string{"anyOf", "oneOf", "allOf"} {
			branches, _ := m[key].([]any)
			for _, branch := range branches {
				walk(op, name+eventTypeOf(branch), branch, seen)
			}
		}
	}
	paths, _ := b.doc["paths"].(map[string]any)
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for method := range ops {
			op := strings.ToUpper(method) + " " + path
			if ptr, ok := b.resolve("paths", path, method, "requestBody", "content", "application/json", "schema"); ok {
				walk(op, "", b.at(ptr), map[string]bool{})
			}
		}
	}
	for path, item := range d.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, ref := range op.Parameters {
				p := ref.Value
				if p.In != "query" || p.Schema == nil || p.Schema.Value == nil {
					continue
				}
				s := p.Schema.Value
				if s.Type.Is("integer") && (s.Min == nil || *s.Min <= 0) && (s.Max == nil || *s.Max >= 0) {
					record(zeroField{method + " " + path, "?" + p.Name, "integer"})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].op != out[j].op {
			return out[i].op < out[j].op
		}
		return out[i].field < out[j].field
	})
	return out
}

// holdsZeroInteger reports whether an integer schema's range holds 0.
func holdsZeroInteger(m map[string]any) bool {
	integer := m["type"] == "integer"
	if types, ok := m["type"].([]any); ok {
		for _, t := range types {
			integer = integer || t == "integer"
		}
	}
	bound := func(key string) (float64, bool) {
		switch v := m[key].(type) {
		case json.Number:
			f, err := v.Float64()
			return f, err == nil
		case float64:
			return v, true
		}
		return 0, false
	}
	lo, hasLo := bound("minimum")
	xlo, hasXlo := bound("exclusiveMinimum")
	hi, hasHi := bound("maximum")
	xhi, hasXhi := bound("exclusiveMaximum")
	return integer && !(hasLo && lo > 0) && !(hasXlo && xlo >= 0) && !(hasHi && hi < 0) && !(hasXhi && xhi <= 0)
}

// eventTypeOf names a branch that describes one event type
// ("(MemoryCreated)"), and is empty for any other branch.
func eventTypeOf(branch any) string {
	m, _ := branch.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	typ, _ := props["type"].(map[string]any)
	if c, ok := typ["const"].(string); ok {
		return "(" + c + ")"
	}
	return ""
}
