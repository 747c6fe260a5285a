package openai

import (
	"context"
	"net/http"
	"strconv"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
)

// attemptMeta receives what go-openai does not expose on errors: the
// response status and Retry-After of one attempt. Each attempt puts a fresh
// one in its request context, so concurrent requests never share it.
type attemptMeta struct {
	status     int
	retryAfter time.Duration // 0: none given
}

type attemptMetaKey struct{}

func withAttemptMeta(ctx context.Context) (context.Context, *attemptMeta) {
	m := &attemptMeta{}
	return context.WithValue(ctx, attemptMetaKey{}, m), m
}

// capturingDoer wraps the HTTP client that go-openai uses and records the
// response metadata into the request's attemptMeta.
type capturingDoer struct{ next goopenai.HTTPDoer }

func (d capturingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.next.Do(req)
	if resp != nil {
		if m, ok := req.Context().Value(attemptMetaKey{}).(*attemptMeta); ok {
			m.status = resp.StatusCode
			m.retryAfter = parseRetryAfter(resp.Header, time.Now())
		}
	}
	return resp, err
}

// parseRetryAfter reads Retry-After as delta-seconds or an HTTP date
// (RFC 9110 §10.2.3), and the millisecond variant retry-after-ms that Azure
// OpenAI sends. Unparseable or past values give 0.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if n, err := strconv.ParseFloat(ms, 64); err == nil && n > 0 {
			return time.Duration(n * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
