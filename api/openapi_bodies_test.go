package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// bodySchemas validates JSON bodies against the document's schemas, each
// compiled once. kin-openapi compiles an OpenAPI 3.1 schema again at every
// call (it marshals the schema and builds a JSON Schema 2020-12 compiler),
// which made checking one memory create cost ~0.5 s under -race once the
// document described each memory type's content: the harness checks every
// exchange of the API tests. The schemas are compiled from the document
// itself, so a "$ref" resolves where the document puts it, and the formats
// are asserted with kin-openapi's own string formats, as it asserts them.
type bodySchemas struct {
	doc map[string]any

	mu       sync.Mutex // guards compiler and compiled
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

const documentURL = "engram:openapi.json"

func newBodySchemas(raw []byte) (*bodySchemas, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi.json is not an object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for _, name := range []string{"date-time", "email", "uri"} {
		c.RegisterFormat(&jsonschema.Format{Name: name, Validate: stringFormat(name)})
	}
	c.AssertFormat()
	if err := c.AddResource(documentURL, doc); err != nil {
		return nil, err
	}
	return &bodySchemas{doc: m, compiler: c, compiled: map[string]*jsonschema.Schema{}}, nil
}

// stringFormat checks a string as kin-openapi checks the format: by its
// registered string format, or not at all when it has none.
func stringFormat(name string) func(any) error {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		if f, ok := openapi3.SchemaStringFormats[name]; ok {
			return f.Validate(s)
		}
		return nil
	}
}

// request checks a JSON request body against the operation's schema. An
// operation without a request body leaves it unchecked, as kin-openapi
// does; one whose body is not JSON refuses it.
func (b *bodySchemas) request(path, method string, body []byte) error {
	m := strings.ToLower(method)
	if _, ok := b.resolve("paths", path, m, "requestBody"); !ok {
		return nil
	}
	ptr, ok := b.resolve("paths", path, m, "requestBody", "content", "application/json")
	if !ok {
		return fmt.Errorf("content type application/json is not documented")
	}
	if _, ok := b.at(ptr).(map[string]any)["schema"]; !ok {
		return nil
	}
	return b.validate(ptr+"/schema", body)
}

// response checks a JSON response body against the schema the operation
// documents for its status (exact, then its class such as 4XX, then
// default), as kin-openapi does: a response documented without content,
// or content without a schema, leaves the body unchecked.
func (b *bodySchemas) response(path, method string, status int, header http.Header, body []byte) error {
	m := strings.ToLower(method)
	for _, key := range []string{strconv.Itoa(status), fmt.Sprintf("%dXX", status/100), "default"} {
		if _, ok := b.resolve("paths", path, m, "responses", key); !ok {
			continue
		}
		contentPtr, ok := b.resolve("paths", path, m, "responses", key, "content")
		if !ok {
			return nil
		}
		content, _ := b.at(contentPtr).(map[string]any)
		if len(content) == 0 {
			return nil
		}
		mediaType, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
		media, ok := content[mediaType].(map[string]any)
		if !ok {
			return fmt.Errorf("status %d: content type %q is not documented", status, mediaType)
		}
		if _, ok := media["schema"]; !ok {
			return nil
		}
		return b.validate(contentPtr+"/"+escapeToken(mediaType)+"/schema", body)
	}
	return fmt.Errorf("status %d is not documented", status)
}

func escapeToken(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// resolve walks the document along keys, following each "$ref" it meets
// on the way (not the last one: the compiler follows that), and returns
// the JSON pointer of where it ends.
func (b *bodySchemas) resolve(keys ...string) (string, bool) {
	var node any = b.doc
	ptr := ""
	for _, k := range keys {
		m, ok := node.(map[string]any)
		if !ok {
			return "", false
		}
		if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
			ptr = strings.TrimPrefix(ref, "#")
			node = b.at(ptr)
			if m, ok = node.(map[string]any); !ok {
				return "", false
			}
		}
		if node, ok = m[k]; !ok {
			return "", false
		}
		ptr += "/" + escapeToken(k)
	}
	return ptr, true
}

// at is the node at a JSON pointer of the document (through objects
// and arrays).
func (b *bodySchemas) at(ptr string) any {
	var node any = b.doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		switch n := node.(type) {
		case map[string]any:
			node = n[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil
			}
			node = n[i]
		default:
			return nil
		}
	}
	return node
}

func (b *bodySchemas) validate(ptr string, body []byte) error {
	sch, err := b.schema(ptr)
	if err != nil {
		return err
	}
	// The first JSON value, as kin-openapi's decoder reads a body: what
	// follows it is the server's to refuse (the MCP transport ignores it,
	// as the SDK's does).
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return sch.Validate(v)
}

func (b *bodySchemas) schema(ptr string) (*jsonschema.Schema, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.compiled[ptr]; ok {
		return s, nil
	}
	s, err := b.compiler.Compile(documentURL + "#" + ptr)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", ptr, err)
	}
	b.compiled[ptr] = s
	return s, nil
}

// isJSON says whether a Content-Type names JSON.
func isJSON(h http.Header) bool {
	return strings.HasPrefix(h.Get("Content-Type"), "application/json")
}

// validateRequest checks a request as kin-openapi's ValidateRequest does
// (parameters, then the body), the JSON body with the compiled schema.
func (d *openAPIDoc) validateRequest(r *http.Request, route *routers.Route, params map[string]string, body []byte) error {
	r.Body = io.NopCloser(bytes.NewReader(body))
	jsonBody := isJSON(r.Header)
	err := openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, ExcludeRequestBody: jsonBody},
	})
	if err != nil || !jsonBody {
		return err
	}
	if len(body) == 0 {
		if rb := route.Operation.RequestBody; rb != nil && rb.Value != nil && rb.Value.Required {
			return fmt.Errorf("request body has an error: value is required but missing")
		}
		return nil
	}
	if err := d.bodies.request(route.Path, r.Method, body); err != nil {
		return fmt.Errorf("request body has an error: %w", err)
	}
	return nil
}

// validateResponse checks a response as kin-openapi's ValidateResponse
// with IncludeResponseStatus does (a documented status, then the body),
// the JSON body with the compiled schema. Bodies other than JSON are
// checked for their status and content type only.
func (d *openAPIDoc) validateResponse(r *http.Request, route *routers.Route, params map[string]string, status int, header http.Header, body []byte) error {
	err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
		Status:                 status, Header: header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: true},
	})
	if err != nil || !isJSON(header) {
		return err
	}
	if err := d.bodies.response(route.Path, r.Method, status, header, body); err != nil {
		return fmt.Errorf("response body doesn't match schema: %w", err)
	}
	return nil
}
