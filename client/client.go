package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultBaseURL is the server's default address (decisions §2).
const DefaultBaseURL = "http://127.0.0.1:8080/v1"

// Client calls one Engram server with one credential. It is safe for
// concurrent use.
type Client struct {
	base      *url.URL // ends without "/"
	baseErr   error    // a bad base URL fails every call, not New
	apiKey    string
	http      *http.Client
	userAgent string
	source    string // Engram-Source; "" sends none
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (timeouts, transport, connection
// pool). The client is copied so that its redirect policy can be held to
// the secrets rule; the original is not changed.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		cp := *hc
		c.http = &cp
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the API at baseURL (e.g. DefaultBaseURL; the
// /v1 is part of it) that authenticates with apiKey, which may also be a
// session token from Login, or empty for Register, Verify and Login.
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{apiKey: apiKey, userAgent: "engram-go-client"}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: 60 * time.Second}
	}
	c.http.CheckRedirect = secureRedirects(c.http.CheckRedirect)
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	switch {
	case err != nil:
		c.baseErr = fmt.Errorf("client: base URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		c.baseErr = fmt.Errorf("client: base URL %q must be http(s)://host[:port]/...", baseURL)
	}
	c.base = u
	return c
}

// WithAPIKey returns a copy of c that sends key instead, e.g. the session
// token from Login or a freshly created or cycled key.
func (c *Client) WithAPIKey(key string) *Client {
	cp := *c
	cp.apiKey = key
	return &cp
}

// BaseURL is the API base URL the client calls ("" if it did not parse).
func (c *Client) BaseURL() string {
	if c.base == nil {
		return ""
	}
	return c.base.String()
}

// SecureBaseURL reports whether secrets may be sent to the API at
// baseURL: https, or http to a loopback host
// (docs/decisions.md#secrets-in-transit). Only the literal name "localhost"
// and loopback IPs count as loopback: localhost.evil.example does not.
func SecureBaseURL(baseURL string) bool {
	u, err := url.Parse(baseURL)
	return err == nil && u.Host != "" && secureURL(u)
}

// secureURL reports whether secrets may travel to u: https, or http to a
// loopback host. Names other than "localhost" are not resolved, because
// what a name resolves to can change between the check and the dial.
func secureURL(u *url.URL) bool {
	if u.Scheme == "https" {
		return true
	}
	if u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// secureRedirects follows a redirect only to a secure URL, because a 307
// or 308 resends the body, and login and verify carry secrets there.
func secureRedirects(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if !secureURL(req.URL) {
			return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), ErrInsecureURL)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("client: stopped after 10 redirects")
		}
		return nil
	}
}

// auth says what a call carries.
type auth int

const (
	noSecret   auth = iota // register: nothing secret either way
	bodySecret             // verify, login: a secret in the body, no header
	bearer                 // everything else: Authorization: Bearer <key>
)

// call sends in as JSON (nil: no body) to path (escaped, with a leading
// "/") under the base URL and decodes the success envelope's data into
// out (nil: discard).
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any, a auth) error {
	return c.callWithHeader(ctx, method, path, query, nil, in, out, a)
}

// callWithHeader is call with extra request headers (e.g. If-Match).
func (c *Client) callWithHeader(ctx context.Context, method, path string, query url.Values, header http.Header, in, out any, a auth) error {
	resp, err := c.send(ctx, method, path, query, header, in, a)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp)
	}
	recordToken(ctx, resp.Header.Get(consistencyTokenHeader))
	// Decoding straight into out through the envelope avoids a second
	// pass over large bodies (embedding batches).
	env := struct {
		Success *bool `json:"success"`
		Data    any   `json:"data"`
	}{Data: out}
	if out == nil {
		env.Data = new(json.RawMessage)
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("client: %s %s: decode response (status %d): %w", method, path, resp.StatusCode, err)
	}
	if env.Success == nil || !*env.Success {
		return fmt.Errorf("client: %s %s: status %d without a success envelope", method, path, resp.StatusCode)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // let the connection be reused
	return nil
}

// send builds and sends one request; the caller closes the body.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, header http.Header, in any, a auth) (*http.Response, error) {
	if c.baseErr != nil {
		return nil, c.baseErr
	}
	if a != noSecret && !secureURL(c.base) {
		return nil, ErrInsecureURL
	}
	// path is already escaped (pathID), so it is joined as text.
	target := c.base.String() + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var body io.Reader
	raw, isRaw := in.(rawBody)
	if isRaw {
		body = raw.reader()
	} else if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("client: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", c.userAgent)
	if c.source != "" {
		req.Header.Set(sourceHeader, c.source)
	}
	switch {
	case isRaw:
		req.Header.Set("Content-Type", raw.contentType)
	case in != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	if a == bearer {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	return resp, nil
}

// decodeError turns a failure response into *Error.
func decodeError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &Error{
		Status:           resp.StatusCode,
		RequestID:        resp.Header.Get("X-Request-Id"),
		RetryAfter:       parseRetryAfter(resp.Header.Get("Retry-After")),
		ConsistencyToken: resp.Header.Get(consistencyTokenHeader),
	}
	var env struct {
		Success bool `json:"success"`
		Error   *struct {
			Code      string         `json:"code"`
			Message   string         `json:"message"`
			RequestID string         `json:"request_id"`
			Details   map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error != nil && env.Error.Code != "" {
		e.Code, e.Message, e.Details = env.Error.Code, env.Error.Message, env.Error.Details
		if env.Error.RequestID != "" {
			e.RequestID = env.Error.RequestID
		}
		return e
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e.Message = msg
	return e
}

// pathID escapes one path segment.
func pathID(id string) string { return url.PathEscape(id) }
