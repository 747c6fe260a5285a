package openai

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

// tinyModel is an extra model with 4 dimensions to keep payloads small.
var tinyModel = domain.EmbeddingModel{Name: "tiny-embed", Dimensions: 4}

func newTestProvider(t *testing.T, fs *fakeServer, edit func(*Options)) *Provider {
	t.Helper()
	opts := Options{
		BaseURL:      fs.baseURL(),
		APIKey:       "sk-test",
		Organization: "org-test",
		ExtraModels:  []domain.EmbeddingModel{tinyModel},
		MaxAttempts:  3,
		BackoffBase:  time.Millisecond,
		BackoffMax:   5 * time.Millisecond,
	}
	if edit != nil {
		edit(&opts)
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkVectors asserts vector i belongs to input "t-i" and is unit length.
func checkVectors(t *testing.T, vecs [][]float32, dims int) {
	t.Helper()
	for i, v := range vecs {
		if len(v) != dims {
			t.Fatalf("vector %d has %d dims, want %d", i, len(v), dims)
		}
		if got := math.Round(float64(v[0] / v[1])); got != float64(i) {
			t.Fatalf("vector %d belongs to input %v", i, got)
		}
		var sum float64
		for _, x := range v {
			sum += float64(x) * float64(x)
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Fatalf("vector %d has squared norm %v", i, sum)
		}
	}
}

func TestEmbedRestoresInputOrderFromIndex(t *testing.T) {
	fs := newFakeServer(t)
	fs.shuffle = true
	p := newTestProvider(t, fs, nil)
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: texts(50)})
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, res.Vectors, 4)
	if res.Model != "tiny-embed" || res.Dimensions != 4 || res.TokensUsed != 100 {
		t.Errorf("result model %q dims %d tokens %d", res.Model, res.Dimensions, res.TokensUsed)
	}
	h := fs.recorded()[0].header
	if h.Get("Authorization") != "Bearer sk-test" || h.Get("OpenAI-Organization") != "org-test" {
		t.Errorf("headers %v", h)
	}
}

func TestEmbedSplitsBatchesAndSumsUsage(t *testing.T) {
	fs := newFakeServer(t)
	fs.shuffle = true
	p := newTestProvider(t, fs, nil)
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: texts(5000)})
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, res.Vectors, 4)
	var sizes []int
	for _, r := range fs.recorded() {
		sizes = append(sizes, len(r.inputs))
	}
	if !slices.Equal(sizes, []int{2048, 2048, 904}) {
		t.Errorf("request sizes %v", sizes)
	}
	if res.TokensUsed != 10000 {
		t.Errorf("TokensUsed = %d, want 10000 (sum of the three usages)", res.TokensUsed)
	}
}

func TestEmbedDimensions(t *testing.T) {
	tests := []struct {
		name         string
		model        string
		dims         int
		wantErrField string
		wantSent     int // dimensions in the request body; 0 = absent
		wantDims     int
	}{
		{"3-small reduced", ModelTextEmbedding3Small, 256, "", 256, 256},
		{"3-large reduced", ModelTextEmbedding3Large, 1024, "", 1024, 1024},
		{"3-small native", ModelTextEmbedding3Small, 0, "", 0, 1536},
		{"ada-002 native named", ModelTextEmbeddingAda002, 1536, "", 0, 1536},
		{"ada-002 reduced is invalid", ModelTextEmbeddingAda002, 256, "dimensions", 0, 0},
		{"above native is invalid", ModelTextEmbedding3Small, 2048, "dimensions", 0, 0},
		{"negative is invalid", ModelTextEmbedding3Small, -1, "dimensions", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t)
			p := newTestProvider(t, fs, nil)
			res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: tt.model, Texts: texts(3), Dimensions: tt.dims})
			reqs := fs.recorded()
			if tt.wantErrField != "" {
				e, ok := domain.AsError(err)
				if !ok || e.Kind != domain.KindInvalid || e.Details["field"] != tt.wantErrField {
					t.Fatalf("err = %v, want invalid %s", err, tt.wantErrField)
				}
				if len(reqs) != 0 {
					t.Errorf("sent %d requests for an invalid request", len(reqs))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkVectors(t, res.Vectors, tt.wantDims)
			_, present := reqs[0].body["dimensions"]
			if reqs[0].dimensions != tt.wantSent || present != (tt.wantSent != 0) {
				t.Errorf("body dimensions = %v (present %v), want %d", reqs[0].body["dimensions"], present, tt.wantSent)
			}
			if res.Dimensions != tt.wantDims || res.Model != tt.model {
				t.Errorf("result dims %d model %s", res.Dimensions, res.Model)
			}
		})
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	fs := newFakeServer(t)
	fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
		if i == 0 {
			w.Header().Set("Retry-After", "1")
			writeAPIError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "slow down")
			return true
		}
		return false
	}
	p := newTestProvider(t, fs, nil) // backoff alone would wait ~1ms
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: texts(2)})
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, res.Vectors, 4)
	reqs := fs.recorded()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if gap := reqs[1].at.Sub(reqs[0].at); gap < time.Second || gap > 3*time.Second {
		t.Errorf("retried after %v, want about the 1s of Retry-After", gap)
	}
}

func TestRetryAfterMillisecondsHeader(t *testing.T) {
	fs := newFakeServer(t)
	fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
		if i == 0 {
			w.Header().Set("Retry-After-Ms", "150")
			writeAPIError(w, http.StatusServiceUnavailable, "server_error", "", "busy")
			return true
		}
		return false
	}
	p := newTestProvider(t, fs, nil)
	if _, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: texts(1)}); err != nil {
		t.Fatal(err)
	}
	reqs := fs.recorded()
	if gap := reqs[1].at.Sub(reqs[0].at); gap < 150*time.Millisecond {
		t.Errorf("retried after %v, want >= 150ms", gap)
	}
}

func TestRetryOnServerErrorThenSuccess(t *testing.T) {
	fs := newFakeServer(t)
	fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
		if i == 0 {
			http.Error(w, "upstream exploded", http.StatusInternalServerError) // not even JSON
			return true
		}
		return false
	}
	p := newTestProvider(t, fs, nil)
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: texts(3)})
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, res.Vectors, 4)
	if n := len(fs.recorded()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestPermanentErrorsAreNotRetried(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		typ      string
		code     string
		wantKind domain.Kind
		wantCode string
	}{
		{"401 bad key", http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
			domain.KindProviderUnavailable, "provider_auth_failed"},
		{"400 bad input", http.StatusBadRequest, "invalid_request_error", "",
			domain.KindInvalid, "provider_rejected_input"},
		{"404 unknown model", http.StatusNotFound, "invalid_request_error", "model_not_found",
			domain.KindProviderUnavailable, "provider_model_not_found"},
		{"429 quota exhausted", http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota",
			domain.KindProviderUnavailable, "provider_quota_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t)
			fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
				writeAPIError(w, tt.status, tt.typ, tt.code, "Incorrect API key provided: sk-te**st")
				return true
			}
			p := newTestProvider(t, fs, nil)
			_, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: texts(1)})
			e, ok := domain.AsError(err)
			if !ok || e.Kind != tt.wantKind || e.PublicCode() != tt.wantCode {
				t.Fatalf("err = %v, want %s/%s", err, tt.wantKind, tt.wantCode)
			}
			if n := len(fs.recorded()); n != 1 {
				t.Errorf("%d requests, want 1 (no retry)", n)
			}
			if tt.status == http.StatusUnauthorized && strings.Contains(e.Message, "sk-") {
				t.Errorf("message leaks the provider's key echo: %s", e.Message)
			}
		})
	}
}

func TestRetriesExhausted(t *testing.T) {
	fs := newFakeServer(t)
	fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
		writeAPIError(w, http.StatusServiceUnavailable, "server_error", "", "overloaded")
		return true
	}
	p := newTestProvider(t, fs, nil)
	_, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: texts(1)})
	e, ok := domain.AsError(err)
	if !ok || e.Kind != domain.KindProviderUnavailable || e.Details["attempts"] != 3 || e.Details["provider_status"] != 503 {
		t.Fatalf("err = %v (details %v)", err, e.Details)
	}
	if n := len(fs.recorded()); n != 3 {
		t.Errorf("%d requests, want MaxAttempts = 3", n)
	}
}

func TestRetryAfterBeyondLimitFailsFast(t *testing.T) {
	fs := newFakeServer(t)
	fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Retry-After", "3600")
		writeAPIError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "slow down")
		return true
	}
	p := newTestProvider(t, fs, func(o *Options) { o.MaxRetryAfter = time.Minute })
	start := time.Now()
	_, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: texts(1)})
	e, ok := domain.AsError(err)
	if !ok || e.Kind != domain.KindProviderUnavailable || e.Details["retry_after_seconds"] != 3600 {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("waited %v before giving up", time.Since(start))
	}
}

func TestConnectionErrorsAreRetried(t *testing.T) {
	fs := newFakeServer(t)
	fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
		if i < 2 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // drop the connection without a response
			}
			return true
		}
		return false
	}
	p := newTestProvider(t, fs, nil)
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: texts(2)})
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, res.Vectors, 4)
	if n := len(fs.recorded()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestUnreachableServerIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens here any more: connection refused
	p, err := New(Options{BaseURL: "http://" + addr + "/v1", APIKey: "k", MaxAttempts: 2, BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Embed(context.Background(), domain.EmbedRequest{Model: ModelTextEmbedding3Small, Texts: texts(1)})
	e, ok := domain.AsError(err)
	if !ok || e.Kind != domain.KindProviderUnavailable || e.Details["attempts"] != 2 {
		t.Fatalf("err = %v", err)
	}
}

func TestContextCancellation(t *testing.T) {
	t.Run("during a request", func(t *testing.T) {
		fs := newFakeServer(t)
		fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
			<-r.Context().Done() // hang until the client goes away
			return true
		}
		p := newTestProvider(t, fs, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := p.Embed(ctx, domain.EmbedRequest{Model: "tiny-embed", Texts: texts(1)})
		if !errors.Is(err, context.DeadlineExceeded) || domain.ErrorKind(err) != domain.KindProviderUnavailable {
			t.Fatalf("err = %v", err)
		}
		if time.Since(start) > 2*time.Second {
			t.Errorf("took %v", time.Since(start))
		}
	})
	t.Run("while waiting to retry", func(t *testing.T) {
		fs := newFakeServer(t)
		fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Retry-After", "30")
			writeAPIError(w, http.StatusTooManyRequests, "requests", "", "slow down")
			return true
		}
		p := newTestProvider(t, fs, nil)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := p.Embed(ctx, domain.EmbedRequest{Model: "tiny-embed", Texts: texts(1)})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		if time.Since(start) > 2*time.Second {
			t.Errorf("took %v", time.Since(start))
		}
	})
	t.Run("deadline before the next retry", func(t *testing.T) {
		fs := newFakeServer(t)
		fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Retry-After", "30")
			writeAPIError(w, http.StatusTooManyRequests, "requests", "", "slow down")
			return true
		}
		p := newTestProvider(t, fs, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := p.Embed(ctx, domain.EmbedRequest{Model: "tiny-embed", Texts: texts(1)})
		if domain.ErrorKind(err) != domain.KindProviderUnavailable || time.Since(start) > time.Second {
			t.Fatalf("err = %v after %v", err, time.Since(start))
		}
	})
}

func TestUnusableResponses(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"too few embeddings", `{"data":[{"embedding":[1,0,0,0],"index":0}],"usage":{}}`},
		{"index twice", `{"data":[{"embedding":[1,0,0,0],"index":0},{"embedding":[1,0,0,0],"index":0}]}`},
		{"index out of range", `{"data":[{"embedding":[1,0,0,0],"index":0},{"embedding":[1,0,0,0],"index":2}]}`},
		{"wrong dimensions", `{"data":[{"embedding":[1,0,0],"index":0},{"embedding":[1,0,0],"index":1}]}`},
		{"zero vector", `{"data":[{"embedding":[0,0,0,0],"index":0},{"embedding":[1,0,0,0],"index":1}]}`},
		{"not JSON", `<html>gateway</html>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t)
			fs.script = func(i int, w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(tt.body))
				return true
			}
			p := newTestProvider(t, fs, nil)
			_, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: texts(2)})
			if domain.ErrorKind(err) != domain.KindProviderUnavailable {
				t.Fatalf("err = %v", err)
			}
			if n := len(fs.recorded()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

func TestModelsAndRouting(t *testing.T) {
	fs := newFakeServer(t)
	p := newTestProvider(t, fs, nil)
	var names []string
	for _, m := range p.Models() {
		names = append(names, m.Name)
		if m.Provider != "openai" {
			t.Errorf("%s provider %q", m.Name, m.Provider)
		}
	}
	if !slices.Equal(names, []string{ModelTextEmbedding3Small, ModelTextEmbedding3Large, ModelTextEmbeddingAda002, "tiny-embed"}) {
		t.Errorf("models %v", names)
	}
	only := newTestProvider(t, fs, func(o *Options) { o.OnlyExtraModels = true })
	_, err := only.Embed(context.Background(), domain.EmbedRequest{Model: ModelTextEmbedding3Small, Texts: texts(1)})
	e, ok := domain.AsError(err)
	if !ok || e.PublicCode() != "model_not_available" || !slices.Equal(e.Details["available_models"].([]string), []string{"tiny-embed"}) {
		t.Fatalf("err = %v", err)
	}
	_, err = p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-embed", Texts: []string{"t-0", ""}})
	if e, ok := domain.AsError(err); !ok || e.Kind != domain.KindInvalid || e.Details["index"] != 1 {
		t.Fatalf("empty text: err = %v", err)
	}
	if len(fs.recorded()) != 0 {
		t.Errorf("invalid requests reached the server")
	}
}

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"key over plain http to a remote host", Options{BaseURL: "http://embed.example.com/v1", APIKey: "k"}, "refusing to send the API key"},
		{"not a URL", Options{BaseURL: "ftp://x"}, "not an http(s) URL"},
		{"extra model without dimensions", Options{ExtraModels: []domain.EmbeddingModel{{Name: "x"}}}, "positive dimensions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
	for _, ok := range []Options{
		{BaseURL: "http://localhost:11434/v1", APIKey: "k"},
		{BaseURL: "http://[::1]:8000/v1", APIKey: "k"},
		{BaseURL: "http://ollama.lan:11434/v1"}, // no key, nothing to leak
		{BaseURL: "http://vllm:8000/v1", APIKey: "k", AllowInsecureHTTP: true},
		{},
	} {
		if _, err := New(ok); err != nil {
			t.Errorf("New(%+v): %v", ok, err)
		}
	}
}
