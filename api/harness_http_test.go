package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// response is a decoded API response.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any // the JSON envelope; nil when the response is not JSON
}

// data is the success envelope's data object.
func (r response) data() map[string]any {
	d, _ := r.body["data"].(map[string]any)
	return d
}

// str is a string field of data.
func (r response) str(key string) string {
	v, _ := r.data()[key].(string)
	return v
}

// errorCode is the failure envelope's code.
func (r response) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// errorMessage is the failure envelope's message.
func (r response) errorMessage() string {
	e, _ := r.body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// details is the failure envelope's details.
func (r response) details() map[string]any {
	e, _ := r.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

// must fails unless the response has status, then decodes data into out
// (when not nil).
func (r response) must(t testing.TB, status int, out any) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if out != nil {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		err := json.Unmarshal(r.raw, &env)
		if err == nil {
			err = json.Unmarshal(env.Data, out)
		}
		if err != nil {
			t.Fatalf("decode data: %v: %s", err, r.raw)
		}
	}
	return r
}

// invalid fails unless the response is 400 naming field.
func (r response) invalid(t testing.TB, field string) response {
	t.Helper()
	if r.status != http.StatusBadRequest || r.errorCode() != "invalid_request" {
		t.Fatalf("status %d code %q, want 400 invalid_request: %s", r.status, r.errorCode(), r.raw)
	}
	if got, _ := r.details()["field"].(string); got != field {
		t.Fatalf("details.field = %q, want %q: %s", got, field, r.raw)
	}
	return r
}

// expect fails the test unless the response has the status.
func expect(t testing.TB, r response, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

// wantError fails unless r is a failure with status and code.
func wantError(t testing.TB, r response, status int, code string) {
	t.Helper()
	if r.status != status || r.errorCode() != code || r.body["success"] != false {
		t.Fatalf("got %d %s, want %d %s: %s", r.status, r.errorCode(), status, code, r.raw)
	}
}

// request sends a JSON request as bearer (empty: none) and decodes the
// envelope, failing t on error: body nil sends none, a string or []byte is
// sent as is, anything else is marshalled.
func (s *stack) request(t testing.TB, method, path, bearer string, body any) response {
	t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	case []byte:
		reader = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return s.sendAs(t, req)
}

// call is request failing the stack's test.
func (s *stack) call(method, path, bearer string, body any) response {
	s.t.Helper()
	return s.request(s.t, method, path, bearer, body)
}

// must sends a request and fails the test unless it answers status.
func (s *stack) must(status int, method, path, bearer string, body any) response {
	s.t.Helper()
	r := s.call(method, path, bearer, body)
	if r.status != status {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.raw)
	}
	return r
}

// send sends req and decodes the response.
func (s *stack) send(req *http.Request) response {
	s.t.Helper()
	return s.sendAs(s.t, req)
}

func (s *stack) sendAs(t testing.TB, req *http.Request) response {
	t.Helper()
	res, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: res.StatusCode, header: res.Header, raw: raw}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		t.Fatalf("%s %s: response is not JSON: %v\n%s", req.Method, req.URL.Path, err, raw)
	}
	return r
}
