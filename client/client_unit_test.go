package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/client"
)

// roundTripFunc fakes the network so that non-loopback URLs can be tested
// without touching it.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func jsonResponse(status int, body string, header http.Header) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	header.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(strings.NewReader(body))}
}

func TestSecretsNeverSentToPlainHTTPRemote(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	fake := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		sent = append(sent, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization"))
		mu.Unlock()
		return jsonResponse(200, `{"success":true,"data":{"user_id":"u1","message":"sent"}}`, nil), nil
	})}
	ctx := context.Background()
	c := client.New("http://memory.example.com/v1", "eng_secret", client.WithHTTPClient(fake))

	// Register carries no secret either way, so plain http is allowed.
	if _, err := c.Register(ctx, "a@example.com"); err != nil {
		t.Fatalf("register: %v", err)
	}
	calls := map[string]func() error{
		"verify": func() error { _, err := c.Verify(ctx, "tok"); return err },
		"login":  func() error { _, err := c.Login(ctx, "eng_secret"); return err },
		"status": func() error { _, err := c.Status(ctx); return err },
		"search": func() error { _, err := c.Search(ctx, client.SearchRequest{AgentID: "a", Query: "q"}); return err },
		"batch": func() error {
			_, err := c.CreateMemories(ctx, client.BatchRequest{AgentID: "a"})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, client.ErrInsecureURL) {
			t.Errorf("%s over plain http to a remote host: err = %v, want ErrInsecureURL", name, err)
		}
	}
	if len(sent) != 1 || strings.Contains(sent[0], "eng_secret") {
		t.Fatalf("sent %q, want only the register call without a credential", sent)
	}

	// The same calls over https go out, with the credential.
	sent = nil
	c = client.New("https://memory.example.com/v1", "eng_secret", client.WithHTTPClient(fake))
	if _, err := c.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || sent[0] != "GET /v1/auth/status auth=Bearer eng_secret" {
		t.Fatalf("sent %q", sent)
	}
}

func TestRedirectToInsecureHostIsRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://memory.example.com/v1/auth/login", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	_, err := client.New(srv.URL+"/v1", "").Login(context.Background(), "eng_secret")
	if !errors.Is(err, client.ErrInsecureURL) {
		t.Fatalf("err = %v, want ErrInsecureURL", err)
	}
}

func TestErrorDecoding(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		header http.Header
		want   client.Error
	}{
		{
			name:   "envelope with details",
			status: 400,
			body:   `{"success":false,"error":{"code":"invalid_request","message":"field \"query\" is required","request_id":"req_1","details":{"field":"query"}}}`,
			want:   client.Error{Status: 400, Code: "invalid_request", Message: `field "query" is required`, RequestID: "req_1", Details: map[string]any{"field": "query"}},
		},
		{
			name:   "rate limited",
			status: 429,
			body:   `{"success":false,"error":{"code":"rate_limited","message":"slow down","request_id":"req_2"}}`,
			header: http.Header{"Retry-After": {"3"}},
			want:   client.Error{Status: 429, Code: "rate_limited", Message: "slow down", RequestID: "req_2", RetryAfter: 3 * time.Second},
		},
		{
			name:   "not json",
			status: 502,
			body:   "<html>bad gateway</html>",
			header: http.Header{"X-Request-Id": {"req_proxy"}},
			want:   client.Error{Status: 502, Message: "<html>bad gateway</html>", RequestID: "req_proxy"},
		},
		{
			name:   "empty body",
			status: 503,
			want:   client.Error{Status: 503, Message: "Service Unavailable"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
				return jsonResponse(tc.status, tc.body, tc.header.Clone()), nil
			})}
			_, err := client.New("http://127.0.0.1:1/v1", "k", client.WithHTTPClient(fake)).Status(context.Background())
			var got *client.Error
			if !errors.As(err, &got) {
				t.Fatalf("err = %v (%T), want *client.Error", err, err)
			}
			if fmt.Sprint(*got) != fmt.Sprint(tc.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tc.want)
			}
			if !client.IsStatus(err, tc.status) || (tc.want.Code != "" && !client.IsCode(err, tc.want.Code)) {
				t.Fatal("IsStatus/IsCode disagree with the error")
			}
		})
	}
}

func TestBadBaseURL(t *testing.T) {
	for _, base := range []string{"127.0.0.1:8080", "ftp://x/v1", "://"} {
		c := client.New(base, "k")
		if _, err := c.Status(context.Background()); err == nil {
			t.Errorf("base %q: no error", base)
		}
		_ = c.BaseURL() // must not panic
	}
	if got := client.New("http://127.0.0.1:8080/v1/", "").BaseURL(); got != "http://127.0.0.1:8080/v1" {
		t.Errorf("BaseURL %q", got)
	}
}

func TestPathSegmentsAreEscaped(t *testing.T) {
	var got string
	fake := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.URL.EscapedPath()
		return jsonResponse(200, `{"success":true,"data":{}}`, nil), nil
	})}
	_, _ = client.New("http://127.0.0.1:1/v1", "k", client.WithHTTPClient(fake)).GetMemory(context.Background(), "a/b?c")
	if got != "/v1/memories/a%2Fb%3Fc" {
		t.Fatalf("path %q", got)
	}
}
