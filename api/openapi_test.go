package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/api/httpstatus"
	"github.com/engram-memory/engram/domain"
)

// openAPIDoc is the document, loaded and validated as OpenAPI 3.1, with a
// router that finds an operation of a request.
type openAPIDoc struct {
	doc    *openapi3.T
	router routers.Router
	bodies *bodySchemas
}

var loadOpenAPIOnce = sync.OnceValues(func() (*openAPIDoc, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPIDocument())
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	bodies, err := newBodySchemas(api.OpenAPIDocument())
	if err != nil {
		return nil, err
	}
	return &openAPIDoc{doc: doc, router: router, bodies: bodies}, nil
})

func loadOpenAPI(t testing.TB) *openAPIDoc {
	t.Helper()
	d, err := loadOpenAPIOnce()
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return d
}

// TestOpenAPIDocumentIsValid: the document is valid OpenAPI 3.1 and
// GET /v1/openapi.json serves it without a credential.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	if !d.doc.IsOpenAPI31OrLater() || d.doc.IsOpenAPI32OrLater() {
		t.Fatalf("openapi %q, want 3.1", d.doc.OpenAPI)
	}
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	r := s.call("GET", "/v1/openapi.json", "", nil)
	var served, embedded any
	if err := json.Unmarshal(r.raw, &served); err != nil || r.status != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %v", r.status, err)
	}
	_ = json.Unmarshal(api.OpenAPIDocument(), &embedded)
	if a, b := mustJSON(t, served), mustJSON(t, embedded); a != b {
		t.Fatal("served document differs from the embedded one")
	}
}

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOpenAPIDocumentsEveryMountedRoute: every route the router mounts is
// in the document, and every operation of the document is mounted. A
// route mounted for every method (r.Handle: /mcp, whose transport answers
// the methods it knows) counts as mounted for each documented method, and
// must be documented.
func TestOpenAPIDocumentsEveryMountedRoute(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	methods := map[string][]string{} // path → mounted methods
	err := chi.Walk(s.handler.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route != "/" {
			route = strings.TrimSuffix(route, "/")
		}
		methods[route] = append(methods[route], method)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, mounted := range methods {
		item := d.doc.Paths.Value(path)
		if item == nil {
			t.Errorf("mounted but not documented: %v %s", mounted, path)
			continue
		}
		for _, method := range mounted {
			if item.GetOperation(method) == nil {
				t.Errorf("mounted but not documented: %s %s", method, path)
			}
		}
	}
	for path, item := range d.doc.Paths.Map() {
		for method := range item.Operations() {
			if !slices.Contains(methods[path], method) {
				t.Errorf("documented but not mounted: %s %s", method, path)
			}
		}
	}
}

// validatingHandler checks every exchange of the tests against the
// document: each response must be one the document describes for its
// operation, and a request the server accepts (2xx) must be one the
// document allows. A request the document refuses is still sent (the
// tests of bad input send them) and must then be refused by the server.
func validatingHandler(t testing.TB, d *openAPIDoc, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, params, err := d.router.FindRoute(r)
		// The legacy router says so with a RouteError of its own, not
		// routers.ErrMethodNotAllowed itself.
		var routeErr *routers.RouteError
		if errors.As(err, &routeErr) && routeErr.Reason == routers.ErrMethodNotAllowed.Error() {
			d.methodNotAllowed(t, w, r, next)
			return
		}
		if err != nil {
			next.ServeHTTP(w, r) // undocumented paths answer 404, tested elsewhere
			return
		}
		reqBody := &cappedBuffer{max: 1 << 20}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(r.Body, reqBody), r.Body}
		rec := &teeWriter{ResponseWriter: w, body: &cappedBuffer{max: 4 << 20}}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		if reqBody.over || rec.body.over || rec.failed || rec.status == http.StatusNotModified {
			// Too big to keep, cut off by the client, or no body.
			return
		}
		recordFailure(t, route.Operation.OperationID, rec.status, rec.body.Bytes())
		req := r.Clone(context.Background())
		if rec.status/100 == 2 {
			if err := d.validateRequest(req, route, params, reqBody.Bytes()); err != nil {
				t.Errorf("openapi: %s %s answered %d but the document refuses the request: %v", r.Method, r.URL.Path, rec.status, err)
			}
		}
		err = d.validateResponse(req, route, params, rec.status, rec.Header(), rec.body.Bytes())
		if err != nil {
			t.Errorf("openapi: %s %s: response %d violates the document: %v\n%s", r.Method, r.URL.Path, rec.status, err, truncate(rec.body.Bytes()))
		}
	})
}

// undocumentedMethod is the operation id the record gives a failure of a
// method a documented path does not list (test/openapi/error_table.py
// documents its codes as the shared response Failure405-…, which no
// operation can name: the method is not one of the path's operations).
const undocumentedMethod = "undocumented_method"

// methodNotAllowed serves a method the document does not list for a path
// it documents, records the failure and checks it against the shared
// response the document gives such a method.
func (d *openAPIDoc) methodNotAllowed(t testing.TB, w http.ResponseWriter, r *http.Request, next http.Handler) {
	rec := &teeWriter{ResponseWriter: w, body: &cappedBuffer{max: 4 << 20}}
	next.ServeHTTP(rec, r)
	recordFailure(t, undocumentedMethod, rec.status, rec.body.Bytes())
	ptr, ok := d.bodies.resolve("components", "responses", fmt.Sprintf("Failure%d-method_not_allowed", rec.status), "content", "application/json", "schema")
	if !ok {
		t.Errorf("openapi: %s %s answered %d, which the document does not give an undocumented method: %s", r.Method, r.URL.Path, rec.status, truncate(rec.body.Bytes()))
		return
	}
	if err := d.bodies.validate(ptr, rec.body.Bytes()); err != nil {
		t.Errorf("openapi: %s %s: response %d violates the document: %v\n%s", r.Method, r.URL.Path, rec.status, err, truncate(rec.body.Bytes()))
	}
}

func truncate(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// cappedBuffer keeps up to max bytes and notes whether more came.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.Len()+len(p) > c.max {
		c.over = true
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

// teeWriter passes a response through and keeps a copy of it.
type teeWriter struct {
	http.ResponseWriter
	status int
	body   *cappedBuffer
	failed bool // a write failed: the client has not read the whole body
}

func (w *teeWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *teeWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	_, _ = w.body.Write(p[:n])
	w.failed = w.failed || err != nil
	return n, err
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestOpenAPIErrorStatusesFollowTheErrorTable: a documented error code
// that is an error kind is documented with the status the one error table
// (api/httpstatus) gives it.
func TestOpenAPIErrorStatusesFollowTheErrorTable(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	checked := 0
	for path, item := range d.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, ref := range op.Responses.Map() {
				for _, code := range documentedCodes(ref) {
					kind := domain.Kind(code)
					if httpstatus.Of(kind) == http.StatusInternalServerError && kind != domain.KindInternal {
						continue // a finer code, or not a kind
					}
					if path == "/readyz" && status == "503" {
						continue // readiness is 503 for whatever keeps it from serving, storage_full too
					}
					checked++
					if want := strconv.Itoa(httpstatus.Of(kind)); status != want {
						t.Errorf("%s %s documents %s with status %s; the error table says %s", method, path, code, status, want)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no error code documented per status")
	}
}

// documentedCodes is the code enum of a failure response.
func documentedCodes(ref *openapi3.ResponseRef) []string {
	if ref == nil || ref.Value == nil || ref.Value.Content.Get("application/json") == nil {
		return nil
	}
	var codes []string
	for _, part := range ref.Value.Content.Get("application/json").Schema.Value.AllOf {
		e := part.Value.Properties["error"]
		if e == nil || e.Value.Properties["code"] == nil {
			continue
		}
		for _, c := range e.Value.Properties["code"].Value.Enum {
			codes = append(codes, c.(string))
		}
	}
	return codes
}

// TestOpenAPIRefusesAnUndocumentedFailure: the validation of responses
// refuses a status, or a code, the operation does not document.
func TestOpenAPIRefusesAnUndocumentedFailure(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	failure := func(code string) string {
		return `{"success":false,"error":{"code":"` + code + `","message":"m","request_id":"r"}}`
	}
	for _, c := range []struct {
		status int
		body   string
		ok     bool
	}{
		{404, failure("not_found"), true},
		{404, failure("gone"), false},          // a code of another status
		{400, failure("text_too_long"), false}, // a code of other routes
		{418, failure("not_found"), false},     // a status it never answers
		{500, failure("internal"), true},
	} {
		req := httptest.NewRequest("GET", "/v1/embeddings/jobs/j1", nil)
		route, params, err := d.router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		header := http.Header{"Content-Type": {"application/json"}}
		err = d.validateResponse(req, route, params, c.status, header, []byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%d %s: validation error %v, want accepted %v", c.status, c.body, err, c.ok)
		}
	}
}
