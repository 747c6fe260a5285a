package openai

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
)

// failure is what one failed attempt tells the retry loop.
type failure struct {
	err       error
	status    int    // HTTP status; 0 for transport errors
	code      string // provider error code, e.g. "insufficient_quota"
	message   string // provider error message
	retryable bool
}

// classify decides whether an attempt's error is worth retrying: rate limits
// (except an exhausted quota, which waiting does not fix), server errors,
// timeouts and broken connections are; everything else is permanent.
func classify(err error, meta *attemptMeta) failure {
	f := failure{err: err, status: meta.status}
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	switch {
	case errors.As(err, &apiErr):
		f.status = apiErr.HTTPStatusCode
		f.message = apiErr.Message
		if code, ok := apiErr.Code.(string); ok {
			f.code = code
		}
		if f.code == "" {
			f.code = apiErr.Type
		}
	case errors.As(err, &reqErr):
		f.status = reqErr.HTTPStatusCode
	}
	switch {
	case f.status == http.StatusTooManyRequests:
		f.retryable = f.code != "insufficient_quota"
	case f.status == http.StatusRequestTimeout || f.status == http.StatusConflict || f.status >= 500:
		f.retryable = true
	case f.status == 0:
		f.retryable = isTransportError(err)
	}
	return f
}

// isTransportError reports connection-level failures (refused, reset, cut
// off mid-body, timed out) as opposed to, say, an undecodable 200 response.
func isTransportError(err error) bool {
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// backoff returns the wait before retry number n (1-based): base·2^(n-1)
// capped at max, with "equal jitter" (a random point in the upper half) so
// that clients that failed together do not retry together.
func backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	half := d / 2
	return half + rand.N(half+1)
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
