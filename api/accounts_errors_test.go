package api_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/domain/account"
)

// assertFailure checks the failure envelope: exactly success=false and an
// error with code, message and request_id (details only when the case names
// a field), and the X-Request-Id header matching request_id.
func assertFailure(t *testing.T, r response, status int, code, field string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if len(r.body) != 2 || r.body["success"] != false {
		t.Fatalf("envelope %s", r.raw)
	}
	e, ok := r.body["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object: %s", r.raw)
	}
	if e["code"] != code {
		t.Errorf("code %v, want %s: %s", e["code"], code, r.raw)
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Errorf("no message: %s", r.raw)
	}
	rid, _ := e["request_id"].(string)
	if rid == "" || r.header.Get("X-Request-Id") != rid {
		t.Errorf("request_id %q, header %q", rid, r.header.Get("X-Request-Id"))
	}
	if field != "" {
		details, _ := e["details"].(map[string]any)
		if details["field"] != field {
			t.Errorf("details %v, want field %s", e["details"], field)
		}
	}
}

func TestAccountErrors(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{maxBody: 4096})
	_, alice := s.signUp("alice@example.com")
	_, spare := s.createKey(alice, "spare")
	revokedID, revoked := s.createKey(alice, "to revoke")
	expect(t, s.call("DELETE", "/v1/auth/keys/"+revokedID, alice, nil), http.StatusOK)
	_, bob := s.signUp("bob@example.com")
	bobKeyID := mustKeyID(t, s, bob, "default")

	// A token that has been used.
	expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": "used@example.com"}), http.StatusOK)
	usedToken := s.latestToken("used@example.com")
	expect(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": usedToken}), http.StatusOK)
	unknownToken, _ := account.NewVerificationToken()
	unknownKey, _ := account.NewAPIKey()
	unknownSession, _ := account.NewSessionToken()

	tests := []struct {
		name   string
		method string
		path   string
		bearer string
		body   any
		status int
		code   string
		field  string
	}{
		{"register: malformed JSON", "POST", "/v1/auth/register", "", `{"email":`, 400, "invalid_request", ""},
		{"register: not an object", "POST", "/v1/auth/register", "", `["a@b.com"]`, 400, "invalid_request", ""},
		{"register: empty body", "POST", "/v1/auth/register", "", ``, 400, "invalid_request", ""},
		{"register: two objects", "POST", "/v1/auth/register", "", `{"email":"x@y.com"}{}`, 400, "invalid_request", ""},
		{"register: unknown field", "POST", "/v1/auth/register", "", `{"email":"x@example.com","mail":"y"}`, 400, "invalid_request", "mail"},
		{"register: missing field", "POST", "/v1/auth/register", "", `{}`, 400, "invalid_request", "email"},
		{"register: null", "POST", "/v1/auth/register", "", `{"email":null}`, 400, "invalid_request", "email"},
		{"register: wrong type", "POST", "/v1/auth/register", "", `{"email":42}`, 400, "invalid_request", "email"},
		{"register: bad e-mail", "POST", "/v1/auth/register", "", `{"email":"not-an-address"}`, 400, "invalid_request", "email"},
		{"register: display name", "POST", "/v1/auth/register", "", `{"email":"Eve <eve@example.com>"}`, 400, "invalid_request", "email"},
		{"register: no dot in domain", "POST", "/v1/auth/register", "", `{"email":"eve@localhost"}`, 400, "invalid_request", "email"},
		{"register: too long", "POST", "/v1/auth/register", "", `{"email":"` + strings.Repeat("e", 250) + `@example.com"}`, 400, "invalid_request", "email"},
		{"register: verified address", "POST", "/v1/auth/register", "", `{"email":"ALICE@example.com"}`, 409, "email_already_registered", ""},
		{"verify: missing token", "POST", "/v1/auth/verify", "", `{}`, 400, "invalid_request", "token"},
		{"verify: wrong type", "POST", "/v1/auth/verify", "", `{"token":["x"]}`, 400, "invalid_request", "token"},
		{"verify: malformed token", "POST", "/v1/auth/verify", "", `{"token":"abc"}`, 400, "invalid_request", "token"},
		{"verify: unknown token", "POST", "/v1/auth/verify", "", map[string]string{"token": unknownToken.Plain}, 400, "invalid_request", "token"},
		{"verify: used token", "POST", "/v1/auth/verify", "", map[string]string{"token": usedToken}, 410, "token_used", ""},
		{"login: missing key", "POST", "/v1/auth/login", "", `{}`, 400, "invalid_request", "api_key"},
		{"login: wrong type", "POST", "/v1/auth/login", "", `{"api_key":true}`, 400, "invalid_request", "api_key"},
		{"login: garbage key", "POST", "/v1/auth/login", "", `{"api_key":"hunter2"}`, 401, "unauthorized", ""},
		{"login: unknown key", "POST", "/v1/auth/login", "", map[string]string{"api_key": unknownKey.Plain}, 401, "unauthorized", ""},
		{"login: revoked key", "POST", "/v1/auth/login", "", map[string]string{"api_key": revoked}, 401, "unauthorized", ""},
		{"login: session token instead of key", "POST", "/v1/auth/login", "", map[string]string{"api_key": unknownSession.Plain}, 401, "unauthorized", ""},
		{"status: no credential", "GET", "/v1/auth/status", "", nil, 401, "unauthorized", ""},
		{"status: unknown key", "GET", "/v1/auth/status", unknownKey.Plain, nil, 401, "unauthorized", ""},
		{"status: unknown session", "GET", "/v1/auth/status", unknownSession.Plain, nil, 401, "unauthorized", ""},
		{"status: garbage credential", "GET", "/v1/auth/status", "letmein", nil, 401, "unauthorized", ""},
		{"status: revoked key", "GET", "/v1/auth/status", revoked, nil, 401, "unauthorized", ""},
		{"keys: revoked key", "GET", "/v1/auth/keys", revoked, nil, 401, "unauthorized", ""},
		{"create key: no credential", "POST", "/v1/auth/keys", "", `{"name":"x"}`, 401, "unauthorized", ""},
		{"create key: missing name", "POST", "/v1/auth/keys", alice, `{}`, 400, "invalid_request", "name"},
		{"create key: blank name", "POST", "/v1/auth/keys", alice, `{"name":"   "}`, 400, "invalid_request", "name"},
		{"create key: long name", "POST", "/v1/auth/keys", alice, `{"name":"` + strings.Repeat("n", 101) + `"}`, 400, "invalid_request", "name"},
		{"create key: control character", "POST", "/v1/auth/keys", alice, `{"name":"a\u0007b"}`, 400, "invalid_request", "name"},
		{"create key: wrong type", "POST", "/v1/auth/keys", alice, `{"name":7}`, 400, "invalid_request", "name"},
		{"create key: unknown field", "POST", "/v1/auth/keys", alice, `{"name":"x","scope":"all"}`, 400, "invalid_request", "scope"},
		{"revoke: unknown key id", "DELETE", "/v1/auth/keys/0190d6a4-0000-7000-8000-000000000000", alice, nil, 404, "not_found", ""},
		{"revoke: another user's key", "DELETE", "/v1/auth/keys/" + bobKeyID, alice, nil, 404, "not_found", ""},
		{"revoke: revoked key", "DELETE", "/v1/auth/keys/" + revokedID, alice, nil, 409, "key_already_revoked", ""},
		{"revoke: last active key", "DELETE", "/v1/auth/keys/" + bobKeyID, bob, nil, 409, "last_active_key", ""},
		{"revoke: no credential", "DELETE", "/v1/auth/keys/" + bobKeyID, "", nil, 401, "unauthorized", ""},
		{"cycle: unknown key id", "POST", "/v1/auth/keys/nope/cycle", alice, nil, 404, "not_found", ""},
		{"cycle: another user's key", "POST", "/v1/auth/keys/" + bobKeyID + "/cycle", alice, nil, 404, "not_found", ""},
		{"cycle: revoked key", "POST", "/v1/auth/keys/" + revokedID + "/cycle", alice, nil, 409, "key_already_revoked", ""},
		{"oversize body", "POST", "/v1/auth/register", "", `{"email":"` + strings.Repeat("x", 5000) + `@example.com"}`, 413, "payload_too_large", ""},
		{"unknown endpoint", "GET", "/v1/auth/nothing", alice, nil, 404, "not_found", ""},
		{"wrong method", "PUT", "/v1/auth/keys", alice, `{}`, 405, "method_not_allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.call(tt.method, tt.path, tt.bearer, tt.body)
			assertFailure(t, r, tt.status, tt.code, tt.field)
			if tt.status == 401 && tt.path != "/v1/auth/login" && r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if tt.status == 405 && r.header.Get("Allow") != "GET, POST" {
				t.Errorf("405 with Allow %q, want the path's methods %q", r.header.Get("Allow"), "GET, POST")
			}
		})
	}

	// Requests with a body that is not JSON, or of unknown length.
	raw := func(contentType string, body io.Reader, length int64) response {
		req, _ := http.NewRequest("POST", s.srv.URL+"/v1/auth/register", body)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		req.ContentLength = length
		return s.send(req)
	}
	t.Run("wrong content type", func(t *testing.T) {
		assertFailure(t, raw("text/plain", strings.NewReader(`{"email":"a@example.com"}`), 25), 415, "unsupported_media_type", "")
	})
	t.Run("form content type", func(t *testing.T) {
		assertFailure(t, raw("application/x-www-form-urlencoded", strings.NewReader(`email=a@example.com`), 19), 415, "unsupported_media_type", "")
	})
	t.Run("no content type", func(t *testing.T) {
		assertFailure(t, raw("", strings.NewReader(`{"email":"a@example.com"}`), 25), 415, "unsupported_media_type", "")
	})
	t.Run("oversize chunked body", func(t *testing.T) {
		body := io.MultiReader(strings.NewReader(`{"email":"`), strings.NewReader(strings.Repeat("x", 8000)), strings.NewReader(`@example.com"}`))
		assertFailure(t, raw("application/json", body, -1), 413, "payload_too_large", "")
	})
	t.Run("bearer scheme required", func(t *testing.T) {
		req, _ := http.NewRequest("GET", s.srv.URL+"/v1/auth/status", nil)
		req.Header.Set("Authorization", "Basic "+alice)
		r := s.send(req)
		assertFailure(t, r, 401, "unauthorized", "")
		if !strings.Contains(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
		}
	})
	// The failed attempts changed nothing.
	expect(t, s.call("GET", "/v1/auth/status", spare, nil), http.StatusOK)
	if n := len(s.listKeys(alice)); n != 3 {
		t.Fatalf("alice has %d keys, want 3", n)
	}
	if n := len(s.listKeys(bob)); n != 1 {
		t.Fatalf("bob has %d keys, want 1", n)
	}
}

// TestExpiredVerificationToken: a token is good for 24 hours.
func TestExpiredVerificationToken(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": "late@example.com"}), http.StatusOK)
	token := s.latestToken("late@example.com")
	s.clock.Advance(24*time.Hour + time.Second)
	assertFailure(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": token}), 410, "token_expired", "")
	// Registering again mails a fresh token that works.
	expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": "late@example.com"}), http.StatusOK)
	expect(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": s.latestToken("late@example.com")}), http.StatusOK)
}

// TestShortSessionTTL: the session TTL is configurable.
func TestShortSessionTTL(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessionTTL: time.Minute})
	_, key := s.signUp("brief@example.com")
	login := expect(t, s.call("POST", "/v1/auth/login", "", map[string]string{"api_key": key}), http.StatusOK)
	expires, _ := time.Parse(time.RFC3339, login.str("expires_at"))
	if d := time.Until(expires); d > time.Minute+time.Second || d < 58*time.Second {
		t.Fatalf("session expires in %v, want 1m", d)
	}
	expect(t, s.call("GET", "/v1/auth/status", login.str("token"), nil), http.StatusOK)
	s.clock.Advance(time.Minute)
	assertFailure(t, s.call("GET", "/v1/auth/status", login.str("token"), nil), 401, "unauthorized", "")
}

// TestRateLimits: register/verify/login are limited per client IP, the
// rest per credential; a refusal is 429 with Retry-After and the
// X-RateLimit-* headers.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{
		ipLimit:   api.RateLimit{PerSecond: 0.01, Burst: 3},
		userLimit: api.RateLimit{PerSecond: 0.01, Burst: 3},
	})
	// Per credential: sign up through the library, which costs no IP token.
	if _, err := s.accounts.Register(t.Context(), metaNone(), "ratelimited@example.com"); err != nil {
		t.Fatal(err)
	}
	v, err := s.accounts.Verify(t.Context(), metaNone(), s.latestToken("ratelimited@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		expect(t, s.call("GET", "/v1/auth/status", v.APIKey, nil), http.StatusOK)
	}
	r := s.call("GET", "/v1/auth/status", v.APIKey, nil)
	assertFailure(t, r, 429, "rate_limited", "")
	checkRateHeaders(t, r)

	// Per client IP.
	for i := range 3 {
		r := expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": fmt.Sprintf("ratelimited-%d@example.com", i)}), http.StatusOK)
		if got := r.header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(2-i) {
			t.Errorf("X-RateLimit-Remaining %q after %d requests", got, i+1)
		}
	}
	r = s.call("POST", "/v1/auth/login", "", map[string]string{"api_key": "x"})
	assertFailure(t, r, 429, "rate_limited", "")
	checkRateHeaders(t, r)
}

// TestFailedAuthenticationCostsAnIPToken: a bad bearer credential costs the
// client IP one token of the register/verify/login limit, on every
// authenticated route whatever its error shape; once the IP has none left
// it is refused before its credential is looked at, so a valid key guessed
// then is refused too (the refusal says nothing about the credential).
// Valid credentials cost no IP token, and missing ones are no guess.
func TestFailedAuthenticationCostsAnIPToken(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{ipLimit: api.RateLimit{PerSecond: 0.01, Burst: 4}})
	_, key := s.signUp("victim@example.com") // register + verify: 2 tokens
	for range 5 {
		expect(t, s.call("GET", "/v1/auth/status", key, nil), http.StatusOK)
		assertFailure(t, s.call("GET", "/v1/auth/status", "", nil), 401, "unauthorized", "")
	}
	assertFailure(t, s.call("GET", "/v1/auth/keys", "eng_"+strings.Repeat("x", 40), nil), 401, "unauthorized", "")
	r := s.call("POST", "/v1/embeddings", "not-a-key", map[string]any{"input": "x", "model": "default"})
	if e, _ := r.body["error"].(map[string]any); r.status != 401 || e["code"] != "invalid_api_key" {
		t.Fatalf("OpenAI route, bad key: %d %s", r.status, r.raw)
	}
	// The budget is spent: guesses and the valid key alike are refused.
	for _, bearer := range []string{"eng_" + strings.Repeat("y", 40), key} {
		r := s.call("GET", "/v1/auth/status", bearer, nil)
		assertFailure(t, r, 429, "rate_limited", "")
		if r.header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	r = s.call("POST", "/v1/embeddings", key, map[string]any{"input": "x", "model": "default"})
	if e, _ := r.body["error"].(map[string]any); r.status != 429 || e["code"] != "rate_limit_exceeded" {
		t.Fatalf("OpenAI route, spent budget: %d %s", r.status, r.raw)
	}
	assertFailure(t, s.call("POST", "/v1/auth/login", "", map[string]string{"api_key": key}), 429, "rate_limited", "")
}

// TestVerificationMailThrottle: a verification mail to one address is
// re-sent at most once a minute; sooner is 429 with Retry-After and no
// mail, whoever asks. Other addresses are not affected.
func TestVerificationMailThrottle(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	register := func(addr string) response {
		return s.call("POST", "/v1/auth/register", "", map[string]string{"email": addr})
	}
	expect(t, register("target@example.com"), http.StatusOK)
	for _, addr := range []string{"target@example.com", " TARGET@example.com "} {
		r := register(addr)
		assertFailure(t, r, 429, "rate_limited", "")
		if retry, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || retry < 59 || retry > 60 {
			t.Errorf("Retry-After %q, want about 60", r.header.Get("Retry-After"))
		}
	}
	expect(t, register("bystander@example.com"), http.StatusOK)
	if n := len(s.outboxMails("target@example.com")); n != 1 {
		t.Fatalf("%d mails to the target, want 1", n)
	}
	// The test clock runs on from real time, so leave slack for a slow
	// machine: well inside the minute, then past it by the offset alone.
	s.clock.Advance(50 * time.Second)
	assertFailure(t, register("target@example.com"), 429, "rate_limited", "")
	s.clock.Advance(10 * time.Second)
	expect(t, register("target@example.com"), http.StatusOK)
	if n := len(s.outboxMails("target@example.com")); n != 2 {
		t.Fatalf("%d mails to the target, want 2", n)
	}
	// Either token verifies.
	expect(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": s.latestToken("target@example.com")}), http.StatusOK)
}

func checkRateHeaders(t *testing.T, r response) {
	t.Helper()
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 1 {
		t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if r.header.Get("X-RateLimit-Limit") != "3" || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("X-RateLimit-Limit %q, Remaining %q", r.header.Get("X-RateLimit-Limit"), r.header.Get("X-RateLimit-Remaining"))
	}
	reset, err := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil || reset < time.Now().Unix() {
		t.Errorf("X-RateLimit-Reset %q", r.header.Get("X-RateLimit-Reset"))
	}
}

// TestKeyCreateAtTheLimit: the key past the limit is refused with 409
// key_limit_reached (documented for POST /v1/auth/keys), and revoking one
// makes room again.
func TestKeyCreateAtTheLimit(t *testing.T) {
	t.Parallel()
	const limit = 5 // the server's --max-keys-per-user; the default's 100 is no different
	s := newStack(t, stackOptions{maxKeys: limit})
	_, key := s.user(t, "limit@example.com")
	var last string
	for i := 1; i < limit; i++ { // the first key is "default"
		last, _ = s.createKey(key, fmt.Sprintf("key %d", i))
	}
	r := s.call("POST", "/v1/auth/keys", key, map[string]string{"name": "one too many"})
	assertFailure(t, r, http.StatusConflict, "key_limit_reached", "")
	expect(t, s.call("DELETE", "/v1/auth/keys/"+last, key, nil), http.StatusOK)
	s.createKey(key, "room again")
}
