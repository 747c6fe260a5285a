package api_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/embed/openai"
	"github.com/engram-memory/engram/internal/workers"
)

// openAIClient is an OpenAI SDK pointed at the stack.
func (s *stack) openAIClient(key string) *goopenai.Client {
	cfg := goopenai.DefaultConfig(key)
	cfg.BaseURL = s.srv.URL + "/v1"
	return goopenai.NewClientWithConfig(cfg)
}

func wantAPIError(t *testing.T, err error, status int, code, param string) {
	t.Helper()
	var apiErr *goopenai.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("got %v, want an OpenAI API error", err)
	}
	gotParam := ""
	if apiErr.Param != nil {
		gotParam = *apiErr.Param
	}
	if apiErr.HTTPStatusCode != status || apiErr.Code != code || gotParam != param || apiErr.Message == "" {
		t.Fatalf("got %d code %v param %q (%s), want %d %s %q", apiErr.HTTPStatusCode, apiErr.Code, gotParam, apiErr.Message, status, code, param)
	}
}

func TestOpenAICompatibleEmbeddings(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	client := s.openAIClient(aliceKey)
	ctx := context.Background()
	texts := []string{"coffee in the morning", "rollback the release", "deploy on friday"}

	res, err := client.CreateEmbeddings(ctx, goopenai.EmbeddingRequest{Input: texts, Model: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Object != "list" || string(res.Model) != local.BuiltinModelName || len(res.Data) != 3 || res.Usage.PromptTokens <= 0 || res.Usage.TotalTokens != res.Usage.PromptTokens {
		t.Fatalf("response: %+v", res)
	}
	for i, d := range res.Data {
		want := s.vectorOf("default", texts[i])
		if d.Object != "embedding" || d.Index != i || !slices.Equal(d.Embedding, want) {
			t.Fatalf("data[%d] is not the vector of %q", i, texts[i])
		}
	}
	// base64: little-endian float32 bytes, decoded by the SDK to the same vectors.
	b64, err := client.CreateEmbeddings(ctx, goopenai.EmbeddingRequest{Input: texts, Model: goopenai.EmbeddingModel(local.BuiltinModelName), EncodingFormat: goopenai.EmbeddingEncodingFormatBase64})
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if !slices.Equal(b64.Data[i].Embedding, res.Data[i].Embedding) {
			t.Fatalf("base64 data[%d] differs from float", i)
		}
	}
	// One string in, one embedding out; dimensions equal to the model's are fine.
	one, err := client.CreateEmbeddings(ctx, goopenai.EmbeddingRequestStrings{Input: []string{"x"}, Model: staticModel, Dimensions: 64, User: "someone"})
	if err != nil || len(one.Data) != 1 || len(one.Data[0].Embedding) != 64 || string(one.Model) != staticModel {
		t.Fatalf("single: %+v %v", one, err)
	}
	raw := s.call("POST", "/v1/embeddings", aliceKey, map[string]any{"input": "a single string", "model": "default"})
	if raw.status != 200 || raw.body["object"] != "list" || raw.body["success"] != nil {
		t.Fatalf("plain string input: %s", raw.raw)
	}

	// Errors, in OpenAI's shape, through the SDK.
	_, err = s.openAIClient("wrong").CreateEmbeddings(ctx, goopenai.EmbeddingRequest{Input: texts, Model: "default"})
	wantAPIError(t, err, 401, "invalid_api_key", "")
	_, err = client.CreateEmbeddings(ctx, goopenai.EmbeddingRequest{Input: texts, Model: "text-embedding-3-large"})
	wantAPIError(t, err, 404, "model_not_found", "model")
	_, err = client.CreateEmbeddings(ctx, goopenai.EmbeddingRequestTokens{Input: [][]int{{1, 2, 3}}, Model: "default"})
	wantAPIError(t, err, 400, "invalid_request", "input")
	_, err = client.CreateEmbeddings(ctx, goopenai.EmbeddingRequest{Input: texts, Model: "default", Dimensions: 100})
	wantAPIError(t, err, 400, "invalid_request", "dimensions")
	_, err = client.CreateEmbeddings(ctx, goopenai.EmbeddingRequest{Input: []string{"a", strings.Repeat("b", 32001)}, Model: "default"})
	wantAPIError(t, err, 400, "text_too_long", "input")
	s.provider.down.Store(true)
	_, err = client.CreateEmbeddings(ctx, goopenai.EmbeddingRequest{Input: texts, Model: "default"})
	wantAPIError(t, err, 503, "provider_unavailable", "")
	s.provider.down.Store(false)

	for _, c := range []struct {
		body  any
		param string
	}{
		{map[string]any{"input": "x"}, "model"},
		{map[string]any{"model": "default"}, "input"},
		{map[string]any{"input": []int{1, 2}, "model": "default"}, "input"},
		{map[string]any{"input": []any{"ok", 3}, "model": "default"}, "input"},
		{map[string]any{"input": "", "model": "default"}, "input"},
		{map[string]any{"input": []string{}, "model": "default"}, "input"},
		{map[string]any{"input": "x", "model": "default", "encoding_format": "int8"}, "encoding_format"},
		{map[string]any{"input": "x", "model": "default", "dimensions": 0}, "dimensions"},
		{map[string]any{"input": "x", "model": "default", "temperature": 1}, "temperature"},
	} {
		r := s.call("POST", "/v1/embeddings", aliceKey, c.body)
		e, _ := r.body["error"].(map[string]any)
		if r.status != 400 || e == nil || e["param"] != c.param || e["type"] != "invalid_request_error" || e["message"] == "" || r.body["success"] != nil {
			t.Fatalf("%v: %d %s", c.body, r.status, r.raw)
		}
	}
	r := s.call("POST", "/v1/embeddings", "", map[string]any{"input": "x", "model": "default"})
	if e, _ := r.body["error"].(map[string]any); r.status != 401 || e["code"] != "invalid_api_key" || r.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no credential: %d %s", r.status, r.raw)
	}
}

// TestEngramAsOpenAIProvider points a second Engram's openai provider at the
// first Engram's /v1: a real HTTP provider, no mock.
func TestEngramAsOpenAIProvider(t *testing.T) {
	t.Parallel()
	first := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	provider, err := openai.New(openai.Options{
		BaseURL:         first.srv.URL + "/v1",
		APIKey:          aliceKey,
		ExtraModels:     []domain.EmbeddingModel{{Name: local.BuiltinModelName, Dimensions: 384}},
		OnlyExtraModels: true,
		MaxAttempts:     1,
	})
	if err != nil {
		t.Fatal(err)
	}
	second := newStack(t, stackOptions{fixedAuth: true, noRun: true, runner: workers.RunnerConfig{ID: "second"}, providers: []domain.EmbeddingProvider{provider}})

	texts := []string{"the team deployed release 7", "alice prefers tea"}
	for _, text := range texts {
		got := second.must(http.StatusOK, "POST", "/v1/embeddings/generate", bobKey, map[string]any{"text": text}).data()
		if got["model"] != local.BuiltinModelName || num(got["dimensions"]) != 384 || num(got["tokens_used"]) <= 0 {
			t.Fatalf("second server: %v", got)
		}
		if want := first.vectorOf("default", text); !slices.Equal(floats(got["embedding"]), want) {
			t.Fatalf("the second server's vector of %q is not the first's", text)
		}
	}
	batch := second.must(http.StatusOK, "POST", "/v1/embeddings/batch", bobKey, map[string]any{"texts": texts}).data()
	embs, _ := batch["embeddings"].([]any)
	for i, text := range texts {
		if !slices.Equal(floats(embs[i]), first.vectorOf("default", text)) {
			t.Fatalf("batch[%d] is not the first server's vector", i)
		}
	}
	// The second server's memories are embedded through the first.
	before := first.provider.calls.Load()
	second.seed(bob, "remote", 3)
	if first.provider.calls.Load() == before {
		t.Fatal("the second server's writes did not reach the first server's provider")
	}
	// The first server's outage is the second's provider outage.
	first.provider.down.Store(true)
	wantError(t, second.call("POST", "/v1/embeddings/generate", bobKey, map[string]any{"text": "x"}), 503, "provider_unavailable")
}

// TestOpenAIModels: GET /v1/models lists, in OpenAI's shape, the models
// POST /v1/embeddings accepts here, and GET /v1/models/{id} answers one of
// them or OpenAI's 404 model_not_found; both need a credential, as
// /v1/embeddings does.
func TestOpenAIModels(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true})
	client := s.openAIClient(aliceKey)
	ctx := context.Background()

	list, err := client.ListModels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var available []string
	for _, m := range s.must(http.StatusOK, "GET", "/v1/embeddings/models", aliceKey, nil).data()["models"].([]any) {
		if entry := m.(map[string]any); entry["available"] == true {
			available = append(available, entry["name"].(string))
		}
	}
	var listed []string
	for _, m := range list.Models {
		if m.Object != "model" || m.OwnedBy == "" {
			t.Fatalf("model object: %+v", m)
		}
		listed = append(listed, m.ID)
	}
	if len(listed) == 0 || !slices.Equal(listed, available) {
		t.Fatalf("listed %v, want the available models %v", listed, available)
	}
	for _, id := range listed {
		if _, err := client.CreateEmbeddings(ctx, goopenai.EmbeddingRequest{Input: []string{"x"}, Model: goopenai.EmbeddingModel(id)}); err != nil {
			t.Fatalf("listed model %s does not embed: %v", id, err)
		}
	}

	one, err := client.GetModel(ctx, listed[0])
	if err != nil || one.ID != listed[0] || one.Object != "model" {
		t.Fatalf("retrieve %s: %+v %v", listed[0], one, err)
	}
	_, err = client.GetModel(ctx, "text-embedding-3-large")
	wantAPIError(t, err, 404, "model_not_found", "model")
	_, err = s.openAIClient("wrong").ListModels(ctx)
	wantAPIError(t, err, 401, "invalid_api_key", "")
	if r := s.call("GET", "/v1/models", "", nil); r.status != 401 || r.body["success"] != nil {
		t.Fatalf("no credential: %d %s", r.status, r.raw)
	}
}

// TestOpenAIRoutesTooLargeInOpenAIShape: a body over the limit, refused
// by the middleware before routing, is answered in OpenAI's error shape on
// the OpenAI-compatible route (schemathesis found it in Engram's envelope)
// and in the envelope elsewhere.
func TestOpenAIRoutesTooLargeInOpenAIShape(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, maxBody: 1024})
	big := strings.Repeat("x", 2048)
	r := s.call("POST", "/v1/embeddings", aliceKey, map[string]any{"input": big, "model": "default"})
	e, _ := r.body["error"].(map[string]any)
	if r.status != http.StatusRequestEntityTooLarge || r.body["success"] != nil || e["code"] != "payload_too_large" || e["type"] != "invalid_request_error" {
		t.Fatalf("POST /v1/embeddings: %d %s", r.status, r.raw)
	}
	wantError(t, s.call("POST", "/v1/embeddings/generate", aliceKey, map[string]any{"text": big}), http.StatusRequestEntityTooLarge, "payload_too_large")
}
