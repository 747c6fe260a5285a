package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the API's OpenAPI 3.1 document, written by hand and
// served verbatim. The API test suite keeps it honest: it validates every
// request and response of the tests against it and compares its paths with
// the mounted routes.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns the OpenAPI 3.1 document (JSON) that
// GET /v1/openapi.json serves.
func OpenAPIDocument() []byte { return append([]byte(nil), openAPIDocument...) }

// serveOpenAPI answers GET /v1/openapi.json, without credential.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(openAPIDocument)
}
