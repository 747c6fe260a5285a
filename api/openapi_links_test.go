package api_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/engram-memory/engram/api"
)

// TestOpenAPILinksResolve: every link of the document (a response's
// `links`, which schemathesis's stateful phase and client generators
// follow from a create to the routes that use what it created) names an
// operation the document has, fills parameters that operation declares,
// every path parameter of it among them, and reads each value from a
// place the source operation's request or response has: a link cannot rot
// when an operation, a parameter or a field is renamed or removed.
func TestOpenAPILinksResolve(t *testing.T) {
	t.Parallel()
	d := rawOpenAPI(t)
	links := 0
	for _, source := range d.operations() {
		for _, status := range sortedKeys(source.responses()) {
			response := d.resolve(asObject(source.responses()[status]))
			named, _ := response["links"].(map[string]any)
			for _, name := range sortedKeys(named) {
				links++
				link := d.resolve(named[name].(map[string]any))
				for _, problem := range d.linkProblems(source, status, response, link) {
					t.Errorf("%s %s → link %s: %s", source.id, status, name, problem)
				}
			}
		}
	}
	if links == 0 {
		t.Fatal("the document has no links")
	}
}

// TestOpenAPILinksChainCreatesToUses: the create→use chains a client
// follows are links of the document (the stateful fuzzing follows these;
// TestOpenAPILinksResolve keeps each one right).
func TestOpenAPILinksChainCreatesToUses(t *testing.T) {
	t.Parallel()
	wanted := []struct{ from, status, to string }{
		{"post_v1_auth_verify", "200", "get_v1_auth_keys"},
		{"post_v1_auth_login", "200", "get_v1_auth_status"},
		{"post_v1_auth_keys", "201", "delete_v1_auth_keys_key_id"},
		{"post_v1_auth_keys", "201", "post_v1_auth_keys_key_id_cycle"},
		{"post_v1_auth_keys_key_id_cycle", "200", "delete_v1_auth_keys_key_id"},
		{"post_v1_memories", "201", "get_v1_memories_id"},
		{"post_v1_memories", "201", "patch_v1_memories_id"},
		{"post_v1_memories", "201", "delete_v1_memories_id"},
		{"post_v1_memories", "201", "post_v1_embeddings_similar"},
		{"post_v1_memories", "201", "post_v1_embeddings_reembed"},
		{"post_v1_memories_batch", "201", "get_v1_memories_id"},
		{"post_v1_memories_batch", "201", "patch_v1_memories_id"},
		{"post_v1_memories_batch", "201", "delete_v1_memories_id"},
		{"delete_v1_memories_id", "200", "post_v1_memories_id_recover"},
		{"get_v1_agents_agent_id_suggestions", "200", "post_v1_suggestions_id_accept"},
		{"post_v1_embeddings_bulk_reembed", "202", "get_v1_embeddings_jobs_job_id"},
		{"post_v1_embeddings_bulk_reembed", "202", "post_v1_embeddings_jobs_job_id_cancel"},
		{"post_v1_webhooks", "201", "delete_v1_webhooks_webhook_id"},
		{"get_v1_agents_agent_id_export", "200", "post_v1_agents_agent_id_import"},
		{"post_v1_sync_events", "200", "get_v1_sync_events"},
	}
	d := rawOpenAPI(t)
	ops := map[string]rawOperation{}
	for _, op := range d.operations() {
		ops[op.id] = op
	}
	for _, w := range wanted {
		source, ok := ops[w.from]
		if !ok {
			t.Errorf("no operation %s", w.from)
			continue
		}
		named, _ := d.resolve(asObject(source.responses()[w.status]))["links"].(map[string]any)
		if !slices.ContainsFunc(sortedKeys(named), func(name string) bool {
			return d.resolve(named[name].(map[string]any))["operationId"] == w.to
		}) {
			t.Errorf("%s %s has no link to %s", w.from, w.status, w.to)
		}
	}
}

// rawDoc is the document as JSON values: links and the schemas their
// expressions point into are walked as written.
type rawDoc map[string]any

type rawOperation struct {
	id, method, path string
	op               map[string]any
	pathParams       []any // the path item's own parameters
}

func (o rawOperation) responses() map[string]any {
	r, _ := o.op["responses"].(map[string]any)
	return r
}

func rawOpenAPI(t *testing.T) rawDoc {
	t.Helper()
	var d rawDoc
	if err := json.Unmarshal(api.OpenAPIDocument(), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d rawDoc) operations() []rawOperation {
	var ops []rawOperation
	paths, _ := d["paths"].(map[string]any)
	for _, path := range sortedKeys(paths) {
		item := paths[path].(map[string]any)
		shared, _ := item["parameters"].([]any)
		for _, method := range sortedKeys(item) {
			op, ok := item[method].(map[string]any)
			if !ok || op["operationId"] == nil {
				continue
			}
			ops = append(ops, rawOperation{id: op["operationId"].(string), method: method, path: path, op: op, pathParams: shared})
		}
	}
	return ops
}

// resolve follows a local $ref ("#/components/...") to what it names.
func (d rawDoc) resolve(v map[string]any) map[string]any {
	for v != nil {
		ref, ok := v["$ref"].(string)
		if !ok {
			return v
		}
		var at any = map[string]any(d)
		for _, token := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, _ := at.(map[string]any)
			at = m[token]
		}
		v, _ = at.(map[string]any)
	}
	return nil
}

// parameters are an operation's parameters (the path item's too), by
// "in.name".
func (d rawDoc) parameters(op rawOperation) map[string]bool {
	params := map[string]bool{}
	own, _ := op.op["parameters"].([]any)
	for _, p := range append(slices.Clone(op.pathParams), own...) {
		param := d.resolve(p.(map[string]any))
		params[param["in"].(string)+"."+param["name"].(string)] = true
	}
	return params
}

// bearerSecured: the operation takes the bearer credential (its own
// security, else the document's), which a link may fill as
// header.Authorization.
func (d rawDoc) bearerSecured(op rawOperation) bool {
	security, ok := op.op["security"].([]any)
	if !ok {
		security, _ = d["security"].([]any)
	}
	for _, requirement := range security {
		if _, ok := requirement.(map[string]any)["bearerAuth"]; ok {
			return true
		}
	}
	return false
}

// jsonBodySchema is the JSON schema of a request or response body, nil if
// it has none.
func (d rawDoc) jsonBodySchema(body map[string]any) map[string]any {
	content, _ := d.resolve(body)["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	return schema
}

// hasBody: the request or response has a body of some media type.
func (d rawDoc) hasBody(body map[string]any) bool {
	content, _ := d.resolve(body)["content"].(map[string]any)
	return len(content) > 0
}

// linkProblems lists what of link does not resolve.
func (d rawDoc) linkProblems(source rawOperation, status string, response, link map[string]any) []string {
	var problems []string
	if _, ok := link["operationRef"]; ok {
		problems = append(problems, "names its target by operationRef: use operationId, which this test checks")
	}
	targetID, _ := link["operationId"].(string)
	var target *rawOperation
	for _, op := range d.operations() {
		if op.id == targetID {
			target = &op
		}
	}
	if target == nil {
		return append(problems, fmt.Sprintf("operationId %q is no operation of the document", targetID))
	}
	expr := expressionChecker{d: d, source: source, status: status, response: response}
	declared := d.parameters(*target)
	params, _ := link["parameters"].(map[string]any)
	filled := map[string]bool{}
	for _, key := range sortedKeys(params) {
		name := key
		if in, rest, ok := strings.Cut(key, "."); ok && slices.Contains([]string{"path", "query", "header", "cookie"}, in) {
			name = rest
			switch {
			case key == "header.Authorization" && d.bearerSecured(*target):
			case !declared[key]:
				problems = append(problems, fmt.Sprintf("parameter %s is not one of %s's", key, targetID))
			}
		} else {
			found := 0
			for p := range declared {
				if strings.HasSuffix(p, "."+name) {
					found++
				}
			}
			if found != 1 {
				problems = append(problems, fmt.Sprintf("parameter %s names %d parameters of %s, want 1", key, found, targetID))
			}
		}
		filled[name] = true
		value, ok := params[key].(string)
		if !ok {
			problems = append(problems, fmt.Sprintf("parameter %s is no runtime expression", key))
			continue
		}
		problems = append(problems, expr.problems(value)...)
	}
	for p := range declared {
		if name, ok := strings.CutPrefix(p, "path."); ok && !filled[name] {
			problems = append(problems, fmt.Sprintf("leaves %s's path parameter %s to chance", targetID, name))
		}
	}
	if body, ok := link["requestBody"]; ok {
		request, _ := target.op["requestBody"].(map[string]any)
		switch b := body.(type) {
		case string:
			if !d.hasBody(request) {
				problems = append(problems, fmt.Sprintf("fills a body %s does not take", targetID))
			}
			problems = append(problems, expr.problems(b)...)
		case map[string]any:
			schema := d.jsonBodySchema(request)
			for _, field := range sortedKeys(b) {
				if schema == nil || !d.pointerResolves(schema, []string{field}) {
					problems = append(problems, fmt.Sprintf("fills %s, no field of %s's body", field, targetID))
				}
				value, ok := b[field].(string)
				if !ok {
					problems = append(problems, fmt.Sprintf("body field %s is no runtime expression", field))
					continue
				}
				problems = append(problems, expr.problems(value)...)
			}
		default:
			problems = append(problems, "requestBody is neither an expression nor an object of them")
		}
	}
	return problems
}

// expressionChecker checks the runtime expressions of one source
// operation's links.
type expressionChecker struct {
	d        rawDoc
	source   rawOperation
	status   string
	response map[string]any
}

// embedded finds the expressions of a string ("Bearer {$response.body#/x}").
var embedded = regexp.MustCompile(`\{(\$[^}]*)\}`)

func (c expressionChecker) problems(value string) []string {
	expressions := []string{value}
	if !strings.HasPrefix(value, "$") {
		expressions = nil
		for _, m := range embedded.FindAllStringSubmatch(value, -1) {
			expressions = append(expressions, m[1])
		}
		if len(expressions) == 0 {
			return []string{fmt.Sprintf("%q holds no runtime expression", value)}
		}
	}
	var problems []string
	for _, e := range expressions {
		if problem := c.problem(e); problem != "" {
			problems = append(problems, fmt.Sprintf("%s: %s", e, problem))
		}
	}
	return problems
}

func (c expressionChecker) problem(e string) string {
	where, pointer, hasPointer := strings.Cut(e, "#")
	switch {
	case where == "$response.body" || where == "$request.body":
		body := c.response
		name := c.source.id + " " + c.status
		if where == "$request.body" {
			body, _ = c.source.op["requestBody"].(map[string]any)
			name = c.source.id + "'s request"
		}
		if !hasPointer {
			if !c.d.hasBody(body) {
				return name + " has no body"
			}
			return ""
		}
		schema := c.d.jsonBodySchema(body)
		if schema == nil {
			return name + " has no JSON body to point into"
		}
		tokens := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
		if !strings.HasPrefix(pointer, "/") || !c.d.pointerResolves(schema, tokens) {
			return fmt.Sprintf("%s's body has no %s", name, pointer)
		}
		return ""
	case strings.HasPrefix(where, "$request.") && !hasPointer:
		in, name, _ := strings.Cut(strings.TrimPrefix(where, "$request."), ".")
		if !c.d.parameters(c.source)[in+"."+name] {
			return fmt.Sprintf("%s has no %s parameter %s", c.source.id, in, name)
		}
		return ""
	}
	return "not an expression this document uses ($request.path|query|header.NAME, $request.body#/…, $response.body[#/…])"
}

// pointerResolves: a JSON pointer's tokens name a place the schema
// describes (through $ref, allOf/anyOf/oneOf, properties and array items).
func (d rawDoc) pointerResolves(schema map[string]any, tokens []string) bool {
	schema = d.resolve(schema)
	if schema == nil {
		return false
	}
	if len(tokens) == 0 {
		return true
	}
	for _, combinator := range []string{"allOf", "anyOf", "oneOf"} {
		branches, _ := schema[combinator].([]any)
		for _, b := range branches {
			if branch, ok := b.(map[string]any); ok && d.pointerResolves(branch, tokens) {
				return true
			}
		}
	}
	token := strings.NewReplacer("~1", "/", "~0", "~").Replace(tokens[0])
	if properties, ok := schema["properties"].(map[string]any); ok {
		if p, ok := properties[token].(map[string]any); ok {
			return d.pointerResolves(p, tokens[1:])
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		if _, err := strconv.Atoi(token); err == nil {
			return d.pointerResolves(items, tokens[1:])
		}
	}
	return false
}

// asObject is v as a JSON object, nil if it is none.
func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
