package memenvtest

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/embed/openai"
)

// CountedModel and CountedModelB are the models of CountingEmbeddings
// (two, so that an agent can be re-embedded with another).
var (
	CountedModel  = domain.EmbeddingModel{Name: "counted-embed-4", Provider: openai.ProviderName, Dimensions: 4}
	CountedModelB = domain.EmbeddingModel{Name: "counted-embed-b-4", Provider: openai.ProviderName, Dimensions: 4}
)

// CountingEmbeddings answers POST /v1/embeddings as OpenAI does (each
// text's vector derived from its hash) and counts the calls and texts
// that reached it, so a test sees what text left for the provider.
type CountingEmbeddings struct {
	Calls, Texts atomic.Int64
	// RefuseBatches answers a call of more than one text with 400, as a
	// provider refusing some input does, so callers go text by text.
	RefuseBatches atomic.Bool
	// BeforeAnswer, when set, runs inside each call it answers with
	// vectors, before it answers, with the call's texts (e.g. to change
	// the stack while a caller waits for its vectors).
	BeforeAnswer func(texts []string)

	mu       sync.Mutex
	received []string
}

// NewCountingProvider starts a CountingEmbeddings on loopback and returns
// it with an OpenAI provider that serves CountedModel from it.
func NewCountingProvider(t testing.TB) (*CountingEmbeddings, *openai.Provider) {
	t.Helper()
	counter := &CountingEmbeddings{}
	srv := httptest.NewServer(counter)
	t.Cleanup(srv.Close)
	provider, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test", MaxAttempts: 1,
		ExtraModels: []domain.EmbeddingModel{CountedModel, CountedModelB}, OnlyExtraModels: true})
	if err != nil {
		t.Fatal(err)
	}
	return counter, provider
}

// Received reports whether text reached the server.
func (c *CountingEmbeddings) Received(text string) bool { return c.ReceivedSince(0, text) }

// Mark is how many texts reached the server so far, for ReceivedSince.
func (c *CountingEmbeddings) Mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.received)
}

// ReceivedSince reports whether text reached the server after the first
// mark texts (a Mark taken earlier).
func (c *CountingEmbeddings) ReceivedSince(mark int, text string) bool {
	return c.TimesSince(mark, text) > 0
}

// TimesSince is how many times text reached the server after the first
// mark texts.
func (c *CountingEmbeddings) TimesSince(mark int, text string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.received[mark:] {
		if r == text {
			n++
		}
	}
	return n
}

func (c *CountingEmbeddings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input []string `json:"input"`
		Model string   `json:"model"`
	}
	if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	c.Calls.Add(1)
	c.Texts.Add(int64(len(req.Input)))
	c.mu.Lock()
	c.received = append(c.received, req.Input...)
	c.mu.Unlock()
	if len(req.Input) > 1 && c.RefuseBatches.Load() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "one input is refused (test)", "type": "invalid_request_error", "param": "input", "code": nil}})
		return
	}
	if c.BeforeAnswer != nil {
		c.BeforeAnswer(req.Input)
	}
	data := make([]map[string]any, len(req.Input))
	for i, text := range req.Input {
		h := fnv.New64a()
		h.Write([]byte(text))
		seed := h.Sum64()
		v := make([]float32, CountedModel.Dimensions)
		for j := range v {
			v[j] = float32(int64(seed>>(8*j))&0xff) - 127.5
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)}})
}
