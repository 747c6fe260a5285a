package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// fuzzRoute is one way a request carries client input: a JSON body, a
// query string or a path parameter.
type fuzzRoute struct {
	method, path string
	input        string // "body", "query" or "path" (appended to path)
	seed         string
}

// fuzzRoutes are every decoder of the API: each JSON body, each query
// string and each path parameter a handler parses.
var fuzzRoutes = []fuzzRoute{
	{"POST", "/v1/auth/register", "body", `{"email":"fuzz@example.com"}`},
	{"POST", "/v1/auth/verify", "body", `{"token":"engv_0123456789abcdefghijABCDEFGHIJ0123456789abc"}`},
	{"POST", "/v1/auth/login", "body", `{"api_key":"eng_0123456789"}`},
	{"POST", "/v1/auth/keys", "body", `{"name":"ci"}`},
	{"POST", "/v1/memories", "body", `{"agent_id":"claire","type":"beliefs","content":{"statement":"x","confidence":0.5},"tags":["a"],"created_at":"2026-01-02T03:04:05Z"}`},
	{"POST", "/v1/memories/batch", "body", `{"agent_id":"claire","memories":[{"type":"note","content":{"content":"x"}},{"type":"playbooks","content":{"name":"n","description":"d","steps":[{"action":"a"}]}}]}`},
	{"PATCH", "/v1/memories/note:00000000-0000-0000-0000-000000000000", "body", `{"content":{"content":"y"},"tags":null}`},
	{"POST", "/v1/search", "body", `{"agent_id":"claire","query":"deploy","limit":5,"types":["notes"],"min_score":0.1,"mode":"hybrid","created_after":"2026-01-01T00:00:00Z","tags":["a"],"explain":true}`},
	{"POST", "/v1/embeddings/generate", "body", `{"text":"hello","model":"default"}`},
	{"POST", "/v1/embeddings/batch", "body", `{"texts":["a","b"],"model":"default"}`},
	{"POST", "/v1/embeddings/reembed", "body", `{"agent_id":"claire","memory_type":"note","memory_id":"x"}`},
	{"POST", "/v1/embeddings/bulk-reembed", "body", `{"agent_id":"claire","types":["notes"],"model":"default"}`},
	{"POST", "/v1/embeddings/similar", "body", `{"agent_id":"claire","embedding":[0.1,0.2],"limit":3,"min_score":0,"types":["notes"]}`},
	{"POST", "/v1/embeddings", "body", `{"input":["hello"],"model":"engram-hash-384","encoding_format":"base64"}`},
	{"GET", "/v1/memories", "query", `agent_id=claire&type=notes&limit=2&cursor=abc&include_forgotten=true`},
	{"GET", "/v1/agents", "query", `limit=2&cursor=x`},
	{"DELETE", "/v1/memories/note:x", "query", `purge=true`},
	{"GET", "/v1/memories/", "path", `note:00000000-0000-0000-0000-000000000000`},
	{"GET", "/v1/embeddings/jobs/", "path", `job-1`},
	{"DELETE", "/v1/agents/", "path", `claire`},
	{"DELETE", "/v1/auth/keys/", "path", `key-1`},
}

// FuzzRequestDecoders sends arbitrary input to every decoder of the API,
// authenticated: whatever the bytes, the answer is JSON with a status below
// 500 — never a panic, a 500 or a half-written body.
func FuzzRequestDecoders(f *testing.F) {
	for i, r := range fuzzRoutes {
		f.Add(uint8(i), []byte(r.seed))
		f.Add(uint8(i), []byte(`{"`))
		f.Add(uint8(i), []byte(`[]`))
	}
	s := newStack(f, stackOptions{fixedAuth: true, discardLogs: true})
	handler := s.handler
	f.Fuzz(func(t *testing.T, route uint8, input []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(r.method, r.path, nil)
		switch r.input {
		case "body":
			req = httptest.NewRequest(r.method, r.path, bytes.NewReader(input))
			req.Header.Set("Content-Type", "application/json")
		case "query":
			req.URL.RawQuery = string(input)
		case "path":
			req.URL.Path += string(input)
		}
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code >= http.StatusInternalServerError || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s with %q: %d %s", r.method, r.path, input, rec.Code, rec.Body.Bytes())
		}
	})
}
