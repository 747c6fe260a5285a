package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
)

// documentAllows validates a request against the document as a client
// generated from it, or schemathesis, would build it.
func documentAllows(t *testing.T, d *openAPIDoc, method, path, body string) error {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	route, params, err := d.router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s: not in the document: %v", method, path, err)
	}
	return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
}

// TestOpenAPIRefusesWhatTheServerRefuses: each request body below is
// refused by the server for its own shape, and the document refuses it
// too. The harness validation alone cannot show this (it checks only the
// requests the server accepts); a looser document lets clients and
// fuzzers build requests the server refuses (schemathesis's "schema
// validation mismatch"), which TestSchemathesis now fails on.
func TestOpenAPIRefusesWhatTheServerRefuses(t *testing.T) {
	d := loadOpenAPI(t)
	s := newStack(t, stackOptions{})
	_, key := s.user(t, "closed@example.com")
	keyID := mustKeyID(t, s, key, "default")
	note := s.create(t, key, "closed-agent", "notes", map[string]any{"content": "a note"}).ID
	weaken := "/v1/memories/" + note + "/weaken"
	patch := "/v1/memories/" + note
	long := func(n int, c string) string { return strings.Repeat(c, n) }
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"weaken reason over 500 characters", "POST", weaken, `{"reason":"` + long(501, "é") + `"}`, 400, "invalid_request"},
		{"weaken by zero", "POST", weaken, `{"by":0}`, 400, "invalid_request"},
		{"weaken by over one", "POST", weaken, `{"by":1.5}`, 400, "invalid_request"},
		{"weaken reason not a string", "POST", weaken, `{"reason":7}`, 400, "invalid_request"},
		{"weaken unknown field", "POST", weaken, `{"why":"x"}`, 400, "invalid_request"},
		{"PATCH tags over 32", "PATCH", patch, `{"tags":["` + strings.Join(strings.Split(long(33, "t"), ""), `","`) + `"]}`, 400, "invalid_request"},
		{"PATCH tag over 64 characters", "PATCH", patch, `{"tags":["` + long(65, "t") + `"]}`, 400, "invalid_request"},
		{"PATCH tag blank", "PATCH", patch, `{"tags":["ok","  "]}`, 400, "invalid_request"},
		{"PATCH tag with a control character", "PATCH", patch, `{"tags":["a\u0001b"]}`, 400, "invalid_request"},
		{"PATCH tags not a list", "PATCH", patch, `{"tags":"a,b"}`, 400, "invalid_request"},
		{"PATCH nothing to change", "PATCH", patch, `{}`, 400, "invalid_request"},
		{"key name blank", "POST", "/v1/auth/keys", `{"name":"   "}`, 400, "invalid_request"},
		{"key name of white space only", "POST", "/v1/auth/keys", `{"name":"\u3000\u00a0"}`, 400, "invalid_request"},
		{"key name with a control character", "POST", "/v1/auth/keys", `{"name":"ci\u0007runner"}`, 400, "invalid_request"},
		{"key name over 100 characters", "POST", "/v1/auth/keys", `{"name":"` + long(101, "k") + `"}`, 400, "invalid_request"},
		{"key create unknown field", "POST", "/v1/auth/keys", `{"name":"k","scope":"all"}`, 400, "invalid_request"},
		{"login blank key", "POST", "/v1/auth/login", `{"api_key":"  "}`, 400, "invalid_request"},
		{"login key of the wrong shape", "POST", "/v1/auth/login", `{"api_key":"eng_short"}`, 401, "unauthorized"},
		{"login with a session token", "POST", "/v1/auth/login", `{"api_key":"engs_` + long(43, "a") + `"}`, 401, "unauthorized"},
		{"verify token blank", "POST", "/v1/auth/verify", `{"token":" "}`, 400, "invalid_request"},
		{"verify token of the wrong shape", "POST", "/v1/auth/verify", `{"token":"engv_short"}`, 400, "invalid_request"},
		{"verify with an API key", "POST", "/v1/auth/verify", `{"token":"` + key + `"}`, 400, "invalid_request"},
		{"register no domain dot", "POST", "/v1/auth/register", `{"email":"a@localhost"}`, 400, "invalid_request"},
		{"register display name", "POST", "/v1/auth/register", `{"email":"Al <a@example.com>"}`, 400, "invalid_request"},
		{"register inner space", "POST", "/v1/auth/register", `{"email":"a b@example.com"}`, 400, "invalid_request"},
		{"register double dot", "POST", "/v1/auth/register", `{"email":"a..b@example.com"}`, 400, "invalid_request"},
		{"register domain ends in a dot", "POST", "/v1/auth/register", `{"email":"a@example.com."}`, 400, "invalid_request"},
		{"memory of an agent id with a slash", "POST", "/v1/memories", `{"agent_id":"a/b","type":"notes","content":{"content":"x"}}`, 400, "invalid_request"},
		{"memory of an agent id of dots only", "POST", "/v1/memories", `{"agent_id":"..","type":"notes","content":{"content":"x"}}`, 400, "invalid_request"},
		{"memory of an agent id over 64 characters", "POST", "/v1/memories", `{"agent_id":"` + long(65, "a") + `","type":"notes","content":{"content":"x"}}`, 400, "invalid_request"},
		{"batch of an agent id with a space", "POST", "/v1/memories/batch", `{"agent_id":"a b","memories":[{"type":"notes","content":{"content":"x"}}]}`, 400, "invalid_request"},
		{"search of an agent id with a colon", "POST", "/v1/search", `{"agent_id":"a:b","query":"x"}`, 400, "invalid_request"},
		{"search blank query", "POST", "/v1/search", `{"agent_id":"closed-agent","query":" \t\u3000"}`, 400, "invalid_request"},
		{"search unknown mode", "POST", "/v1/search", `{"agent_id":"closed-agent","query":"x","mode":"fuzzy"}`, 400, "invalid_request"},
		{"search min_score over one", "POST", "/v1/search", `{"agent_id":"closed-agent","query":"x","min_score":2}`, 400, "invalid_request"},
		{"search of drives", "POST", "/v1/search", `{"agent_id":"closed-agent","query":"x","types":["drives"]}`, 400, "invalid_request"},
		{"search of an unknown type", "POST", "/v1/search", `{"agent_id":"closed-agent","query":"x","types":["thoughts"]}`, 400, "invalid_request"},
		{"similar of drives", "POST", "/v1/embeddings/similar", `{"agent_id":"closed-agent","embedding":[0.1],"types":["drive"]}`, 400, "invalid_request"},
		{"similar limit zero", "POST", "/v1/embeddings/similar", `{"agent_id":"closed-agent","embedding":[0.1],"limit":0}`, 400, "invalid_request"},
		{"similar limit over 100", "POST", "/v1/embeddings/similar", `{"agent_id":"closed-agent","embedding":[0.1],"limit":101}`, 400, "invalid_request"},
		{"similar min_score over one", "POST", "/v1/embeddings/similar", `{"agent_id":"closed-agent","embedding":[0.1],"min_score":1.5}`, 400, "invalid_request"},
		{"similar min_score negative", "POST", "/v1/embeddings/similar", `{"agent_id":"closed-agent","embedding":[0.1],"min_score":-0.1}`, 400, "invalid_request"},
		{"register over 254 characters", "POST", "/v1/auth/register", `{"email":"` + long(250, "a") + `@example.com"}`, 400, "invalid_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, s.request(t, c.method, c.path, key, c.body), c.status, c.code)
			if err := documentAllows(t, d, c.method, c.path, c.body); err == nil {
				t.Errorf("the server answers %d %s but the document allows the request", c.status, c.code)
			}
		})
	}
	// The same shapes, well formed, are allowed, so the cases above are
	// refused for what they vary, not for a mistake of the table.
	for _, c := range []struct{ method, path, body string }{
		{"POST", weaken, `{"by":1,"reason":"` + long(500, "é") + `"}`},
		{"PATCH", patch, `{"tags":["` + long(64, "t") + `"," a b ","\u0085x\u00a0"]}`},
		{"POST", "/v1/auth/keys", `{"name":" ` + long(98, "k") + ` "}`},
		{"POST", "/v1/auth/login", `{"api_key":"` + key + `"}`},
		{"POST", "/v1/auth/verify", `{"token":"engv_` + long(43, "Z") + `"}`},
		{"POST", "/v1/auth/register", `{"email":" Agent.Dev+x@Mail.Example.com "}`},
		{"POST", "/v1/auth/keys/" + keyID + "/cycle", ``},
		{"POST", "/v1/memories", `{"agent_id":".a_B-9","type":"notes","content":{"content":"x"}}`},
		{"POST", "/v1/embeddings/similar", `{"agent_id":"closed-agent","embedding":[0.1],"limit":100,"min_score":1,"types":["raw"]}`},
		{"POST", "/v1/search", `{"agent_id":"closed-agent","query":" x ","mode":"keyword","min_score":0,"types":["notes","agent_value"]}`},
	} {
		if err := documentAllows(t, d, c.method, c.path, c.body); err != nil {
			t.Errorf("%s %s %.80s: the document refuses a well-formed request: %v", c.method, c.path, c.body, err)
		}
	}
}

// TestOpenAPIClosedAnswers: the answers of key cycle and GET /auth/status
// are closed schemas: the real answer, with a field added or a required
// one dropped, is refused by the document, so the harness validation
// fails a test the day the server sends one more or one less.
func TestOpenAPIClosedAnswers(t *testing.T) {
	d := loadOpenAPI(t)
	s := newStack(t, stackOptions{})
	_, key := s.user(t, "answers@example.com")
	cycledID, _ := s.createKey(key, "to cycle")
	for _, c := range []struct {
		method, path, drop string
		status             int
	}{
		{"POST", "/v1/auth/keys/" + cycledID + "/cycle", "new_key", http.StatusOK},
		{"GET", "/v1/auth/status", "agents", http.StatusOK},
	} {
		r := s.request(t, c.method, c.path, key, nil)
		expect(t, r, c.status)
		validate := func(data map[string]any) error {
			body, err := json.Marshal(map[string]any{"success": true, "data": data})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(c.method, c.path, nil)
			route, params, err := d.router.FindRoute(req)
			if err != nil {
				t.Fatal(err)
			}
			return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
				RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
				Status:                 c.status, Header: http.Header{"Content-Type": {"application/json"}},
				Body:    io.NopCloser(bytes.NewReader(body)),
				Options: &openapi3filter.Options{IncludeResponseStatus: true},
			})
		}
		if err := validate(r.data()); err != nil {
			t.Fatalf("%s %s: the real answer is refused: %v", c.method, c.path, err)
		}
		extra := map[string]any{"scopes": []string{"all"}}
		less := map[string]any{}
		for k, v := range r.data() {
			extra[k] = v
			if k != c.drop {
				less[k] = v
			}
		}
		if err := validate(extra); err == nil {
			t.Errorf("%s %s: the document allows an answer with a field the server never sends", c.method, c.path)
		}
		if err := validate(less); err == nil {
			t.Errorf("%s %s: the document allows an answer without %s", c.method, c.path, c.drop)
		}
	}
}
