package api_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestMethodNotAllowedListsTheDocumentedMethods sends every documented
// path each method the document does not give it: OPTIONS, which no path
// documents, must be 405, and every 405 must carry in Allow exactly the
// methods the document gives the path (RFC 9110; schemathesis's
// allow_header_conformance), even where the router would take more: a
// literal path beside a parameter (/v1/memories/batch beside
// /v1/memories/{id}) or a mounted group (/v1/embeddings). The table is the
// document's paths, so a new path is tested as it is documented.
func TestMethodNotAllowedListsTheDocumentedMethods(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	parameter := regexp.MustCompile(`\{[^}]+\}`)
	for path, item := range d.doc.Paths.Map() {
		var documented []string
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"} {
			if item.GetOperation(m) != nil {
				documented = append(documented, m)
			}
		}
		want := strings.Join(documented, ", ")
		concrete := parameter.ReplaceAllString(path, "x")
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			if slices.Contains(documented, method) {
				continue
			}
			t.Run(method+" "+path, func(t *testing.T) {
				t.Parallel()
				// The handler itself: the harness's validation takes
				// DELETE /v1/agents for DELETE /v1/agents/{agent_id}.
				req := httptest.NewRequest(method, concrete, nil)
				req.Header.Set("Authorization", "Bearer "+aliceKey)
				rec := httptest.NewRecorder()
				s.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusMethodNotAllowed {
					if method == "OPTIONS" {
						t.Fatalf("status %d, want 405: %s", rec.Code, rec.Body)
					}
					return // the path is also another's: GET /v1/memories/batch is /v1/memories/{id}
				}
				if got := rec.Header().Get("Allow"); got != want {
					t.Errorf("Allow %q, want the document's %q", got, want)
				}
			})
		}
	}
}
