package api_test

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/embed/openai"
)

// remoteModel is the model the loopback OpenAI-compatible server embeds
// with, remoteDims long.
const (
	remoteModel = "remote-embed-8"
	remoteDims  = 8
)

// openAIFailure is how the loopback provider answers instead of
// embedding: an HTTP status and the error body of OpenAI's API
// ({"error": {"message", "type", "param", "code"}}, as
// https://platform.openai.com/docs/guides/error-codes documents it).
type openAIFailure struct {
	status       int
	message, typ string
	code         string // "" sends "code": null
}

// openAIServer answers POST /v1/embeddings as OpenAI does, each text's
// vector derived from its hash, until fail sets the failure it answers
// with instead.
type openAIServer struct {
	*httptest.Server
	mu      sync.Mutex
	failure *openAIFailure
}

func newOpenAIServer(t testing.TB) *openAIServer {
	t.Helper()
	s := &openAIServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.embeddings))
	t.Cleanup(s.Close)
	return s
}

// fail makes every request fail with f (nil: embed again).
func (s *openAIServer) fail(f *openAIFailure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failure = f
}

func (s *openAIServer) embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input []string `json:"input"`
		Model string   `json:"model"`
	}
	if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	f := s.failure
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f != nil {
		var code any
		if f.code != "" {
			code = f.code
		}
		w.WriteHeader(f.status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": f.message, "type": f.typ, "param": nil, "code": code}})
		return
	}
	data := make([]map[string]any, len(req.Input))
	for i, text := range req.Input {
		h := fnv.New64a()
		h.Write([]byte(text))
		seed := h.Sum64()
		v := make([]float32, remoteDims)
		for j := range v {
			v[j] = float32(int64(seed>>(8*j))&0xff) - 127.5
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)},
	})
}

// providerStack is a stack whose agents embed with remoteModel through the
// OpenAI-compatible provider pointed at server (one attempt per request,
// so a failure answers at once).
func providerStack(t *testing.T, server *openAIServer) *stack {
	t.Helper()
	provider, err := openai.New(openai.Options{
		BaseURL:         server.URL + "/v1",
		APIKey:          "sk-test",
		ExtraModels:     []domain.EmbeddingModel{{Name: remoteModel, Dimensions: remoteDims}},
		OnlyExtraModels: true,
		MaxAttempts:     1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return newStack(t, stackOptions{fixedAuth: true, noRun: true, providers: []domain.EmbeddingProvider{provider}, embeddingModel: remoteModel})
}

// Each way an OpenAI-compatible provider refuses to embed reaches every
// route that embeds with its own code: POST /embeddings/generate, /batch
// and /reembed, vector search (REST and MCP) and OpenAI's /v1/embeddings.
// Nothing is lost: a capture is stored with its embedding pending, a
// failed re-embedding keeps the memory's vector, hybrid search answers
// from the keyword side, and all works again once the provider does.
func TestProviderFailuresReachEveryRouteThatEmbeds(t *testing.T) {
	t.Parallel()
	server := newOpenAIServer(t)
	s := providerStack(t, server)
	note := s.create(t, aliceKey, "a1", "note", map[string]any{"content": "the harbour lighthouse keeper logs every ship"})
	if note.Embedding.Status != "embedded" || note.Embedding.Model != remoteModel {
		t.Fatalf("the note was not embedded through the provider: %+v", note.Embedding)
	}
	cs := s.mcpClient(t, aliceKey, "", "2025-11-25")
	schemas := toolSchemas(t, cs)

	for _, c := range []struct {
		name    string
		failure openAIFailure
		status  int
		code    string
		// message is part of what the client is told.
		message string
		// field is details.field, by route ("" for none).
		field map[string]string
	}{
		{"input refused", openAIFailure{http.StatusBadRequest, "This model's maximum context length is 8192 tokens, however you requested 9000 tokens. Please reduce your prompt.", "invalid_request_error", ""},
			http.StatusBadRequest, "provider_rejected_input", "maximum context length",
			map[string]string{"/v1/embeddings/generate": "text", "/v1/embeddings/batch": "texts", "/v1/embeddings/reembed": "memory_id", "/v1/search": "query"}},
		{"key refused", openAIFailure{http.StatusUnauthorized, "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key"},
			http.StatusServiceUnavailable, "provider_auth_failed", "check the configured API key", nil},
		{"model unknown", openAIFailure{http.StatusNotFound, "The model `remote-embed-8` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"},
			http.StatusServiceUnavailable, "provider_model_not_found", "check the base URL and model", nil},
		{"quota exhausted", openAIFailure{http.StatusTooManyRequests, "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", "insufficient_quota"},
			http.StatusServiceUnavailable, "provider_quota_exceeded", "quota is exhausted", nil},
		{"overloaded", openAIFailure{http.StatusServiceUnavailable, "The engine is currently overloaded, please try again later.", "server_error", ""},
			http.StatusServiceUnavailable, "provider_unavailable", "unavailable for remote-embed-8 after 1 attempt(s)", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			server.fail(&c.failure)
			defer server.fail(nil)
			for _, r := range []struct {
				path string
				body map[string]any
			}{
				{"/v1/embeddings/generate", map[string]any{"text": "lighthouse"}},
				{"/v1/embeddings/batch", map[string]any{"texts": []string{"lighthouse", "harbour"}}},
				{"/v1/embeddings/reembed", map[string]any{"agent_id": "a1", "memory_type": "note", "memory_id": note.ID}},
				{"/v1/search", map[string]any{"agent_id": "a1", "query": "lighthouse keeper", "mode": "vector"}},
			} {
				got := s.call("POST", r.path, aliceKey, r.body)
				wantError(t, got, c.status, c.code)
				if !strings.Contains(got.errorMessage(), c.message) {
					t.Errorf("%s: message %q does not say %q", r.path, got.errorMessage(), c.message)
				}
				if field, _ := got.details()["field"].(string); field != c.field[r.path] {
					t.Errorf("%s: details.field %q, want %q", r.path, field, c.field[r.path])
				}
				if strings.Contains(string(got.raw), "sk-test") {
					t.Errorf("%s: the provider's key reached the client: %s", r.path, got.raw)
				}
			}
			callTool(t, cs, schemas, "search_memories", map[string]any{"agent_id": "a1", "query": "lighthouse keeper", "mode": "vector"}).fails(t, c.code, "")

			// OpenAI's route answers in OpenAI's shape, with the same code.
			openAI := s.call("POST", "/v1/embeddings", aliceKey, map[string]any{"input": "lighthouse", "model": remoteModel})
			if e, _ := openAI.body["error"].(map[string]any); openAI.status != c.status || e["code"] != c.code {
				t.Errorf("/v1/embeddings: %d %s, want %d %s", openAI.status, openAI.raw, c.status, c.code)
			}

			// Nothing lost: hybrid search answers from the keyword side,
			// the memory keeps its vector, a capture is stored pending.
			hybrid := expect(t, s.searchFor(t, "lighthouse keeper", "hybrid"), http.StatusOK)
			if ids := resultIDs(hybrid); hybrid.str("degraded") != "vector_unavailable" || len(ids) != 1 || ids[0] != note.ID {
				t.Errorf("hybrid search with the provider failing: %s", hybrid.raw)
			}
			if v := s.get(t, aliceKey, note.ID); v.Embedding.Status != "embedded" || v.Embedding.Model != remoteModel {
				t.Errorf("the note lost its vector: %+v", v.Embedding)
			}
			captured := s.create(t, aliceKey, "a1", "note", map[string]any{"content": "captured while the provider fails: " + c.name})
			if captured.Embedding.Status != "pending" {
				t.Errorf("a capture while the provider fails: embedding %+v, want pending", captured.Embedding)
			}
		})
	}
	// The provider back, every route embeds again.
	s.must(http.StatusOK, "POST", "/v1/embeddings/reembed", aliceKey, map[string]any{"agent_id": "a1", "memory_type": "note", "memory_id": note.ID})
	if ids := resultIDs(expect(t, s.searchFor(t, "harbour lighthouse keeper logs every ship", "vector"), http.StatusOK)); len(ids) == 0 || ids[0] != note.ID {
		t.Fatalf("vector search once the provider is back: %v", ids)
	}
}
