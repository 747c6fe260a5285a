package openai

import (
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Options configures the provider. Zero values take the defaults below.
type Options struct {
	// BaseURL of an OpenAI-compatible API, up to and including the version
	// ("https://api.openai.com/v1", "http://localhost:11434/v1").
	BaseURL      string
	APIKey       string
	Organization string
	// HTTPClient sends the requests; its Timeout bounds each attempt.
	HTTPClient *http.Client
	// ExtraModels are served in addition to OpenAI's own (or instead of them,
	// with OnlyExtraModels), for compatible servers whose model names differ:
	// Ollama, vLLM, another Engram. An extra model named like a known one
	// replaces it.
	ExtraModels     []domain.EmbeddingModel
	OnlyExtraModels bool
	// AllowInsecureHTTP permits sending APIKey over plain http to a host
	// that is not loopback; by default that is refused.
	AllowInsecureHTTP bool

	// MaxAttempts bounds tries per request (first try included).
	MaxAttempts int
	// BackoffBase is the wait before the first retry; it doubles per retry,
	// up to BackoffMax, with jitter.
	BackoffBase, BackoffMax time.Duration
	// MaxRetryAfter is the longest Retry-After the provider honours; a longer
	// one fails the request at once rather than holding it.
	MaxRetryAfter time.Duration
	// MaxInputsPerRequest and MaxTokensPerRequest split large batches.
	// Tokens are estimated conservatively from text length.
	MaxInputsPerRequest int
	MaxTokensPerRequest int
}

// Defaults.
const (
	DefaultBaseURL             = "https://api.openai.com/v1"
	DefaultMaxAttempts         = 5
	DefaultBackoffBase         = 500 * time.Millisecond
	DefaultBackoffMax          = 20 * time.Second
	DefaultMaxRetryAfter       = 60 * time.Second
	DefaultMaxInputsPerRequest = 2048    // OpenAI's limit on inputs per request
	DefaultMaxTokensPerRequest = 250_000 // under OpenAI's 300k tokens per request
	defaultRequestTimeout      = 60 * time.Second
)

func (o Options) withDefaults() Options {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: defaultRequestTimeout}
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = DefaultBackoffBase
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = DefaultBackoffMax
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if o.MaxInputsPerRequest <= 0 {
		o.MaxInputsPerRequest = DefaultMaxInputsPerRequest
	}
	if o.MaxTokensPerRequest <= 0 {
		o.MaxTokensPerRequest = DefaultMaxTokensPerRequest
	}
	return o
}

// validate checks the base URL and refuses to send a key in clear text over
// a network (docs/decisions.md#secrets-in-transit: only over https or to loopback).
func (o Options) validate() error {
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return domain.Invalid("base_url", "embedding base URL %q is not an http(s) URL", o.BaseURL)
	}
	if o.APIKey != "" && u.Scheme == "http" && !o.AllowInsecureHTTP && !isLoopback(u.Hostname()) {
		return domain.Invalid("base_url",
			"refusing to send the API key over plain http to %s; use https or a loopback address", u.Host)
	}
	for i, m := range o.ExtraModels {
		if m.Name == "" || m.Dimensions <= 0 {
			return domain.Invalid("extra_models", "extra model %d needs a name and positive dimensions", i)
		}
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
