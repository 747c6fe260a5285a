package openai

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer speaks OpenAI's /embeddings wire format on loopback. Each text
// must be "t-<n>"; its vector is (n, 1, 0, ...) scaled by 3, so a test can
// read back which input a vector belongs to (v[0]/v[1] = n) and check that
// the provider normalised it.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []fakeRequest
	// script answers request number i (0-based); nil or a nil return means
	// "answer normally".
	script  func(i int, w http.ResponseWriter, r *http.Request) bool
	shuffle bool
}

type fakeRequest struct {
	at         time.Time
	header     http.Header
	body       map[string]any
	inputs     []string
	model      string
	dimensions int
}

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(fs.handle))
	t.Cleanup(fs.Close)
	return fs
}

// baseURL is what Options.BaseURL should be set to.
func (fs *fakeServer) baseURL() string { return fs.URL + "/v1" }

func (fs *fakeServer) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "", "bad JSON")
		return
	}
	req := fakeRequest{at: time.Now(), header: r.Header.Clone(), body: body}
	req.model, _ = body["model"].(string)
	if d, ok := body["dimensions"].(float64); ok {
		req.dimensions = int(d)
	}
	if in, ok := body["input"].([]any); ok {
		for _, x := range in {
			s, _ := x.(string)
			req.inputs = append(req.inputs, s)
		}
	}
	fs.mu.Lock()
	n := len(fs.requests)
	fs.requests = append(fs.requests, req)
	script, shuffle := fs.script, fs.shuffle
	fs.mu.Unlock()
	if script != nil && script(n, w, r) {
		return
	}
	fs.answer(w, req, shuffle)
}

// nativeDims is the fake's idea of each model's size.
func nativeDims(model string) int {
	switch model {
	case ModelTextEmbedding3Small, ModelTextEmbeddingAda002:
		return 1536
	case ModelTextEmbedding3Large:
		return 3072
	}
	return 4
}

func (fs *fakeServer) answer(w http.ResponseWriter, req fakeRequest, shuffle bool) {
	dims := nativeDims(req.model)
	if req.dimensions > 0 {
		dims = req.dimensions
	}
	type item struct {
		Object    string    `json:"object"`
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	}
	data := make([]item, len(req.inputs))
	for i, text := range req.inputs {
		n, err := strconv.Atoi(strings.TrimPrefix(text, "t-"))
		if err != nil {
			writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "", fmt.Sprintf("unexpected input %q", text))
			return
		}
		v := make([]float32, dims)
		v[0], v[1] = 3*float32(n), 3
		data[i] = item{Object: "embedding", Embedding: v, Index: i}
	}
	if shuffle {
		rand.Shuffle(len(data), func(i, j int) { data[i], data[j] = data[j], data[i] })
	}
	tokens := 2 * len(req.inputs)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": req.model + "-v9",
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}

func writeAPIError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}

func (fs *fakeServer) recorded() []fakeRequest {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]fakeRequest(nil), fs.requests...)
}

// texts returns "t-0" ... "t-<n-1>".
func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "t-" + strconv.Itoa(i)
	}
	return out
}
